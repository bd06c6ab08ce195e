"""The transaction coordinator (Kafka's transaction-coordinator module): transactional ids,
their producer ids and epochs, their state in ``__transaction_state``, and the markers that
end a transaction on its partitions (`transaction_coordinator`).
"""
