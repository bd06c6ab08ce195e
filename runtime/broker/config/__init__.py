"""The broker's configuration: every key it knows, with its type, default, checks and
whether it is dynamic (`definitions`), and the layered values of brokers and topics
(`store`: static, dynamic per broker, dynamic default, per topic).

The bottom room of the broker: it imports only the release presets beside it.
"""
