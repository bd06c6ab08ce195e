"""An in-memory Kafka broker that real clients talk to (seed 002's layering).

- `cluster`: N brokers in one process (`Cluster`, `BackgroundCluster`), each with its own
  listener on 127.0.0.1; `metadata`: the controller's image they share (topics,
  assignments, ISR, elections), with `config` and `acls`.
- `broker`: one broker; `server`: its listener (framing, ordered responses, limits);
  `api`: the handler registry that ApiVersions advertises (handlers live in
  ``kafkagen.runtime.handlers``, one module per API).
- `replica_manager`, `partition`, `log`, `producer_state`: appends and fetches, with
  `DelayedProduce` and `DelayedFetch` in purgatories; `replica_fetcher`: followers copying
  their leaders.
- `group_coordinator` and `group_records`: classic consumer groups, offsets written to
  ``__consumer_offsets`` through the replica manager.
"""
