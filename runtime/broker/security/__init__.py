"""Security at the broker's edges (Kafka's security and authorizer code): the listeners
and their protocols (`listeners`), SASL mechanisms and SCRAM credentials (`sasl`), the ACL
store and its matching (`acls`), the authorizer the handlers ask (`authorizer`), and the
connection and request-memory limits of the listeners (`limits`, beside the other guards of
what a client may do to the broker).
"""
