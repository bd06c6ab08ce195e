"""The group coordinator (Kafka's group-coordinator module): classic groups and their state
rules (`group_model`), consumer-protocol groups of KIP-848 (`consumer_group`) and their
assignors (`assignors`), and the coordinator itself (`group_coordinator`).

Internals, imported only inside this room: the committed offsets (`_offset_store`) and the
classic records in ``__consumer_offsets`` (`_group_records`).
"""
