"""Share groups (KIP-932; Kafka's share module and the share parts of its group
coordinator): the members of share groups and their assignment (`share_group`), one
partition's in-flight records for a group (`share_partition`), the share sessions, fetches
and acknowledgements of a broker (`share_partition_manager`), share partitions' state in
``__share_group_state`` (`share_coordinator`), and each broker's client of it, which sends
the share-group state requests to the coordinating broker (`persister`).
"""
