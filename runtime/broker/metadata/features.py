"""The cluster's feature levels (KIP-584), and UpdateFeatures' rules for changing them.

The levels are Kafka 4.4.0's, read from its ``kafka-server-common`` jar (its ``Feature``
and ``MetadataVersion`` tables): which levels each feature has, which ``metadata.version``
a level needs, and the level a new cluster of a release finalizes. A new kafkagen cluster
finalizes what a new Kafka 4.4.0 cluster does (`FinalizedFeatures`); a release preset
finalizes what a new cluster of that release would, and advertises no features before 3.3,
the first release with ``metadata.version``.

`FinalizedFeatures.update` applies an UpdateFeatures request all or nothing, as Kafka's
controller does: the first refused update fails the request, with Kafka's message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidUpdateVersionError

__all__ = [
    "FEATURES",
    "METADATA_VERSION",
    "METADATA_VERSIONS",
    "TRANSACTION_VERSION",
    "FeatureLevel",
    "FeatureUpdate",
    "FinalizedFeatures",
    "UpgradeType",
    "release_levels",
]

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
ELR_VERSION = "eligible.leader.replicas.version"

#: metadata.version feature level -> its name, 3.3-IV3 (the lowest KRaft supports) on.
METADATA_VERSIONS: dict[int, str] = {
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    """One level of a feature: the metadata.version a new cluster turns it on from, and
    the features (metadata.version among them) it needs at a least level."""

    bootstrap: int
    needs: Mapping[str, int]


#: Feature -> its levels from 0, in the order Kafka lists them. metadata.version is apart.
FEATURES: dict[str, tuple[FeatureLevel, ...]] = {
    KRAFT_VERSION: (FeatureLevel(7, {}), FeatureLevel(21, {})),
    TRANSACTION_VERSION: (FeatureLevel(7, {}), FeatureLevel(24, {}), FeatureLevel(24, {})),
    "group.version": (FeatureLevel(7, {}), FeatureLevel(22, {})),
    ELR_VERSION: (FeatureLevel(7, {}), FeatureLevel(26, {METADATA_VERSION: 23})),
    "share.version": (FeatureLevel(7, {}), FeatureLevel(28, {}), FeatureLevel(31, {})),
    "streams.version": (FeatureLevel(7, {}), FeatureLevel(29, {})),
}


class UpgradeType:
    """UpdateFeatures' upgrade types (v1 on; v0's AllowDowngrade means SAFE_DOWNGRADE)."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: int = UpgradeType.UPGRADE


def release_levels(release: str | None) -> dict[str, int] | None:
    """The levels a new cluster of ``release`` (``"4.4"``; None: kafkagen's own, 4.4)
    finalizes, metadata.version included; None before 3.3 (no KRaft feature levels)."""
    if release is None:
        release = "4.4"
    levels = [lv for lv, name in METADATA_VERSIONS.items() if name.startswith(release + "-")]
    if not levels:
        return None
    mv = max(levels)
    out = {METADATA_VERSION: mv}
    for name, steps in FEATURES.items():
        out[name] = max(i for i, step in enumerate(steps) if step.bootstrap <= mv)
    # Kafka formats a cluster with a static voter set at kraft.version 0.
    out[KRAFT_VERSION] = 0
    return out


def _supported(name: str, top_mv: int) -> tuple[int, int] | None:
    if name == METADATA_VERSION:
        return min(METADATA_VERSIONS), top_mv
    steps = FEATURES.get(name)
    if steps is None:
        return None
    return 0, max(i for i, step in enumerate(steps) if step.bootstrap <= top_mv)


class FinalizedFeatures:
    """The features a cluster supports and the levels it has finalized, with the epoch
    (the metadata change that last set them) ApiVersions reports."""

    def __init__(self, release: str | None = None, controller_id: int = 0) -> None:
        self.controller_id = controller_id
        self.epoch = 0
        self.levels: dict[str, int] = {}
        #: Feature -> (min, max) level this cluster supports.
        self.supported: dict[str, tuple[int, int]] = {}
        self.play(release)

    def play(self, release: str | None) -> None:
        """Support and finalize what a new cluster of ``release`` does (None: Kafka 4.4)."""
        levels = release_levels(release)
        self.levels = dict(levels or {})
        top_mv = self.levels.get(METADATA_VERSION)
        self.supported = {}
        if top_mv is not None:
            for name in (METADATA_VERSION, *FEATURES):
                supported = _supported(name, top_mv)
                assert supported is not None
                self.supported[name] = supported

    def finalized(self) -> dict[str, int]:
        """Feature -> finalized level, the features at level 0 left out (as Kafka does)."""
        return {name: level for name, level in self.levels.items() if level > 0}

    def update(self, updates: Sequence[FeatureUpdate], validate_only: bool, epoch: int) -> None:
        """Apply ``updates`` together, or raise the first refusal as Kafka words it (and
        change nothing); ``validate_only`` checks only. ``epoch`` becomes the features'."""
        proposed = dict(self.levels)
        error = None
        for u in updates:
            refusal = self._refusal(u, proposed)
            if refusal is not None:
                error = f"Invalid update version {u.level} for feature {u.feature}. {refusal}"
                break
            proposed[u.feature] = u.level
        else:
            refusals = (self._dependency_refusal(u, proposed) for u in updates)
            error = next((r for r in refusals if r is not None), None)
        if error is not None:
            raise InvalidUpdateVersionError(
                "The update failed for all features since the following feature had an "
                f"error: {error}"
            )
        if not validate_only and updates:
            self.levels = proposed
            self.epoch = epoch

    def _refusal(self, u: FeatureUpdate, proposed: Mapping[str, int]) -> str | None:
        if u.upgrade_type not in (1, 2, 3):
            return f"Unknown upgrade type {u.upgrade_type}."
        supported = self.supported.get(u.feature)
        if supported is None:
            return f"Local controller {self.controller_id} does not support this feature."
        lo, hi = supported
        if not lo <= u.level <= hi:
            return f"Local controller {self.controller_id} only supports versions {lo}-{hi}"
        current = proposed.get(u.feature, 0)
        if u.level < current and u.upgrade_type == UpgradeType.UPGRADE:
            return (
                "Can't downgrade the version of this feature without setting the upgrade "
                "type to either safe or unsafe downgrade."
            )
        if u.level > current and u.upgrade_type != UpgradeType.UPGRADE:
            return "Can't downgrade to a newer version."
        return None

    def _dependency_refusal(self, u: FeatureUpdate, proposed: Mapping[str, int]) -> str | None:
        current = self.levels.get(u.feature, 0)
        if u.feature == METADATA_VERSION and u.level < current:
            return (
                f"Unsupported metadata.version downgrade from {current} to {u.level}. "
                "Refusing to perform the requested downgrade because it might delete "
                "metadata information."
            )
        if u.feature == KRAFT_VERSION and u.level < current:
            return (
                f"Invalid update version {u.level} for feature {u.feature}. "
                "The quorum cannot go back to a static voter set."
            )
        # Every finalized feature's needs must still hold after the update.
        for name, level in proposed.items():
            steps = FEATURES.get(name)
            if steps is None or level >= len(steps):
                continue
            for needed, least in steps[level].needs.items():
                have = proposed.get(needed, 0)
                if have < least:
                    return (
                        f"Invalid update version {level} for feature {name}. {name} "
                        f"{level} requires {needed} {least}, which is above its level {have}."
                    )
        return None
