"""Typed outputs of the registry's operations.

Field names are the registry's vocabulary (the Prefactor API's), so ``model_dump(mode="json")``
is an object's wire form: timestamps as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, and the
optional extras (counts, risk) left out when they were not asked for.  Idempotency
records keep an output's JSON and replay it through ``model_validate_json``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

__all__ = [
    "Agent",
    "AgentActions",
    "Alert",
    "AlertCountOutput",
    "Caller",
    "Control",
    "DeploymentToken",
    "Instance",
    "Page",
    "RiskProfileOutput",
    "RiskReport",
    "SchemaVersion",
    "SchemaVersionRisk",
    "Span",
    "SpanWritten",
    "from_micros",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _wire_time(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond:06d}Z"


#: A moment, answered with microseconds and ``Z`` whatever its value.
Timestamp = Annotated[datetime, PlainSerializer(_wire_time, return_type=str, when_used="json")]


def from_micros(us: int | None) -> datetime | None:
    return None if us is None else EPOCH + timedelta(microseconds=us)


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True)


def _is_none(value: object) -> bool:
    return value is None


def _extra() -> Any:
    """An extra a request did not ask for: ``None``, and then left out of the dump."""
    return Field(default=None, exclude_if=_is_none)


class AgentActions(_Output):
    update: bool
    retire: bool
    reinstate: bool
    delete: bool


class Agent(_Output):
    type: Literal["agent"] = "agent"
    id: str
    account_id: str
    name: str
    description: str | None
    external_identifier: str | None
    status: str
    owner_person_id: str | None
    risk_profile_id: str | None
    team_id: str | None
    current_version_id: str | None
    current_schema_version_id: str | None
    available_actions: AgentActions
    inserted_at: Timestamp
    updated_at: Timestamp
    #: instances per status (``total`` and ``finished`` too); left out of lists
    instance_counts: dict[str, int] | None = _extra()
    risk_rollup: dict[str, Any] | None = _extra()
    risk_rollup_by_schema_version: dict[str, Any] | None = _extra()


class SchemaVersion(_Output):
    type: Literal["agent_schema_version"] = "agent_schema_version"
    id: str
    account_id: str
    agent_id: str
    external_identifier: str | None
    #: stored versions of the agent sharing this external identifier, this one included
    external_identifier_repeats: int
    current_agent_deployment_refs: list[str]
    span_type_schemas: dict[str, Any]
    quality_schemas: Any
    inserted_at: Timestamp
    updated_at: Timestamp


class Instance(_Output):
    type: Literal["agent_instance"] = "agent_instance"
    id: str
    account_id: str
    agent_id: str
    agent_version_id: str
    agent_schema_version_id: str | None
    environment_id: str
    agent_deployment_id: str
    status: str
    inserted_at: Timestamp
    updated_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    termination_reason: str | None
    external_identifier: str | None
    purpose: str
    session_id: str | None
    span_counts: dict[str, int]
    quality_payloads: dict[str, Any]
    quality_summaries: dict[str, Any]
    quality_validation: dict[str, Any]
    #: the open dashboard's reading: every payload by name (``None``: none), the summaries joined
    quality_payload: dict[str, Any] | None = None
    quality_summary: str | None = None
    risk_score: float | None = _extra()
    risk_level: str | None = _extra()
    risk: dict[str, Any] | None = _extra()


class Span(_Output):
    type: Literal["agent_span"] = "agent_span"
    id: str
    account_id: str
    agent_id: str
    agent_instance_id: str
    agent_schema_version_id: str | None
    parent_span_id: str | None
    schema_name: str
    schema_title: str
    status: str
    payload: Any
    result_payload: Any
    #: the span type's template rendered (only when asked for)
    summary: str | None
    started_at: Timestamp | None
    finished_at: Timestamp | None
    inserted_at: Timestamp
    updated_at: Timestamp
    validation: dict[str, Any]
    #: values in ``$sensitive`` wrappers are kept encoded and answered masked
    sensitive_encoding: bool
    session_id: str | None
    #: the run's purpose (live, smoke_test, eval), which the dashboard reads per span
    purpose: str | None = None
    risk_score: float | None = _extra()
    risk_level: str | None = _extra()


class Control(_Output):
    """What the agent should do next: stop, when its instance was terminated."""

    terminate: bool
    reason: str


class SpanWritten(_Output):
    """A span as created or finished, with the instruction its agent polls for."""

    span: Span
    control: Control | None = None


T = TypeVar("T")


class Page(_Output, Generic[T]):
    """One page of a list: the items, where the page sits (``pagination``) and its order."""

    items: list[T]
    pagination: dict[str, Any]
    sorting: dict[str, str]


class SchemaVersionRisk(_Output):
    id: str
    external_identifier: str | None
    current: bool
    rollup: dict[str, Any]
    span_types: list[dict[str, Any]]


class RiskReport(_Output):
    """An agent's risk roll-up over all its schema versions and per version, scored under
    the account's risk profile."""

    agent_id: str
    name: str
    external_identifier: str | None
    risk_profile: str
    #: the highest level of its span types (and of their combinations' flags); ``unknown``
    #: when no span type declares enough to score
    risk_level: str
    #: the highest span type score
    risk_score: float
    rollup: dict[str, Any]
    schema_versions: list[SchemaVersionRisk]


class Caller(_Output):
    """Who a token speaks for."""

    account_id: str
    account_name: str
    token_scope: Literal["account", "deployment"]
    agent_id: str | None
    environment_id: str | None
    agent_deployment_id: str | None
    default_environment_id: str


class DeploymentToken(_Output):
    """A new deployment token (shown once) and where it acts."""

    token: str
    agent_id: str
    environment_id: str
    agent_deployment_id: str


class RiskProfileOutput(_Output):
    """A risk profile: weights per data category, multipliers per action, thresholds, and
    how many agents it scores."""

    type: Literal["risk_profile"] = "risk_profile"
    id: str
    account_id: str
    name: str
    description: str | None
    categories: dict[str, Any]
    actions: dict[str, Any]
    thresholds: dict[str, Any]
    #: the profile agents without one of their own are scored under
    is_default: bool
    agent_count: int
    inserted_at: Timestamp | None
    updated_at: Timestamp | None


class Alert(_Output):
    type: Literal["alert"] = "alert"
    id: str
    account_id: str
    kind: str
    severity: str
    message: str
    agent_id: str
    agent_instance_id: str | None
    agent_span_id: str | None
    agent_schema_version_id: str | None
    inserted_at: Timestamp
    acknowledged: bool
    acknowledged_at: Timestamp | None


class AlertCountOutput(_Output):
    """Open (unacknowledged) alerts; after an acknowledgement, how many it acknowledged."""

    count: int
    acknowledged: int | None = _extra()
