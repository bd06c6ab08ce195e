"""What the group and transaction coordinators share (Kafka's coordinator-common): an
internal topic's ownership, loading and writes (`coordinator_log`), and how Kafka frames a
coordinator's records in it (`record_format`).
"""
