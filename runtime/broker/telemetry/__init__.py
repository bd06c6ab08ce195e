"""Client telemetry (KIP-714, Kafka's ClientMetricsManager in its server module): which
metrics each client instance is asked to push and how often, from the client metrics
resources that match it, and the pushes kafkagen's own receiver keeps
(`client_telemetry`)."""
