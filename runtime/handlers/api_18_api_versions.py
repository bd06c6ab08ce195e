"""ApiVersions (key 18): the versions this broker serves, exactly as registered and
capped by ``kafkagen.api.version.max``.

A request newer than v5 reaches this handler with no body (the server could not decode it)
and at version 0: the answer is UNSUPPORTED_VERSION in the v0 layout, still listing the
ranges, which is how clients find a version to retry with. From v5 (KIP-1242) a client may
name the cluster and broker it means to reach; when either differs from this broker's, the
answer is REBOOTSTRAP_REQUIRED, so the client looks the cluster up afresh.

From v3 the answer also lists the cluster's features (KIP-584): the ranges it supports
and the levels it has finalized, with their epoch, those of a new Kafka 4.4.0 cluster
until UpdateFeatures changes them (see `kafkagen.runtime.broker.metadata.features`). A
broker playing a release preset advertises what a new cluster of that release does, and
nothing before 3.3. ``transaction.version`` 2 (transactions v2, KIP-890) is finalized only
when the broker serves the versions that protocol uses (Produce 12, EndTxn 5,
TxnOffsetCommit 5), else it drops to 1, so a preset or ``kafkagen.api.version.max`` that
caps them turns it off: Kafka's Java client uses transactions v2 only when the feature says so.
The share-group APIs are listed only while ``share.version`` is at least 1 (the default):
disabling it (``kafka-features disable --feature share.version``) hides them, and they
answer UNSUPPORTED_VERSION (`ShareGroupManager.enabled`). Kafka 4.4 keeps listing them
while refusing them; kafkagen hides them so that a client deciding by the listing (franz-go
does) leaves share groups alone. A preset lists its release's APIs as they are.
"""

from __future__ import annotations

import re
from functools import cache

from kafkagen.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.features import TRANSACTION_VERSION, FinalizedFeatures
from kafkagen.runtime.errors import (
    InvalidRequestError,
    RebootstrapRequiredError,
    UnsupportedVersionError,
)
from kafkagen.runtime.message import KeyedList

API_KEY = 18
#: API key -> the first version of transactions v2.
_TRANSACTIONS_V2 = {0: 12, 26: 5, 28: 5}
#: The share-group APIs (KIP-932), advertised only while ``share.version`` is finalized.
SHARE_APIS = frozenset({76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92})
SHARE_VERSION = "share.version"
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: ApiVersionsRequest | None) -> None:
    preset = ctx.broker.apis.preset
    features = ctx.broker.metadata.features if preset is None else _release_features(preset)
    versions = ctx.broker.apis.served_versions()
    if preset is None and not features.levels.get(SHARE_VERSION):
        versions = {k: v for k, v in versions.items() if k not in SHARE_APIS}
    keys = KeyedList(
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in versions.items()
    )
    if request is None:
        ctx.respond(ApiVersionsResponse(error_code=UnsupportedVersionError.code, api_keys=keys))
        return
    R = ApiVersionsResponse
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        ctx.respond(ApiVersionsResponse(error_code=InvalidRequestError.code))
        return
    if ctx.api_version >= 3:
        # Client metrics subscriptions may match on it (KIP-714).
        ctx.session.client_software = (
            request.client_software_name,
            request.client_software_version,
        )
    if ctx.api_version >= 5 and (
        (request.cluster_id is not None and request.cluster_id != ctx.broker.metadata.cluster_id)
        or (request.node_id >= 0 and request.node_id != ctx.broker.node_id)
    ):
        ctx.respond(ApiVersionsResponse(error_code=RebootstrapRequiredError.code))
        return
    finalized = features.finalized()
    if TRANSACTION_VERSION in finalized:
        finalized[TRANSACTION_VERSION] = min(
            finalized[TRANSACTION_VERSION], transaction_version(versions)
        )
    ctx.respond(
        R(
            error_code=0,
            api_keys=keys,
            supported_features=KeyedList(
                R.SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                for name, (lo, hi) in features.supported.items()
            ),
            finalized_features_epoch=features.epoch,
            finalized_features=KeyedList(
                R.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
                for name, level in finalized.items()
            ),
        )
    )


@cache
def _release_features(release: str) -> FinalizedFeatures:
    """What a new cluster of ``release`` advertises (a preset's features never change)."""
    return FinalizedFeatures(release)


def transaction_version(versions: dict[int, tuple[int, int]]) -> int:
    """2 when ``versions`` (API key -> served range) reach transactions v2, else 1."""
    v2 = all(versions.get(key, (0, -1))[1] >= first for key, first in _TRANSACTIONS_V2.items())
    return 2 if v2 else 1
