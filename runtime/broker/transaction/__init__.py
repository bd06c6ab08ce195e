"""The transaction coordinator (Kafka's transaction-coordinator module): a transactional
id's state and its records in ``__transaction_state`` (`transaction_state`), and the
coordinator that moves ids through their states and writes the markers that end a
transaction on its partitions (`transaction_coordinator`).
"""
