"""Request handlers, one module per API: ``api_<key>_<name>.py``, each defining ``handle``.

`SERVED` is the one place that says which APIs and versions the broker serves.
`declare_handlers` fills the registry of `kafkagen.runtime.broker.api` from it without
importing a handler module or its codec: each is imported on the first request of its API,
which keeps a broker's start short. `load_handlers` imports them all (tests, tooling).
Handlers only translate between the wire messages and the broker's state objects: they
call the replica manager or a coordinator and answer from the callback.
"""

from __future__ import annotations

import importlib

from kafkagen.runtime.broker.api import HANDLERS, TELEMETRY_APIS, ApiHandler, HandlerFn, declare

__all__ = ["SERVED", "declare_handlers", "load_handlers", "supported_versions"]

#: API key -> (module, lowest version, highest stable version, highest unstable version).
#: The unstable tops are the paged versions (see `kafkagen.runtime.pagination`) or a newer
#: protocol still gated in Kafka 4.4.0.
SERVED: dict[int, tuple[str, int, int, int]] = {
    0: ("api_00_produce", 0, 13, 13),
    1: ("api_01_fetch", 0, 18, 18),
    2: ("api_02_list_offsets", 0, 11, 12),
    3: ("api_03_metadata", 0, 13, 14),
    8: ("api_08_offset_commit", 0, 10, 10),
    9: ("api_09_offset_fetch", 0, 10, 11),
    10: ("api_10_find_coordinator", 0, 6, 6),
    11: ("api_11_join_group", 0, 9, 9),
    12: ("api_12_heartbeat", 0, 4, 4),
    13: ("api_13_leave_group", 0, 5, 5),
    14: ("api_14_sync_group", 0, 5, 5),
    15: ("api_15_describe_groups", 0, 6, 7),
    16: ("api_16_list_groups", 0, 5, 6),
    17: ("api_17_sasl_handshake", 0, 1, 1),
    18: ("api_18_api_versions", 0, 5, 5),
    19: ("api_19_create_topics", 0, 7, 7),
    20: ("api_20_delete_topics", 0, 6, 6),
    21: ("api_21_delete_records", 0, 2, 2),
    22: ("api_22_init_producer_id", 0, 5, 6),
    23: ("api_23_offset_for_leader_epoch", 0, 4, 4),
    24: ("api_24_add_partitions_to_txn", 0, 5, 5),
    25: ("api_25_add_offsets_to_txn", 0, 4, 4),
    26: ("api_26_end_txn", 0, 5, 5),
    27: ("api_27_write_txn_markers", 0, 2, 2),
    28: ("api_28_txn_offset_commit", 0, 6, 6),
    29: ("api_29_describe_acls", 0, 3, 4),
    30: ("api_30_create_acls", 0, 3, 3),
    31: ("api_31_delete_acls", 0, 3, 3),
    32: ("api_32_describe_configs", 0, 4, 5),
    33: ("api_33_alter_configs", 0, 2, 2),
    34: ("api_34_alter_replica_log_dirs", 0, 2, 2),
    35: ("api_35_describe_log_dirs", 0, 5, 6),
    36: ("api_36_sasl_authenticate", 0, 2, 2),
    37: ("api_37_create_partitions", 0, 3, 3),
    38: ("api_38_create_delegation_token", 0, 3, 3),
    39: ("api_39_renew_delegation_token", 0, 2, 2),
    40: ("api_40_expire_delegation_token", 0, 2, 2),
    41: ("api_41_describe_delegation_token", 0, 3, 3),
    42: ("api_42_delete_groups", 0, 3, 3),
    43: ("api_43_elect_leaders", 0, 2, 2),
    44: ("api_44_incremental_alter_configs", 0, 1, 1),
    45: ("api_45_alter_partition_reassignments", 0, 1, 1),
    46: ("api_46_list_partition_reassignments", 0, 0, 1),
    47: ("api_47_offset_delete", 0, 0, 0),
    48: ("api_48_describe_client_quotas", 0, 1, 1),
    49: ("api_49_alter_client_quotas", 0, 1, 1),
    50: ("api_50_describe_user_scram_credentials", 0, 0, 0),
    51: ("api_51_alter_user_scram_credentials", 0, 0, 0),
    55: ("api_55_describe_quorum", 0, 2, 2),
    57: ("api_57_update_features", 0, 2, 2),
    60: ("api_60_describe_cluster", 0, 2, 2),
    61: ("api_61_describe_producers", 0, 0, 1),
    65: ("api_65_describe_transactions", 0, 0, 1),
    66: ("api_66_list_transactions", 0, 2, 3),
    68: ("api_68_consumer_group_heartbeat", 0, 1, 1),
    69: ("api_69_consumer_group_describe", 0, 1, 2),
    71: ("api_71_get_telemetry_subscriptions", 0, 0, 0),
    72: ("api_72_push_telemetry", 0, 0, 0),
    74: ("api_74_list_config_resources", 0, 1, 1),
    75: ("api_75_describe_topic_partitions", 0, 0, 0),
    76: ("api_76_share_group_heartbeat", 1, 1, 1),
    77: ("api_77_share_group_describe", 1, 1, 1),
    78: ("api_78_share_fetch", 1, 2, 2),
    79: ("api_79_share_acknowledge", 1, 2, 2),
    83: ("api_83_initialize_share_group_state", 0, 0, 0),
    84: ("api_84_read_share_group_state", 0, 0, 0),
    85: ("api_85_write_share_group_state", 0, 1, 1),
    86: ("api_86_delete_share_group_state", 0, 0, 0),
    87: ("api_87_read_share_group_state_summary", 0, 1, 1),
    88: ("api_88_streams_group_heartbeat", 0, 1, 1),
    89: ("api_89_streams_group_describe", 0, 1, 1),
    90: ("api_90_describe_share_group_offsets", 0, 1, 1),
    91: ("api_91_alter_share_group_offsets", 0, 0, 0),
    92: ("api_92_delete_share_group_offsets", 0, 0, 0),
    93: ("api_93_streams_group_topology_description_update", 0, 0, 0),
}


def _loader(module: str) -> HandlerFn:
    handle: HandlerFn = importlib.import_module(f"{__name__}.{module}").handle
    return handle


def declare_handlers() -> dict[int, ApiHandler]:
    """The registry, filled from `SERVED` (once); no handler module is imported yet."""
    for key, (module, low, high, unstable_high) in SERVED.items():
        if key not in HANDLERS:
            declare(key, module, low, high, unstable_high, _loader)
    return HANDLERS


def load_handlers() -> dict[int, ApiHandler]:
    """The registry with every handler module imported and checked against its codec."""
    for handler in declare_handlers().values():
        handler.resolve()
    return HANDLERS


def supported_versions(unstable: bool, telemetry: bool = False) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) for every registered handler, as ApiVersions advertises it
    (the client telemetry APIs only with ``kafkagen.client.telemetry.enable``)."""
    declare_handlers()
    return {
        k: (h.min_version, h.max_for(unstable))
        for k, h in sorted(HANDLERS.items())
        if telemetry or k not in TELEMETRY_APIS
    }
