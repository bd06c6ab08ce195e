"""Request builders without a network: what they build at each version, and how they merge.

Every request a builder makes goes through the wire (encoded at its version and decoded as
a broker would read it) and is answered by a small model broker; the answer goes through
the wire too before the builder merges it. So each test also shows the requests are valid
at the version they were built for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkagen.runtime.client import (
    BatchedKeysBuilder,
    BatchingUnsupportedError,
    BrokerVersions,
    CommittedOffset,
    CoordinatorType,
    Exchange,
    FindCoordinatorBuilder,
    Node,
    OffsetFetchBuilder,
    VersionMismatchError,
    VersionRange,
)
from kafkagen.runtime.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    ErrorCode,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    NotCoordinatorError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kafkagen.runtime.message import Message
from kafkagen.runtime.topic_partition import TopicPartition

Answer = Callable[[Any, int], Message]


def run(
    builder: BatchedKeysBuilder[Any, Any], usable: VersionRange, answer: Answer
) -> tuple[list[tuple[int, Message]], dict[Any, Any]]:
    """Build, send every request through the wire to ``answer``, merge."""
    planned = builder.build(usable)
    exchanges = []
    for version, request in planned:
        assert version in usable
        received = type(request).decode(request.encode(version), version)
        response = answer(received, version)
        exchanges.append(
            Exchange(version, request, type(response).decode(response.encode(version), version))
        )
    return planned, builder.merge(exchanges)


def plain(result: Mapping[Any, Any]) -> dict[Any, Any]:
    """A result with errors as (class, message), so results can be compared with ==."""
    out: dict[Any, Any] = {}
    for k, v in result.items():
        if isinstance(v, KafkaError):
            out[k] = (type(v), v.message)
        elif isinstance(v, dict):
            out[k] = plain(v)
        else:
            out[k] = v
    return out


# --------------------------------------------------------------------------- FindCoordinator

#: What the model broker knows: key -> its coordinator, or (error code, message).
Coordinators = dict[str, Node | tuple[int, str]]


def coordinators(n: int) -> Coordinators:
    return {f"group-{i}": Node(i % 3, "127.0.0.1", 9092 + i % 3) for i in range(n)}


def find_coordinator_model(state: Coordinators) -> Answer:
    def answer(request: FindCoordinatorRequest, version: int) -> FindCoordinatorResponse:
        def fill(out: Any, key: str) -> None:
            found = state.get(key, (ErrorCode.COORDINATOR_NOT_AVAILABLE, "unknown key"))
            if isinstance(found, Node):
                out.node_id, out.host, out.port = found.node_id, found.host, found.port
                out.error_code, out.error_message = 0, None
            else:
                out.node_id, out.host, out.port = -1, "", -1
                out.error_code = found[0]
                out.error_message = found[1] if version >= 1 else ""  # v0 has no message

        if version >= 4:
            assert request.key == ""
            items = []
            for key in request.coordinator_keys:
                c = FindCoordinatorResponse.Coordinator(key=key)
                fill(c, key)
                items.append(c)
            return FindCoordinatorResponse(coordinators=items)
        assert request.coordinator_keys == []
        response = FindCoordinatorResponse()
        fill(response, request.key)
        return response

    return answer


def test_v4_and_later_build_one_request_for_all_keys() -> None:
    builder = FindCoordinatorBuilder(["a", "b", "c"])
    planned = builder.build(VersionRange(0, 6))
    assert len(planned) == 1
    version, request = planned[0]
    assert version == 6 and isinstance(request, FindCoordinatorRequest)
    assert request.coordinator_keys == ["a", "b", "c"] and request.key == ""


def test_below_v4_builds_one_request_per_key_at_the_highest_usable_version() -> None:
    planned = FindCoordinatorBuilder(["a", "b", "c"]).build(VersionRange(0, 3))
    assert [v for v, _ in planned] == [3, 3, 3]
    keys = []
    for _, r in planned:
        assert isinstance(r, FindCoordinatorRequest) and r.coordinator_keys == []
        keys.append(r.key)
    assert keys == ["a", "b", "c"]


def test_a_batched_request_cannot_be_written_below_v4() -> None:
    """Why the builder splits: the codec refuses to drop the key list at v3."""
    request = FindCoordinatorRequest(coordinator_keys=["a", "b"])
    with pytest.raises(UnsupportedVersionError, match="CoordinatorKeys"):
        request.encode(3)


@pytest.mark.parametrize("n", [1, 2, 500])
@pytest.mark.parametrize("top", range(7))
def test_results_are_the_same_batched_or_split(n: int, top: int) -> None:
    state = coordinators(n)
    planned, result = run(
        FindCoordinatorBuilder(state), VersionRange(0, top), find_coordinator_model(state)
    )
    assert len(planned) == (1 if top >= 4 else n)
    assert result == state  # every key, in the caller's order
    assert list(result) == list(state)


@pytest.mark.parametrize("top", range(7))
def test_per_key_errors_stay_with_their_key(top: int) -> None:
    state: Coordinators = {
        "ok": Node(1, "127.0.0.1", 9093),
        "loading": (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "loading offsets"),
        "": (ErrorCode.INVALID_REQUEST, "empty group id"),
        "ok2": Node(2, "127.0.0.1", 9094),
    }
    _, result = run(
        FindCoordinatorBuilder(state), VersionRange(0, top), find_coordinator_model(state)
    )
    assert result["ok"] == Node(1, "127.0.0.1", 9093) and result["ok2"] == Node(
        2, "127.0.0.1", 9094
    )
    loading, invalid = result["loading"], result[""]
    assert isinstance(loading, CoordinatorLoadInProgressError) and loading.retriable
    assert isinstance(invalid, InvalidRequestError)
    if top >= 1:  # the broker's own words, where the version carries them
        assert loading.message == "loading offsets" and invalid.message == "empty group id"
    else:
        assert loading.message == CoordinatorLoadInProgressError.message


def test_several_keys_below_v4_without_splitting_raise_like_kafka() -> None:
    for builder in (
        FindCoordinatorBuilder(["a", "b"], split=False),
        FindCoordinatorBuilder.batched_only(["a", "b"]),
    ):
        with pytest.raises(BatchingUnsupportedError) as info:
            builder.build(VersionRange(0, 3))
        assert isinstance(info.value, UnsupportedVersionError)
        text = str(info.value)
        assert "2 keys in one FindCoordinator v3 request" in text
        assert "from v4" in text and "split=True" in text
        # Batching is possible from v4, and one key never needs it.
        assert len(builder.build(VersionRange(0, 4))) == 1
    assert len(FindCoordinatorBuilder.batched_only(["a"]).build(VersionRange(0, 3))) == 1


def test_key_types_set_the_lowest_usable_version() -> None:
    assert FindCoordinatorBuilder(["g"]).versions().min == 0
    txn = FindCoordinatorBuilder(["t"], CoordinatorType.TRANSACTION)
    assert txn.versions().min == 1
    assert isinstance(r := txn.build(VersionRange(1, 2))[0][1], FindCoordinatorRequest)
    assert r.key_type == CoordinatorType.TRANSACTION
    share = FindCoordinatorBuilder(["s"], key_type=2)
    assert share.key_type is CoordinatorType.SHARE and share.versions().min == 6
    with pytest.raises(VersionMismatchError, match="client needs v6, the broker supports v0-3"):
        BrokerVersions({10: (0, 3)}).usable(10, share.versions())


def test_a_key_the_broker_left_out_gets_an_error_and_extra_keys_are_dropped() -> None:
    builder = FindCoordinatorBuilder(["a", "b"])
    response = FindCoordinatorResponse(
        coordinators=[
            FindCoordinatorResponse.Coordinator(key="a", node_id=1, host="h", port=1),
            FindCoordinatorResponse.Coordinator(key="zzz", node_id=2, host="h", port=2),
        ]
    )
    ((version, request),) = builder.build(VersionRange(0, 4))
    result = builder.merge([Exchange(version, request, response)])
    assert list(result) == ["a", "b"] and result["a"] == Node(1, "h", 1)
    missing = result["b"]
    assert isinstance(missing, UnknownServerError) and "'b'" in missing.message


def test_keys_are_deduplicated_and_a_lone_string_is_refused() -> None:
    assert FindCoordinatorBuilder(["a", "b", "a"]).keys == ["a", "b"]
    with pytest.raises(TypeError, match="not one string"):
        FindCoordinatorBuilder("group")
    empty = FindCoordinatorBuilder([])
    assert empty.build(VersionRange(0, 6)) == [] and empty.merge([]) == {}


def test_merge_checks_the_response_type() -> None:
    builder = FindCoordinatorBuilder(["a"])
    ((version, request),) = builder.build(VersionRange(0, 3))
    with pytest.raises(TypeError, match="FindCoordinatorResponse"):
        builder.merge([Exchange(version, request, OffsetFetchResponse())])


# --------------------------------------------------------------------------- OffsetFetch

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)
P0 = TopicPartition("payments", 0)

#: The model broker's offsets: group -> group error code, or partition -> committed
#: (offset, leader epoch, metadata) or a partition error code.
Offsets = dict[str, int | dict[TopicPartition, tuple[int, int, str] | int]]

OFFSETS: Offsets = {
    "g1": {T0: (10, 3, "m1"), T1: (20, 3, ""), P0: (5, 1, "pay")},
    "g2": {T0: (7, 2, "x")},
    "g3": {},
    "loading": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    "denied": ErrorCode.GROUP_AUTHORIZATION_FAILED,
}


def offset_fetch_model(state: Offsets) -> Answer:
    R = OffsetFetchResponse

    def topics(group: str, wanted: list[Any] | None, topic_cls: Any, part_cls: Any, v: int) -> Any:
        entry = state.get(group, {})
        committed = entry if isinstance(entry, dict) else {}
        group_error = entry if isinstance(entry, int) else 0
        if wanted is None:
            tps = list(committed)
        else:
            tps = [TopicPartition(t.name, i) for t in wanted for i in t.partition_indexes]
        by_topic: dict[str, list[Any]] = {}
        for tp in tps:
            p = part_cls(partition_index=tp.partition, committed_offset=-1, metadata="")
            got = committed.get(tp)
            if group_error and v < 2:
                p.error_code = group_error  # no top-level error before v2
            elif isinstance(got, int):
                p.error_code = got
            elif got is not None:
                p.committed_offset, epoch, p.metadata = got
                if v >= 5:
                    p.committed_leader_epoch = epoch
            by_topic.setdefault(tp.topic, []).append(p)
        return group_error, [topic_cls(name=n, partitions=ps) for n, ps in by_topic.items()]

    def answer(request: OffsetFetchRequest, v: int) -> OffsetFetchResponse:
        if v >= 8:
            groups = []
            for g in request.groups:
                error, ts = topics(
                    g.group_id,
                    g.topics,
                    R.OffsetFetchResponseTopics,
                    R.OffsetFetchResponsePartitions,
                    v,
                )
                groups.append(
                    R.OffsetFetchResponseGroup(
                        group_id=g.group_id, error_code=error, topics=[] if error else ts
                    )
                )
            return R(groups=groups)
        error, ts = topics(
            request.group_id,
            request.topics,
            R.OffsetFetchResponseTopic,
            R.OffsetFetchResponsePartition,
            v,
        )
        if v >= 2:
            return R(error_code=error, topics=[] if error else ts)
        return R(topics=ts)

    return answer


WANTED: dict[str, list[TopicPartition] | None] = {
    "g1": [T0, T1, P0, TopicPartition("orders", 7)],
    "g2": [T0, T1],
    "g3": [P0],
    "loading": [T0],
    "denied": [T0],
}


def check_offsets(result: dict[str, Any], v: int) -> None:
    assert list(result) == list(WANTED)
    assert plain(result) == {
        "g1": {
            T0: CommittedOffset(10, 3 if v >= 5 else -1, "m1"),
            T1: CommittedOffset(20, 3 if v >= 5 else -1, ""),
            P0: CommittedOffset(5, 1 if v >= 5 else -1, "pay"),
            TopicPartition("orders", 7): None,
        },
        "g2": {T0: CommittedOffset(7, 2 if v >= 5 else -1, "x"), T1: None},
        "g3": {P0: None},
        "loading": (CoordinatorLoadInProgressError, CoordinatorLoadInProgressError.message),
        "denied": (GroupAuthorizationFailedError, GroupAuthorizationFailedError.message),
    }


@pytest.mark.parametrize("top", range(10))
def test_offset_fetch_batches_from_v8_and_splits_below(top: int) -> None:
    planned, result = run(
        OffsetFetchBuilder(WANTED), VersionRange(0, top), offset_fetch_model(OFFSETS)
    )
    assert len(planned) == (1 if top >= 8 else len(WANTED))
    assert all(v == top for v, _ in planned)
    check_offsets(result, top)


def test_offset_fetch_v7_split_and_v9_batched_merge_identically() -> None:
    model = offset_fetch_model(OFFSETS)
    split_plan, split = run(OffsetFetchBuilder(WANTED), VersionRange(0, 7), model)
    batch_plan, batched = run(OffsetFetchBuilder(WANTED), VersionRange(0, 9), model)
    assert (len(split_plan), len(batch_plan)) == (5, 1)
    assert plain(split) == plain(batched)


def test_all_partitions_of_a_group_need_v2() -> None:
    builder = OffsetFetchBuilder(["g1", "g2", "g3"])
    assert builder.versions() == VersionRange(2, 9)  # v10 pages with a cursor: not used
    model = offset_fetch_model(OFFSETS)
    _, at_v2 = run(builder, VersionRange(2, 2), model)
    _, at_v9 = run(builder, VersionRange(2, 9), model)
    assert plain(at_v2) == {
        "g1": {
            T0: CommittedOffset(10, -1, "m1"),
            T1: CommittedOffset(20, -1, ""),
            P0: CommittedOffset(5, -1, "pay"),
        },
        "g2": {T0: CommittedOffset(7, -1, "x")},
        "g3": {},
    }
    assert at_v9["g1"][T0] == CommittedOffset(10, 3, "m1")


def test_below_v2_the_group_error_is_read_from_the_partitions() -> None:
    """v0-v1 have no top-level error: a partition's COORDINATOR_* error is the group's,
    while UNKNOWN_TOPIC_OR_PARTITION stays that partition's own."""
    builder = OffsetFetchBuilder({"g": [T0, T1]})
    ((version, request),) = builder.build(VersionRange(0, 1))
    part = OffsetFetchResponse.OffsetFetchResponsePartition
    topic = OffsetFetchResponse.OffsetFetchResponseTopic
    only_partition = OffsetFetchResponse(
        topics=[
            topic(
                name="orders",
                partitions=[
                    part(partition_index=0, committed_offset=4, metadata=None),
                    part(
                        partition_index=1,
                        committed_offset=-1,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ),
                ],
            )
        ]
    )
    result = builder.merge([Exchange(version, request, only_partition)])["g"]
    assert isinstance(result, dict)
    assert result[T0] == CommittedOffset(4, -1, None)
    assert isinstance(result[T1], UnknownTopicOrPartitionError)
    group_level = OffsetFetchResponse(
        topics=[
            topic(
                name="orders",
                partitions=[
                    part(
                        partition_index=0, committed_offset=-1, error_code=ErrorCode.NOT_COORDINATOR
                    ),
                    part(
                        partition_index=1, committed_offset=-1, error_code=ErrorCode.NOT_COORDINATOR
                    ),
                ],
            )
        ]
    )
    assert isinstance(
        builder.merge([Exchange(version, request, group_level)])["g"], NotCoordinatorError
    )


def test_require_stable_needs_v7() -> None:
    builder = OffsetFetchBuilder({"g": [T0]}, require_stable=True)
    assert builder.versions().min == 7
    with pytest.raises(VersionMismatchError, match="client needs v7-9, the broker supports v0-6"):
        BrokerVersions({9: (0, 6)}).usable(9, builder.versions())
    for top in (7, 9):
        ((_, request),) = builder.build(VersionRange(7, top))
        assert isinstance(request, OffsetFetchRequest) and request.require_stable


def test_several_groups_below_v8_without_splitting_raise() -> None:
    with pytest.raises(BatchingUnsupportedError, match="2 groups in one OffsetFetch v7 request"):
        OffsetFetchBuilder.batched_only(["a", "b"]).build(VersionRange(0, 7))
    with pytest.raises(TypeError):
        OffsetFetchBuilder("group")


def test_errors_are_instances_of_the_code_classes() -> None:
    # CoordinatorNotAvailableError is the class FindCoordinator callers retry on.
    state: Coordinators = {"k": (ErrorCode.COORDINATOR_NOT_AVAILABLE, "")}
    _, result = run(
        FindCoordinatorBuilder(state), VersionRange(0, 6), find_coordinator_model(state)
    )
    error = result["k"]
    assert isinstance(error, CoordinatorNotAvailableError)
    assert error.message == CoordinatorNotAvailableError.message  # empty text: the default
