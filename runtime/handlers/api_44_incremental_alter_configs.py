"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from configs."""

from __future__ import annotations

from kafkagen.generated.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.config.definitions import ConfigError, ConfigResourceType
from kafkagen.runtime.broker.metadata.config_changes import incremental_alter
from kafkagen.runtime.broker.security.acls import AclOperation
from kafkagen.runtime.errors import InvalidConfigError, InvalidRequestError, KafkaError
from kafkagen.runtime.handlers._util import require_config_access

API_KEY = 44
Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> None:
    results = []
    for res in request.resources:
        result = Result(
            error_message=None, resource_type=res.resource_type, resource_name=res.resource_name
        )
        try:
            require_config_access(
                ctx, res.resource_type, res.resource_name, AclOperation.ALTER_CONFIGS
            )
            incremental_alter(
                ctx.broker.configs,
                ctx.broker.metadata,
                res.resource_type,
                res.resource_name,
                ((c.name, c.config_operation, c.value) for c in res.configs),
                request.validate_only,
            )
        except ConfigError as e:
            # Kafka answers a bad broker config with INVALID_REQUEST, a bad topic one with
            # INVALID_CONFIG.
            error = (
                InvalidConfigError
                if res.resource_type == ConfigResourceType.TOPIC
                else InvalidRequestError
            )
            result.error_code, result.error_message = error.code, str(e)
        except KafkaError as e:
            result.error_code, result.error_message = e.code, e.message
        results.append(result)
    ctx.respond(IncrementalAlterConfigsResponse(responses=results))
