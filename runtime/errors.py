"""Errors of the wire layer and Kafka's error-code table."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of a message at a version.

    Names the message, the version and the byte offset where decoding failed.
    """

    # Slots and a direct ``args``: every failing decode builds one or two of these, and an
    # exception's first attribute in its __dict__ and a super().__init__ call cost more
    # than the rest of a failing decode.
    __slots__ = ("reason", "message", "version", "offset")

    def __init__(self, reason: str, message: str = "", version: int = -1, offset: int = -1):
        self.reason = reason
        self.message = message
        self.version = version
        self.offset = offset
        self.args = (_decode_text(reason, message, version, offset),)

    def __str__(self) -> str:
        return _decode_text(self.reason, self.message, self.version, self.offset)

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception pickling re-calls the class with self.args (the formatted text), which
        # would land in `reason`; rebuild from the fields instead.
        return (type(self), (self.reason, self.message, self.version, self.offset))


def _decode_text(reason: str, message: str, version: int, offset: int) -> str:
    where = f"{message} v{version}" if message else "message"
    at = f" at byte {offset}" if offset >= 0 else ""
    return f"cannot decode {where}{at}: {reason}"


class KafkaError(Exception):
    """Base of the errors Kafka names by a protocol error code.

    Each code has one subclass (see ``ERRORS``) carrying the class attributes ``code``,
    ``name`` (Kafka's name, e.g. ``NOT_LEADER_OR_FOLLOWER``), ``retriable`` and a default
    ``message``. An instance may carry its own message (e.g. the error message field of a
    response). Defined here, ahead of the table, so that ``UnsupportedVersionError`` can be
    the table's class for code 35.
    """

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False
    message: str = "The broker hit an unexpected error while handling the request."

    def __init__(self, message: str | None = None) -> None:
        if message is not None:
            self.message = message
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.name} ({self.code}): {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild without calling __init__ (subclasses have other signatures) and restore
        # every field from __dict__. Classes made at run time for unknown codes cannot be
        # found by name, so those travel as their code.
        cls: type[KafkaError] | None = None if _is_generated(type(self)) else type(self)
        return (_rebuild_error, (cls, self.code, self.args), self.__dict__)


class UnsupportedVersionError(KafkaError):
    """A message cannot be written at, or a peer does not support, the version asked for."""


# --- Kafka's error-code table ------------------------------------------------------------
#
# Codes, names and retriability follow Kafka's protocol (an error is retriable when Kafka's
# exception for it is a RetriableException); the messages are kafkagen's own. A class is
# named after Kafka's name in CamelCase plus "Error" (not doubled for names that already end
# in ERROR): NOT_LEADER_OR_FOLLOWER -> NotLeaderOrFollowerError, KAFKA_STORAGE_ERROR ->
# KafkaStorageError. Code 0 (NONE) has a class for completeness; raise_for_code skips it.

ERRORS: dict[int, type[KafkaError]] = {}
"""Every error code Kafka defines, mapped to its class."""

_K = TypeVar("_K", bound=type[KafkaError])


def _kafka_error(
    code: int, name: str, retriable: bool, message: str | None = None
) -> Callable[[_K], _K]:
    """Give a class its table entry; its docstring is the default message."""

    def register(cls: _K) -> _K:
        if code in ERRORS:  # a typo in the table must not silently shadow a code
            raise RuntimeError(f"error code {code} registered twice")
        cls.code = code
        cls.name = name
        cls.retriable = retriable
        cls.message = message if message is not None else (cls.__doc__ or name)
        ERRORS[code] = cls
        return cls

    return register


@_kafka_error(-1, "UNKNOWN_SERVER_ERROR", False)
class UnknownServerError(KafkaError):
    """The broker hit an unexpected error while handling the request."""


@_kafka_error(0, "NONE", False)
class NoneError(KafkaError):
    """No error."""


@_kafka_error(1, "OFFSET_OUT_OF_RANGE", False)
class OffsetOutOfRangeError(KafkaError):
    """The offset asked for is outside the range the partition holds."""


@_kafka_error(2, "CORRUPT_MESSAGE", True)
class CorruptMessageError(KafkaError):
    """A record batch is corrupt: bad checksum, bad size or bad layout."""


@_kafka_error(3, "UNKNOWN_TOPIC_OR_PARTITION", True)
class UnknownTopicOrPartitionError(KafkaError):
    """This broker has no such topic-partition."""


@_kafka_error(4, "INVALID_FETCH_SIZE", False)
class InvalidFetchSizeError(KafkaError):
    """The fetch size in the request is not valid."""


@_kafka_error(5, "LEADER_NOT_AVAILABLE", True)
class LeaderNotAvailableError(KafkaError):
    """The partition has no leader right now, most likely mid-election."""


@_kafka_error(6, "NOT_LEADER_OR_FOLLOWER", True)
class NotLeaderOrFollowerError(KafkaError):
    """This broker is not the partition's leader, or not one of its replicas."""


@_kafka_error(7, "REQUEST_TIMED_OUT", True)
class RequestTimedOutError(KafkaError):
    """The request did not complete in time."""


@_kafka_error(8, "BROKER_NOT_AVAILABLE", False)
class BrokerNotAvailableError(KafkaError):
    """The broker cannot be reached."""


@_kafka_error(9, "REPLICA_NOT_AVAILABLE", True)
class ReplicaNotAvailableError(KafkaError):
    """A replica of the partition is not available."""


@_kafka_error(10, "MESSAGE_TOO_LARGE", False)
class MessageTooLargeError(KafkaError):
    """A record batch is bigger than the broker accepts."""


@_kafka_error(11, "STALE_CONTROLLER_EPOCH", False)
class StaleControllerEpochError(KafkaError):
    """The request came from a controller that is no longer active."""


@_kafka_error(12, "OFFSET_METADATA_TOO_LARGE", False)
class OffsetMetadataTooLargeError(KafkaError):
    """The metadata attached to a committed offset is too long."""


@_kafka_error(13, "NETWORK_EXCEPTION", True)
class NetworkExceptionError(KafkaError):
    """The connection closed before a response arrived."""


@_kafka_error(14, "COORDINATOR_LOAD_IN_PROGRESS", True)
class CoordinatorLoadInProgressError(KafkaError):
    """The coordinator is still loading its state."""


@_kafka_error(15, "COORDINATOR_NOT_AVAILABLE", True)
class CoordinatorNotAvailableError(KafkaError):
    """No coordinator is available."""


@_kafka_error(16, "NOT_COORDINATOR", True)
class NotCoordinatorError(KafkaError):
    """This broker is not the coordinator for that key."""


@_kafka_error(17, "INVALID_TOPIC_EXCEPTION", False)
class InvalidTopicExceptionError(KafkaError):
    """The topic is not valid for this operation."""


@_kafka_error(18, "RECORD_LIST_TOO_LARGE", False)
class RecordListTooLargeError(KafkaError):
    """The batch is larger than a log segment may hold."""


@_kafka_error(19, "NOT_ENOUGH_REPLICAS", True)
class NotEnoughReplicasError(KafkaError):
    """Too few in-sync replicas: the write was refused."""


@_kafka_error(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True)
class NotEnoughReplicasAfterAppendError(KafkaError):
    """The write is in the log, but on fewer in-sync replicas than required."""


@_kafka_error(21, "INVALID_REQUIRED_ACKS", False)
class InvalidRequiredAcksError(KafkaError):
    """The acks value of the produce request is not valid."""


@_kafka_error(22, "ILLEGAL_GENERATION", False)
class IllegalGenerationError(KafkaError):
    """The group generation id is not the current one."""


@_kafka_error(23, "INCONSISTENT_GROUP_PROTOCOL", False)
class InconsistentGroupProtocolError(KafkaError):
    """The member's protocols do not match those of the group."""


@_kafka_error(24, "INVALID_GROUP_ID", False)
class InvalidGroupIdError(KafkaError):
    """The group id is not valid."""


@_kafka_error(25, "UNKNOWN_MEMBER_ID", False)
class UnknownMemberIdError(KafkaError):
    """The coordinator does not know this member id."""


@_kafka_error(26, "INVALID_SESSION_TIMEOUT", False)
class InvalidSessionTimeoutError(KafkaError):
    """The session timeout is outside the range the broker allows."""


@_kafka_error(27, "REBALANCE_IN_PROGRESS", False)
class RebalanceInProgressError(KafkaError):
    """The group is rebalancing; the member has to rejoin."""


@_kafka_error(28, "INVALID_COMMIT_OFFSET_SIZE", False)
class InvalidCommitOffsetSizeError(KafkaError):
    """The size of the offset commit data is not valid."""


@_kafka_error(29, "TOPIC_AUTHORIZATION_FAILED", False)
class TopicAuthorizationFailedError(KafkaError):
    """Not authorized to access the topic."""


@_kafka_error(30, "GROUP_AUTHORIZATION_FAILED", False)
class GroupAuthorizationFailedError(KafkaError):
    """Not authorized to access the group."""


@_kafka_error(31, "CLUSTER_AUTHORIZATION_FAILED", False)
class ClusterAuthorizationFailedError(KafkaError):
    """Not authorized for this cluster operation."""


@_kafka_error(32, "INVALID_TIMESTAMP", False)
class InvalidTimestampError(KafkaError):
    """A record timestamp is outside the accepted range."""


@_kafka_error(33, "UNSUPPORTED_SASL_MECHANISM", False)
class UnsupportedSaslMechanismError(KafkaError):
    """The broker does not offer that SASL mechanism."""


@_kafka_error(34, "ILLEGAL_SASL_STATE", False)
class IllegalSaslStateError(KafkaError):
    """The request is not allowed in the current SASL state."""


# The wire layer's class above doubles as the table's class for code 35.
_kafka_error(35, "UNSUPPORTED_VERSION", False, "That API version is not supported.")(
    UnsupportedVersionError
)


@_kafka_error(36, "TOPIC_ALREADY_EXISTS", False)
class TopicAlreadyExistsError(KafkaError):
    """A topic with this name exists already."""


@_kafka_error(37, "INVALID_PARTITIONS", False)
class InvalidPartitionsError(KafkaError):
    """The partition count is not valid."""


@_kafka_error(38, "INVALID_REPLICATION_FACTOR", False)
class InvalidReplicationFactorError(KafkaError):
    """The replication factor is not valid."""


@_kafka_error(39, "INVALID_REPLICA_ASSIGNMENT", False)
class InvalidReplicaAssignmentError(KafkaError):
    """The replica assignment is not valid."""


@_kafka_error(40, "INVALID_CONFIG", False)
class InvalidConfigError(KafkaError):
    """The configuration is not valid."""


@_kafka_error(41, "NOT_CONTROLLER", True)
class NotControllerError(KafkaError):
    """This broker is not the active controller."""


@_kafka_error(42, "INVALID_REQUEST", False)
class InvalidRequestError(KafkaError):
    """The request is malformed, or the broker cannot make sense of it."""


@_kafka_error(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False)
class UnsupportedForMessageFormatError(KafkaError):
    """The record format in use does not support this request."""


@_kafka_error(44, "POLICY_VIOLATION", False)
class PolicyViolationError(KafkaError):
    """The request breaks a configured policy."""


@_kafka_error(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False)
class OutOfOrderSequenceNumberError(KafkaError):
    """A producer sequence number arrived out of order."""


@_kafka_error(46, "DUPLICATE_SEQUENCE_NUMBER", False)
class DuplicateSequenceNumberError(KafkaError):
    """The broker already holds a batch with this producer sequence number."""


@_kafka_error(47, "INVALID_PRODUCER_EPOCH", False)
class InvalidProducerEpochError(KafkaError):
    """The producer epoch is older than the current one."""


@_kafka_error(48, "INVALID_TXN_STATE", False)
class InvalidTxnStateError(KafkaError):
    """The transaction's current state does not allow this operation."""


@_kafka_error(49, "INVALID_PRODUCER_ID_MAPPING", False)
class InvalidProducerIdMappingError(KafkaError):
    """The producer id does not belong to this transactional id."""


@_kafka_error(50, "INVALID_TRANSACTION_TIMEOUT", False)
class InvalidTransactionTimeoutError(KafkaError):
    """The transaction timeout is above the broker's maximum."""


@_kafka_error(51, "CONCURRENT_TRANSACTIONS", True)
class ConcurrentTransactionsError(KafkaError):
    """An earlier transaction of this producer is still being completed."""


@_kafka_error(52, "TRANSACTION_COORDINATOR_FENCED", False)
class TransactionCoordinatorFencedError(KafkaError):
    """A newer transaction coordinator has taken over."""


@_kafka_error(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False)
class TransactionalIdAuthorizationFailedError(KafkaError):
    """Not authorized to use the transactional id."""


@_kafka_error(54, "SECURITY_DISABLED", False)
class SecurityDisabledError(KafkaError):
    """Security features are turned off on the broker."""


@_kafka_error(55, "OPERATION_NOT_ATTEMPTED", False)
class OperationNotAttemptedError(KafkaError):
    """The broker skipped this operation because a related one failed."""


@_kafka_error(56, "KAFKA_STORAGE_ERROR", True)
class KafkaStorageError(KafkaError):
    """A disk problem on the broker stopped the operation."""


@_kafka_error(57, "LOG_DIR_NOT_FOUND", False)
class LogDirNotFoundError(KafkaError):
    """The broker has no such log directory."""


@_kafka_error(58, "SASL_AUTHENTICATION_FAILED", False)
class SaslAuthenticationFailedError(KafkaError):
    """SASL authentication failed."""


@_kafka_error(59, "UNKNOWN_PRODUCER_ID", False)
class UnknownProducerIdError(KafkaError):
    """The broker has no state for this producer id."""


@_kafka_error(60, "REASSIGNMENT_IN_PROGRESS", False)
class ReassignmentInProgressError(KafkaError):
    """A partition reassignment is already running."""


@_kafka_error(61, "DELEGATION_TOKEN_AUTH_DISABLED", False)
class DelegationTokenAuthDisabledError(KafkaError):
    """Delegation tokens are turned off."""


@_kafka_error(62, "DELEGATION_TOKEN_NOT_FOUND", False)
class DelegationTokenNotFoundError(KafkaError):
    """No such delegation token."""


@_kafka_error(63, "DELEGATION_TOKEN_OWNER_MISMATCH", False)
class DelegationTokenOwnerMismatchError(KafkaError):
    """The caller neither owns nor may renew the delegation token."""


@_kafka_error(64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False)
class DelegationTokenRequestNotAllowedError(KafkaError):
    """Delegation token requests are not allowed on this connection."""


@_kafka_error(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False)
class DelegationTokenAuthorizationFailedError(KafkaError):
    """Not authorized for the delegation token operation."""


@_kafka_error(66, "DELEGATION_TOKEN_EXPIRED", False)
class DelegationTokenExpiredError(KafkaError):
    """The delegation token has expired."""


@_kafka_error(67, "INVALID_PRINCIPAL_TYPE", False)
class InvalidPrincipalTypeError(KafkaError):
    """The principal type is not supported."""


@_kafka_error(68, "NON_EMPTY_GROUP", False)
class NonEmptyGroupError(KafkaError):
    """The group still has members."""


@_kafka_error(69, "GROUP_ID_NOT_FOUND", False)
class GroupIdNotFoundError(KafkaError):
    """No such group."""


@_kafka_error(70, "FETCH_SESSION_ID_NOT_FOUND", True)
class FetchSessionIdNotFoundError(KafkaError):
    """No fetch session has this id."""


@_kafka_error(71, "INVALID_FETCH_SESSION_EPOCH", True)
class InvalidFetchSessionEpochError(KafkaError):
    """The fetch session epoch is not the expected one."""


@_kafka_error(72, "LISTENER_NOT_FOUND", True)
class ListenerNotFoundError(KafkaError):
    """The leader has no endpoint on the listener the request arrived on."""


@_kafka_error(73, "TOPIC_DELETION_DISABLED", False)
class TopicDeletionDisabledError(KafkaError):
    """Topic deletion is turned off."""


@_kafka_error(74, "FENCED_LEADER_EPOCH", True)
class FencedLeaderEpochError(KafkaError):
    """The leader epoch in the request is older than the broker's."""


@_kafka_error(75, "UNKNOWN_LEADER_EPOCH", True)
class UnknownLeaderEpochError(KafkaError):
    """The leader epoch in the request is newer than the broker's."""


@_kafka_error(76, "UNSUPPORTED_COMPRESSION_TYPE", False)
class UnsupportedCompressionTypeError(KafkaError):
    """That compression type is not supported here."""


@_kafka_error(77, "STALE_BROKER_EPOCH", False)
class StaleBrokerEpochError(KafkaError):
    """The broker epoch is out of date."""


@_kafka_error(78, "OFFSET_NOT_AVAILABLE", True)
class OffsetNotAvailableError(KafkaError):
    """The offset is not available yet: the high watermark has not caught up."""


@_kafka_error(79, "MEMBER_ID_REQUIRED", False)
class MemberIdRequiredError(KafkaError):
    """The group needs a member id: rejoin with the one returned."""


@_kafka_error(80, "PREFERRED_LEADER_NOT_AVAILABLE", True)
class PreferredLeaderNotAvailableError(KafkaError):
    """The preferred leader is not available."""


@_kafka_error(81, "GROUP_MAX_SIZE_REACHED", False)
class GroupMaxSizeReachedError(KafkaError):
    """The group is full."""


@_kafka_error(82, "FENCED_INSTANCE_ID", False)
class FencedInstanceIdError(KafkaError):
    """Another member with the same group instance id has replaced this one."""


@_kafka_error(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True)
class EligibleLeadersNotAvailableError(KafkaError):
    """No replica that may lead the partition is available."""


@_kafka_error(84, "ELECTION_NOT_NEEDED", True)
class ElectionNotNeededError(KafkaError):
    """No leader election was needed."""


@_kafka_error(85, "NO_REASSIGNMENT_IN_PROGRESS", False)
class NoReassignmentInProgressError(KafkaError):
    """No partition reassignment is running."""


@_kafka_error(86, "GROUP_SUBSCRIBED_TO_TOPIC", False)
class GroupSubscribedToTopicError(KafkaError):
    """The group still subscribes to the topic, so its offsets stay."""


@_kafka_error(87, "INVALID_RECORD", False)
class InvalidRecordError(KafkaError):
    """A record failed the broker's validation."""


@_kafka_error(88, "UNSTABLE_OFFSET_COMMIT", True)
class UnstableOffsetCommitError(KafkaError):
    """Some offset commits for the partition are still pending."""


@_kafka_error(89, "THROTTLING_QUOTA_EXCEEDED", True)
class ThrottlingQuotaExceededError(KafkaError):
    """The request went over a throttling quota."""


@_kafka_error(90, "PRODUCER_FENCED", False)
class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional id has replaced this one."""


@_kafka_error(91, "RESOURCE_NOT_FOUND", False)
class ResourceNotFoundError(KafkaError):
    """The resource does not exist."""


@_kafka_error(92, "DUPLICATE_RESOURCE", False)
class DuplicateResourceError(KafkaError):
    """The request names the same resource twice."""


@_kafka_error(93, "UNACCEPTABLE_CREDENTIAL", False)
class UnacceptableCredentialError(KafkaError):
    """The credential does not meet the requirements."""


@_kafka_error(94, "INCONSISTENT_VOTER_SET", False)
class InconsistentVoterSetError(KafkaError):
    """The sender and receiver disagree on the set of voters."""


@_kafka_error(95, "INVALID_UPDATE_VERSION", False)
class InvalidUpdateVersionError(KafkaError):
    """The update version is not valid."""


@_kafka_error(96, "FEATURE_UPDATE_FAILED", False)
class FeatureUpdateFailedError(KafkaError):
    """The feature update could not be applied."""


@_kafka_error(97, "PRINCIPAL_DESERIALIZATION_FAILURE", False)
class PrincipalDeserializationFailureError(KafkaError):
    """The principal of a forwarded request could not be read."""


@_kafka_error(98, "SNAPSHOT_NOT_FOUND", False)
class SnapshotNotFoundError(KafkaError):
    """No such snapshot."""


@_kafka_error(99, "POSITION_OUT_OF_RANGE", False)
class PositionOutOfRangeError(KafkaError):
    """The position lies outside the snapshot."""


@_kafka_error(100, "UNKNOWN_TOPIC_ID", True)
class UnknownTopicIdError(KafkaError):
    """This broker has no topic with that id."""


@_kafka_error(101, "DUPLICATE_BROKER_REGISTRATION", False)
class DuplicateBrokerRegistrationError(KafkaError):
    """A broker with this id is registered already."""


@_kafka_error(102, "BROKER_ID_NOT_REGISTERED", False)
class BrokerIdNotRegisteredError(KafkaError):
    """No broker with this id is registered."""


@_kafka_error(103, "INCONSISTENT_TOPIC_ID", True)
class InconsistentTopicIdError(KafkaError):
    """The topic id does not match the one in the log."""


@_kafka_error(104, "INCONSISTENT_CLUSTER_ID", False)
class InconsistentClusterIdError(KafkaError):
    """The cluster id does not match."""


@_kafka_error(105, "TRANSACTIONAL_ID_NOT_FOUND", False)
class TransactionalIdNotFoundError(KafkaError):
    """No such transactional id."""


@_kafka_error(106, "FETCH_SESSION_TOPIC_ID_ERROR", True)
class FetchSessionTopicIdError(KafkaError):
    """The fetch session changed its use of topic ids."""


@_kafka_error(107, "INELIGIBLE_REPLICA", False)
class IneligibleReplicaError(KafkaError):
    """The proposed in-sync set holds a replica that may not be in it."""


@_kafka_error(108, "NEW_LEADER_ELECTED", False)
class NewLeaderElectedError(KafkaError):
    """A new leader was elected while the in-sync set change was pending."""


@_kafka_error(109, "OFFSET_MOVED_TO_TIERED_STORAGE", False)
class OffsetMovedToTieredStorageError(KafkaError):
    """The offset is now only in tiered storage."""


@_kafka_error(110, "FENCED_MEMBER_EPOCH", False)
class FencedMemberEpochError(KafkaError):
    """The member epoch is fenced; the member must rejoin with epoch zero."""


@_kafka_error(111, "UNRELEASED_INSTANCE_ID", False)
class UnreleasedInstanceIdError(KafkaError):
    """Another member still holds this static instance id."""


@_kafka_error(112, "UNSUPPORTED_ASSIGNOR", False)
class UnsupportedAssignorError(KafkaError):
    """The group does not offer the assignor asked for."""


@_kafka_error(113, "STALE_MEMBER_EPOCH", False)
class StaleMemberEpochError(KafkaError):
    """The member epoch is out of date."""


@_kafka_error(114, "MISMATCHED_ENDPOINT_TYPE", False)
class MismatchedEndpointTypeError(KafkaError):
    """The request reached the wrong kind of endpoint."""


@_kafka_error(115, "UNSUPPORTED_ENDPOINT_TYPE", False)
class UnsupportedEndpointTypeError(KafkaError):
    """This endpoint type does not serve the request."""


@_kafka_error(116, "UNKNOWN_CONTROLLER_ID", False)
class UnknownControllerIdError(KafkaError):
    """No controller with this id is known."""


@_kafka_error(117, "UNKNOWN_SUBSCRIPTION_ID", False)
class UnknownSubscriptionIdError(KafkaError):
    """The client metrics subscription id is unknown or stale."""


@_kafka_error(118, "TELEMETRY_TOO_LARGE", False)
class TelemetryTooLargeError(KafkaError):
    """The client telemetry payload is too large."""


@_kafka_error(119, "INVALID_REGISTRATION", False)
class InvalidRegistrationError(KafkaError):
    """The controller refused the broker registration."""


@_kafka_error(120, "TRANSACTION_ABORTABLE", False)
class TransactionAbortableError(KafkaError):
    """The transaction ran into an error; abort it to go on."""


@_kafka_error(121, "INVALID_RECORD_STATE", False)
class InvalidRecordStateError(KafkaError):
    """The record's delivery state does not allow this acknowledgement."""


@_kafka_error(122, "SHARE_SESSION_NOT_FOUND", True)
class ShareSessionNotFoundError(KafkaError):
    """No share session has this id."""


@_kafka_error(123, "INVALID_SHARE_SESSION_EPOCH", True)
class InvalidShareSessionEpochError(KafkaError):
    """The share session epoch is not the expected one."""


@_kafka_error(124, "FENCED_STATE_EPOCH", False)
class FencedStateEpochError(KafkaError):
    """The share-group state epoch does not match."""


@_kafka_error(125, "INVALID_VOTER_KEY", False)
class InvalidVoterKeyError(KafkaError):
    """The voter key does not match this replica."""


@_kafka_error(126, "DUPLICATE_VOTER", False)
class DuplicateVoterError(KafkaError):
    """The voter is in the voter set already."""


@_kafka_error(127, "VOTER_NOT_FOUND", False)
class VoterNotFoundError(KafkaError):
    """The voter is not in the voter set."""


@_kafka_error(128, "INVALID_REGULAR_EXPRESSION", False)
class InvalidRegularExpressionError(KafkaError):
    """The regular expression is not valid."""


@_kafka_error(129, "REBOOTSTRAP_REQUIRED", False)
class RebootstrapRequiredError(KafkaError):
    """The client's metadata is stale; it has to bootstrap again."""


@_kafka_error(130, "STREAMS_INVALID_TOPOLOGY", False)
class StreamsInvalidTopologyError(KafkaError):
    """The Streams topology is not valid."""


@_kafka_error(131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False)
class StreamsInvalidTopologyEpochError(KafkaError):
    """The Streams topology epoch is not valid."""


@_kafka_error(132, "STREAMS_TOPOLOGY_FENCED", False)
class StreamsTopologyFencedError(KafkaError):
    """The Streams topology epoch is out of date."""


@_kafka_error(133, "SHARE_SESSION_LIMIT_REACHED", True)
class ShareSessionLimitReachedError(KafkaError):
    """The broker cannot open more share sessions."""


class ErrorCode(enum.IntEnum):
    """Every Kafka error code by its Kafka name: ``ErrorCode.NOT_LEADER_OR_FOLLOWER == 6``."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133


# Classes made at run time for codes this table does not know, one per code, kept so that
# the same code always gives the same class.
_GENERATED: dict[int, type[UnknownServerError]] = {}


def _is_generated(cls: type[KafkaError]) -> bool:
    return _GENERATED.get(cls.code) is cls


def error_for_code(code: int) -> type[KafkaError]:
    """The class for a Kafka error code.

    A code missing from the table (a newer broker's) gets a subclass of
    ``UnknownServerError`` that keeps the code, as Kafka's own clients treat unknown codes as
    UNKNOWN_SERVER_ERROR; it never raises ``KeyError``.
    """
    known = ERRORS.get(code)
    if known is not None:
        return known
    made = _GENERATED.get(code)
    if made is None:
        made = type(
            "UnknownErrorCodeError",
            (UnknownServerError,),
            {
                "__doc__": f"Error code {code}, which this table does not know.",
                "__module__": __name__,
                "code": code,
                "message": f"The broker returned error code {code}, unknown to kafkagen.",
            },
        )
        _GENERATED[code] = made
    return made


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the error for ``code`` (with ``message`` if given); do nothing for 0 (NONE)."""
    if code != 0:
        raise error_for_code(code)(message)


def _rebuild_error(cls: type[KafkaError] | None, code: int, args: tuple[Any, ...]) -> KafkaError:
    """Unpickling helper of KafkaError: make a bare instance, pickle then sets __dict__."""
    target = cls if cls is not None else error_for_code(code)
    obj = target.__new__(target)
    obj.args = args
    return obj


# --- Errors of record sets (record batches) ----------------------------------------------
#
# Each is also the table class of the code Kafka answers with, so a broker can turn one into
# a response error code with `.code`, and users can catch either the specific class or the
# table class (e.g. CorruptMessageError).


class RecordSetError(KafkaError):
    """A record set (concatenated record batches) failed to parse or validate.

    ``reason`` says what was wrong, ``batch_index`` which batch (0-based, -1 if not known)
    and ``offset`` the byte position of that batch in the record set (-1 if not known).
    ``record_errors`` lists ``(record index in the batch, reason)`` for per-record failures,
    the shape of the record errors in a Produce response.
    """

    def __init__(
        self,
        reason: str,
        batch_index: int = -1,
        offset: int = -1,
        record_errors: Sequence[tuple[int, str]] = (),
    ) -> None:
        self.reason = reason
        self.batch_index = batch_index
        self.offset = offset
        self.record_errors = list(record_errors)
        where = []
        if batch_index >= 0:
            where.append(f"batch {batch_index}")
        if offset >= 0:
            where.append(f"at byte {offset}")
        super().__init__(f"{reason} ({' '.join(where)})" if where else reason)


class CorruptRecordError(RecordSetError, CorruptMessageError):
    """Bad checksum, size, magic or compressed payload: CORRUPT_MESSAGE (2)."""


class InvalidRecordSetError(RecordSetError, InvalidRecordError):
    """Records that are well framed but break the format's rules: INVALID_RECORD (87)."""


class UnsupportedRecordFormatError(RecordSetError, UnsupportedForMessageFormatError):
    """A record format older than magic v2: UNSUPPORTED_FOR_MESSAGE_FORMAT (43)."""


class RecordBatchTooLargeError(RecordSetError, MessageTooLargeError):
    """A batch over the size limit: MESSAGE_TOO_LARGE (10)."""


class InvalidRecordTimestampError(RecordSetError, InvalidTimestampError):
    """Record timestamps outside the accepted window: INVALID_TIMESTAMP (32)."""


class UnsupportedCodecError(RecordSetError, UnsupportedCompressionTypeError):
    """A compression codec that cannot be used here: UNSUPPORTED_COMPRESSION_TYPE (76).

    Raised when the library a codec needs (cramjam) is missing, and for zstd in Produce
    requests older than version 7.
    """
