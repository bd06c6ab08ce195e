"""An in-memory Kafka broker that real clients talk to, in one-way layers.

From the bottom up (each module imports only those below it; pyproject.toml declares the
layers as import-linter contracts and the tests check them):

- `types`: plain names (topic-partition, partition and broker info, the internal topics,
  the coordinators' partitioning function); `config`, `acls`, `reassignment`, and
  `metadata`: the controller's image every broker shares (topics, assignments, ISR).
- `log`, `producer_state`, `partition`, `log_store`: a replica's batches, its producers,
  and their files under a log directory.
- `replica_manager`: appends and fetches, `DelayedProduce` and `DelayedFetch` in
  purgatories; `replica_fetcher`: followers copying their leaders.
- The coordinators, through narrow interfaces (appends through the replica manager, a
  `MarkerWriter` for other brokers): `coordinator_log` (an internal topic's ownership and
  writes), `group_model` (classic groups and their state rules), `consumer_group` (KIP-848),
  `offset_store` (committed offsets), `group_coordinator` (the join/sync/heartbeat
  protocol), `group_records`; `transaction_coordinator`.
- `api`: the handler registry and `BrokerServices`, what handlers see of a broker (the
  handlers live in ``kafkagen.runtime.handlers``, one module per API).
- `server`: the listener (framing, ordered responses, limits).
- `cluster`: the only place that wires brokers and components together (`Broker`,
  `Cluster`, `BackgroundCluster`).
"""
