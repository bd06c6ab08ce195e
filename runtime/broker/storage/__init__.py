"""A broker's replicas (Kafka's storage module, with the replica manager that serves them):
a partition's log and producer state (`partition`), their files under a log directory
(`log_store`), appends and fetches with their purgatories (`replica_manager`), and followers
copying their leaders (`replica_fetcher`).

The in-memory log (`_log`) and the producers' sequence state (`_producer_state`) are this
room's internals: other rooms reach them through `partition`. Named storage, not log, so
that the log itself is not ``log.log``.
"""
