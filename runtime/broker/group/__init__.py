"""The group coordinator (Kafka's group-coordinator module): classic groups and their state
rules (`group_model`), consumer-protocol groups of KIP-848 (`consumer_group`, their records
in ``__consumer_offsets``), the consumer protocol over them (`consumer_group_manager`) with
its server-side assignors (`assignors`), and the coordinator itself (`group_coordinator`).

Internals, imported only inside this room: the classic protocol the coordinator speaks
(`_classic_protocol`), the committed offsets (`_offset_store`) and the classic records in
``__consumer_offsets`` (`_group_records`).
"""
