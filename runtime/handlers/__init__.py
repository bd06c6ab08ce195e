"""Request handlers, one module per API: ``api_<key>_<name>.py``.

Each module registers its handler and version range with
`kafkagen.runtime.broker.api.register` when imported; `load_handlers` imports them all.
Handlers only translate between the wire messages and the broker's state objects: they
call the replica manager or a coordinator and answer from the callback.
"""

from __future__ import annotations

import importlib
import pkgutil

from kafkagen.runtime.broker.api import HANDLERS, ApiHandler

__all__ = ["load_handlers", "supported_versions"]

_loaded = False


def load_handlers() -> dict[int, ApiHandler]:
    """Import every ``api_NN_*`` module of this package (once); the filled registry."""
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("api_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return HANDLERS


def supported_versions(unstable: bool) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) for every registered handler, as ApiVersions advertises it."""
    load_handlers()
    return {k: (h.min_version, h.max_for(unstable)) for k, h in sorted(HANDLERS.items())}
