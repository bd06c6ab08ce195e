"""Request handlers, one module per API: ``api_<key>_<name>.py``.

Each module registers its handler and version range with
`kafkagen.runtime.broker.api.register` when imported; `load_handlers` imports them all.
Handlers only translate between the wire messages and the broker's state objects: they
call the replica manager or a coordinator and answer from the callback.
"""
