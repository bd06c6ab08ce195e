"""An in-memory Kafka broker that real clients talk to, in rooms named after Kafka's modules.

Each room is a sub-package; the rooms sit in one-way layers, and so do the modules inside
them (pyproject.toml declares both as import-linter contracts and the tests check them).
From the bottom up:

- `types`, `sorted_keys`, `release_presets`: plain names (topic-partition, partition and
  broker info, the internal topics, the coordinators' partitioning function), a dict that
  keeps its keys sorted, and the API versions each Kafka release advertised.
- `config`: every key the broker knows and the layered values of brokers and topics.
- `security`: listeners, SASL, ACLs, the authorizer and the listeners' limits.
- `metadata`: the controller's image every broker shares (topics, assignments, ISR,
  reassignments, client quotas, dynamic config changes).
- `storage`: a replica's batches, its producers and their files under a log directory;
  the replica manager (appends and fetches, `DelayedProduce` and `DelayedFetch` in
  purgatories) and the replica fetcher (followers copying their leaders).
- `coordinator`: what both coordinators share, an internal topic's ownership and writes
  and the framing of their records.
- `group` and `transaction`: the coordinators, through narrow interfaces (appends through
  the replica manager, a `MarkerWriter` for other brokers).
- `api`: the handler registry and `BrokerServices`, what handlers see of a broker (the
  handlers live in ``kafkagen.runtime.handlers``, one module per API).
- `server`: the listener (framing, ordered responses, limits); `control`: fault injection
  in front of handler dispatch, and its HTTP face.
- `cluster`: the only place that wires brokers and components together (`Broker`,
  `Cluster`, `BackgroundCluster`).

A room's modules named with a leading underscore are its internals: only modules of the
same room import them.
"""
