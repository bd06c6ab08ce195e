"""The broker's configuration: every key it knows (`definitions`: type, default, checks,
which are dynamic) and the layered values of brokers and topics (static, dynamic, default).

The bottom room of the broker: it imports only the release presets beside it.
"""
