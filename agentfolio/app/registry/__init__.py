"""The agent registry's use cases: typed inputs in, typed outputs out, refusals as errors.

:class:`RegistryService` is what the API, the viewer and the CLI call; it knows nothing
of HTTP.  Persistence is :mod:`agentfolio.store.registry` (scoped per account), the
rules are :mod:`agentfolio.registry`.
"""

from agentfolio.app.registry.errors import (
    BadRequest,
    IdempotencyKeyReused,
    InvalidAction,
    InvalidValue,
    NotFound,
    NotPermitted,
    RegistryRefusal,
    Unexpected,
    WriteConflict,
)
from agentfolio.app.registry.inputs import (
    UNSET,
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentList,
    AgentReinstate,
    AgentRetire,
    AgentShow,
    AgentUpdate,
    Command,
    InstanceFinish,
    InstanceGet,
    InstanceList,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    InstanceTerminate,
    PageRequest,
    SchemaVersionCreate,
    SchemaVersionGet,
    Sorting,
    SpanCreate,
    SpanFinish,
    SpanGet,
    SpanList,
)
from agentfolio.app.registry.outputs import (
    Agent,
    Caller,
    Control,
    DeploymentToken,
    Instance,
    Page,
    RiskReport,
    SchemaVersion,
    Span,
    SpanWritten,
)
from agentfolio.app.registry.service import BulkAnswer, BulkItem, Output, RegistryService
from agentfolio.app.registry.work import Principal

__all__ = [
    "UNSET", "Agent", "AgentCreate", "AgentDelete", "AgentGet", "AgentList", "AgentReinstate", "AgentRetire",
    "AgentShow", "AgentUpdate", "BadRequest", "BulkAnswer", "BulkItem", "Caller", "Command", "Control",
    "DeploymentToken", "IdempotencyKeyReused", "Instance", "InstanceFinish", "InstanceGet", "InstanceList",
    "InstanceRecordQuality", "InstanceRegister", "InstanceStart", "InstanceTerminate", "InvalidAction",
    "InvalidValue", "NotFound", "NotPermitted", "Output", "Page", "PageRequest", "Principal", "RegistryRefusal",
    "RegistryService", "RiskReport", "SchemaVersion", "SchemaVersionCreate", "SchemaVersionGet", "Sorting", "Span",
    "SpanCreate", "SpanFinish", "SpanGet", "SpanList", "SpanWritten", "Unexpected", "WriteConflict",
]
