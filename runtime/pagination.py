"""Where the cursor pagination of seed 001 sits in each API's version range.

Each of the 13 paginated admin APIs pages from one version above the newest Kafka release's
latest, kept unstable. The number therefore moves whenever Kafka takes it (Metadata paged at
v13 until Kafka 4.4.0 shipped its own v13), so the broker and the client read it from the
generated codec here instead of spelling it out.
"""

from __future__ import annotations

from functools import cache

from kafkagen.generated import message_type

#: The API keys of seed 001's paginated APIs.
PAGINATED_APIS = (2, 3, 9, 15, 16, 29, 32, 35, 46, 61, 65, 66, 69)


@cache
def paged_version(api_key: int) -> int:
    """The first (and only) version of ``api_key`` with ResponsePaginationLimit and Cursor."""
    cls = message_type(api_key, "request")
    if not (cls.LATEST_VERSION_UNSTABLE and hasattr(cls(), "response_pagination_limit")):
        raise LookupError(f"{cls.__name__} has no unstable paged version")
    return cls.HIGHEST_VERSION
