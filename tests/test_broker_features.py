"""Feature levels over real sockets: ApiVersions advertises Kafka 4.4.0's, UpdateFeatures
changes them with Kafka's rules and messages, and a release preset advertises its release's."""

from __future__ import annotations

import pytest
from broker_helpers import WireClient
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.update_features import UpdateFeaturesRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.metadata.features import release_levels

pytestmark = pytest.mark.timeout(60)
Update = UpdateFeaturesRequest.FeatureUpdateKey
#: `kafka-features describe` on a new Kafka 4.4.0 cluster: (min, max, finalized).
KAFKA_44 = {
    "eligible.leader.replicas.version": (0, 1, 1),
    "group.version": (0, 1, 1),
    "kraft.version": (0, 1, 0),
    "metadata.version": (7, 33, 33),
    "share.version": (0, 2, 2),
    "streams.version": (0, 1, 1),
    "transaction.version": (0, 2, 2),
}
INVALID_UPDATE_VERSION = 95


def features(w: WireClient) -> tuple[dict[str, tuple[int, int, int]], int]:
    """Feature -> (supported min, max, finalized level or 0), and the epoch."""
    r = w.call(18, 4, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    assert all(f.min_version_level == f.max_version_level for f in r.finalized_features)
    out = {
        f.name: (f.min_version, f.max_version, finalized.get(f.name, 0))
        for f in r.supported_features
    }
    return out, r.finalized_features_epoch


def test_a_new_cluster_advertises_kafka_4_4_levels_and_updates_change_them() -> None:
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            assert features(w)[0] == KAFKA_44


def test_a_preset_broker_advertises_its_release_and_none_before_3_3() -> None:
    configs = {"kafkagen.api.version.preset": "4.0"}
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            levels, _ = features(w)
            assert levels["metadata.version"] == (7, 25, 25)
            assert levels["transaction.version"] == (0, 2, 2)
            assert levels["share.version"] == (0, 0, 0)


def test_update_features_follows_kafkas_rules() -> None:
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            _, epoch = features(w)
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="group.version", max_version_level=5, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert r.error_message == (
                "The update failed for all features since the following feature had an error: "
                "Invalid update version 5 for feature group.version. Local controller 0 only "
                "supports versions 0-1"
            )
            assert [(x.feature, x.error_code) for x in r.results] == [("group.version", 0)]
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=1, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert r.error_message.endswith(
                "Can't downgrade the version of this feature without setting the upgrade type "
                "to either safe or unsafe downgrade."
            )
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="nonexistent.version", max_version_level=1, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_message.endswith("Local controller 0 does not support this feature.")
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="metadata.version", max_version_level=7, upgrade_type=2)
                    ]
                ),
            )
            assert r.error_message.endswith(
                "Unsupported metadata.version downgrade from 33 to 7. Refusing to perform the "
                "requested downgrade because it might delete metadata information."
            )
            # A refused request changes nothing, a dry run neither.
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    validate_only=True,
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, upgrade_type=2)
                    ],
                ),
            )
            assert r.error_code == 0
            assert features(w) == (KAFKA_44, epoch)
            # Two updates together, all or nothing: the second is refused, the first kept out.
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, upgrade_type=2),
                        Update(feature="group.version", max_version_level=2, upgrade_type=1),
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert features(w)[0]["share.version"] == (0, 2, 2)
            # Disabling leaves the feature out of the finalized list; the epoch moves on.
            r = w.call(
                57,
                0,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, allow_downgrade=True)
                    ]
                ),
            )
            assert r.error_code == 0
            levels, new_epoch = features(w)
            assert levels["share.version"] == (0, 2, 0) and new_epoch > epoch
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=2, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == 0 and features(w)[0] == KAFKA_44


def test_a_feature_level_cannot_outlive_what_it_needs() -> None:
    """eligible.leader.replicas.version 1 needs metadata.version 4.0-IV1 (23): a 3.9
    cluster must raise metadata.version first or in the same request."""
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        md.features.levels = dict(release_levels("3.9") or {})
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            elr = Update(feature="eligible.leader.replicas.version", max_version_level=1)
            r = w.call(57, 1, UpdateFeaturesRequest(feature_updates=[elr]))
            assert r.error_code == INVALID_UPDATE_VERSION
            assert "requires metadata.version 23" in r.error_message
            mv = Update(feature="metadata.version", max_version_level=23)
            r = w.call(57, 1, UpdateFeaturesRequest(feature_updates=[mv, elr]))
            assert r.error_code == 0
            assert md.features.levels["eligible.leader.replicas.version"] == 1


def test_release_presets_finalize_what_their_release_did() -> None:
    assert release_levels("2.8") is None
    assert release_levels("3.9") == {
        "metadata.version": 21, "kraft.version": 0, "transaction.version": 0,
        "group.version": 0, "eligible.leader.replicas.version": 0, "share.version": 0,
        "streams.version": 0,
    }  # fmt: skip
    four = release_levels("4.0")
    assert four is not None and four["metadata.version"] == 25
    assert four["transaction.version"] == 2 and four["group.version"] == 1
    assert four["eligible.leader.replicas.version"] == 0
