"""UpdateFeatures (key 57): upgrade, downgrade or disable the cluster's feature levels.

Needs ALTER on the cluster. The updates apply together or not at all, as on Kafka's
controller: the first refused one (a feature the cluster does not know, a level outside
its supported range, a downgrade asked as an upgrade, a metadata.version downgrade, a level
whose needs another level breaks) fails the whole request with INVALID_UPDATE_VERSION and
Kafka's message, in the top-level error. v0 and v1 also list each feature asked for,
without an error of its own, as Kafka does; v2 drops the list. ``validate_only`` (v1 on,
``kafka-features --dry-run``) checks and changes nothing. A feature level change is a
metadata change: its number becomes the features' epoch in ApiVersions.
"""

from __future__ import annotations

from kafkagen.generated.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.features import FeatureUpdate, UpgradeType
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError, InvalidUpdateVersionError

API_KEY = 57
R = UpdateFeaturesResponse
#: The last version whose answer has a row per feature.
RESULTS_UNTIL = 1


def handle(ctx: RequestContext, request: UpdateFeaturesRequest) -> None:
    code, message = 0, None
    if not ctx.allowed(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        code = ClusterAuthorizationFailedError.code
    else:
        updates = [
            FeatureUpdate(u.feature, u.max_version_level, _upgrade_type(ctx.api_version, u))
            for u in request.feature_updates
        ]
        try:
            ctx.broker.metadata.update_features(updates, request.validate_only)
        except InvalidUpdateVersionError as e:
            code, message = e.code, e.message
    ctx.respond(
        R(
            error_code=code,
            error_message=message,
            # As Kafka: a row per feature (its message the error's name) only for a whole
            # success, and only up to v1.
            results=[
                R.UpdatableFeatureResult(feature=u.feature, error_code=0, error_message="NONE")
                for u in request.feature_updates
                if code == 0 and ctx.api_version <= RESULTS_UNTIL
            ],
        )
    )


def _upgrade_type(version: int, update: UpdateFeaturesRequest.FeatureUpdateKey) -> int:
    if version >= 1:
        return update.upgrade_type
    return UpgradeType.SAFE_DOWNGRADE if update.allow_downgrade else UpgradeType.UPGRADE
