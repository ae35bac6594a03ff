"""Typed inputs of the registry's operations.

Each input checks its own values when it is made (lengths, NUL characters, kinds), so a
refusal names the field whichever front end built it.  ``OPERATION`` names the
operation in idempotency records: a replay must name the same operation and key.
Ids of existing objects are ``str | None`` (``None``: the caller named something that
cannot be an id, which finds nothing).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, ClassVar, Literal, Union

import orjson

from agentfolio import _json
from agentfolio.app.registry.errors import field_error
from agentfolio.app.registry.fields import (
    PURPOSES,
    REASON_CHARS,
    REFERENCE_CHARS,
    SESSION_CHARS,
    TEXT_CHARS,
    chosen_id,
    given_text,
    json_object,
    text,
)
from agentfolio.registry.listing import PageRequest, Sorting
from agentfolio.registry.schema_versions import SchemaVersionDraft

__all__ = [
    "AGENT_SORT_FIELDS",
    "ALERT_SORT_FIELDS",
    "INSTANCE_SORT_FIELDS",
    "PROFILE_SORT_FIELDS",
    "SPAN_SORT_FIELDS",
    "UNSET",
    "AgentCreate",
    "AgentDelete",
    "AgentGet",
    "AgentList",
    "AgentReinstate",
    "AgentRetire",
    "AgentShow",
    "AgentUpdate",
    "AlertAcknowledge",
    "AlertCount",
    "AlertGet",
    "AlertList",
    "Command",
    "InstanceFinish",
    "InstanceGet",
    "InstanceList",
    "InstanceRecordQuality",
    "InstanceRegister",
    "InstanceStart",
    "InstanceTerminate",
    "PageRequest",
    "RiskProfileCreate",
    "RiskProfileGet",
    "RiskProfileList",
    "SchemaVersionCreate",
    "SchemaVersionGet",
    "Sorting",
    "SpanCreate",
    "SpanFinish",
    "SpanGet",
    "SpanList",
    "Unset",
    "fingerprint",
]

#: The fields each list can be sorted by.
AGENT_SORT_FIELDS = ("id", "name", "status", "inserted_at", "updated_at")
INSTANCE_SORT_FIELDS = ("id", "status", "inserted_at", "updated_at", "started_at", "finished_at")
SPAN_SORT_FIELDS = ("id", "status", "schema_name", "inserted_at", "updated_at", "started_at", "finished_at")
DEFAULT_PAGE = PageRequest(0, 25, Sorting("id", "asc"))


class Unset:
    """A field the caller left out (an update changes only the fields it names)."""

    _instance: ClassVar[Unset | None] = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()


def _canonical(value: Any) -> Any:
    if isinstance(value, Unset):
        return {"$unset": True}
    if isinstance(value, SchemaVersionDraft):
        return {"id": value.id, "agent_id": value.agent_id, "external_identifier": value.external_identifier,
                "span_types": value.span_type_schemas_json(), "quality": value.quality_schemas_json()}
    if isinstance(value, (PageRequest, Sorting)):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def fingerprint(command: Any) -> str:
    """SHA-256 of an input's canonical JSON: equal for equal requests."""
    content = {item.name: _canonical(getattr(command, item.name)) for item in fields(command)}
    content["$operation"] = command.OPERATION
    return hashlib.sha256(_json.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
                                       default=repr)).hexdigest()


def _set(instance: object, name: str, value: object) -> None:
    object.__setattr__(instance, name, value)


# --------------------------------------------------------------------------- agents


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentCreate:
    OPERATION: ClassVar[str] = "agents/create"
    name: str
    description: str | None = None
    external_identifier: str | None = None
    owner_person_id: str | None = None
    risk_profile_id: str | None = None
    team_id: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        text(self.name, "name", required=True)
        text(self.description, "description", limit=TEXT_CHARS)
        text(self.external_identifier, "external_identifier")
        for name in ("owner_person_id", "risk_profile_id", "team_id"):
            text(getattr(self, name), name, limit=REFERENCE_CHARS)
        chosen_id(self.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentUpdate:
    """Only the fields given change; ``external_identifier`` can only repeat the current one."""

    OPERATION: ClassVar[str] = "agents/update"
    agent_id: str | None
    name: str | Unset = UNSET
    description: str | Unset | None = UNSET
    owner_person_id: str | Unset | None = UNSET
    risk_profile_id: str | Unset | None = UNSET
    team_id: str | Unset | None = UNSET
    external_identifier: object = UNSET

    def __post_init__(self) -> None:
        if not isinstance(self.name, Unset):
            text(self.name, "name", required=True)
        if not isinstance(self.description, Unset):
            text(self.description, "description", limit=TEXT_CHARS)
        for name in ("owner_person_id", "risk_profile_id", "team_id"):
            value = getattr(self, name)
            if not isinstance(value, Unset):
                text(value, name, limit=REFERENCE_CHARS)

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name)
                for name in ("name", "description", "owner_person_id", "risk_profile_id", "team_id")
                if not isinstance(getattr(self, name), Unset)}


@dataclass(frozen=True, slots=True)
class AgentRetire:
    OPERATION: ClassVar[str] = "agents/retire"
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class AgentReinstate:
    OPERATION: ClassVar[str] = "agents/reinstate"
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class AgentDelete:
    """The agent with its versions, instances and spans."""

    OPERATION: ClassVar[str] = "agents/delete"
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class AgentGet:
    OPERATION: ClassVar[str] = "agents/get"
    agent_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentShow:
    """An agent by id or by external identifier (exactly one of them)."""

    OPERATION: ClassVar[str] = "agents/show"
    agent_id: str | None = None
    external_identifier: str | None = None
    include_risk_rollup: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentList:
    OPERATION: ClassVar[str] = "agents/list"
    page: PageRequest = DEFAULT_PAGE
    risk_profile_id: str | None = None
    team_id: str | None = None
    owner_person_id: str | None = None
    status: str | None = None

    def filters(self) -> dict[str, str]:
        return {name: value for name in ("risk_profile_id", "team_id", "owner_person_id", "status")
                if isinstance(value := getattr(self, name), str)}


# --------------------------------------------------------------------------- schema versions


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaVersionCreate:
    """``agent_id`` may be left out with a deployment token (its agent is meant)."""

    OPERATION: ClassVar[str] = "agent_schema_versions/create"
    agent_id: str | None
    draft: SchemaVersionDraft


@dataclass(frozen=True, slots=True)
class SchemaVersionGet:
    OPERATION: ClassVar[str] = "agent_schema_versions/get"
    agent_schema_version_id: str | None


# --------------------------------------------------------------------------- instances


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceRegister:
    """A new run of an agent.  With a deployment token, ``agent_id`` (when given) must be
    the token's agent and ``environment_id`` is the token's environment."""

    OPERATION: ClassVar[str] = "agent_instances/register"
    agent_id: str | None = None
    environment_id: str | None = None
    agent_version: dict[str, Any] | None = None
    agent_schema_version: SchemaVersionDraft | None = None
    update_current_version: bool = True
    purpose: Literal["live", "smoke_test", "eval"] = "live"
    external_identifier: str | None = None
    session_id: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        # The agent is named by id or by external identifier: text that says something
        # (a number or an object is no name, and must not become one).
        given_text(self.agent_id, "agent_id")
        text(self.environment_id, "environment_id")
        if self.agent_version is not None and not isinstance(self.agent_version, dict):
            raise field_error("agent_version", "must be an object")
        if self.purpose not in PURPOSES:
            shown = repr(self.purpose) if isinstance(self.purpose, str) else type(self.purpose).__name__
            raise field_error("purpose", f"{shown} is not one of {', '.join(PURPOSES)}")
        text(self.external_identifier, "external_identifier")
        text(self.session_id, "session_id", limit=SESSION_CHARS)
        chosen_id(self.id)
        version = self.agent_version or {}
        for name in ("name", "external_identifier"):
            text(version.get(name), f"agent_version.{name}")
        text(version.get("description"), "agent_version.description", limit=TEXT_CHARS)

    def version_content(self) -> dict[str, Any]:
        """The declared agent version (what identifies it)."""
        raw = self.agent_version or {}
        return {key: raw.get(key) for key in ("name", "external_identifier", "description", "runtime_environment")}


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceStart:
    OPERATION: ClassVar[str] = "agent_instances/start"
    agent_instance_id: str | None
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceFinish:
    """``status``: complete (default), failed or cancelled; checked by the lifecycle rules."""

    OPERATION: ClassVar[str] = "agent_instances/finish"
    agent_instance_id: str | None
    status: object = None
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceRecordQuality:
    """Record a quality payload under ``name``; ``payload=None`` removes it."""

    OPERATION: ClassVar[str] = "agent_instances/record_quality"
    agent_instance_id: str | None
    name: str
    payload: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        text(self.name, "name", required=True)
        json_object(self.payload, "payload")


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceTerminate:
    OPERATION: ClassVar[str] = "agent_instances/terminate"
    agent_instance_id: str | None
    reason: str | None = None

    def __post_init__(self) -> None:
        text(self.reason, "reason", limit=REASON_CHARS)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceGet:
    OPERATION: ClassVar[str] = "agent_instances/get"
    agent_instance_id: str | None
    include_risk_level: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceList:
    OPERATION: ClassVar[str] = "agent_instances/list"
    page: PageRequest = DEFAULT_PAGE
    agent_id: str | None = None
    status: str | None = None
    environment_id: str | None = None
    session_id: str | None = None
    include_risk_level: bool = False

    def filters(self) -> dict[str, str]:
        return {name: value for name in ("agent_id", "status", "environment_id", "session_id")
                if isinstance(value := getattr(self, name), str)}


# --------------------------------------------------------------------------- spans


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanCreate:
    """A span of an instance.  Never refused for its content: it is validated against
    its span type and stored with the result.  ``parent_span_id`` is kept as given (up to
    200 characters) and flagged when it names no span of the instance."""

    OPERATION: ClassVar[str] = "agent_spans/create"
    agent_instance_id: str | None
    schema_name: str
    status: object = "active"
    payload: dict[str, Any] | None = None
    result_payload: dict[str, Any] | None = None
    parent_span_id: str | None = None
    sensitive_encoding: bool = False
    session_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        text(self.agent_instance_id, "agent_instance_id", required=True)
        text(self.schema_name, "schema_name", required=True)
        if self.payload is not None and not isinstance(self.payload, dict):
            raise field_error("payload", "must be a JSON object")
        json_object(self.result_payload, "result_payload")
        chosen_id(self.id)
        text(self.session_id, "session_id", limit=SESSION_CHARS)
        if self.parent_span_id is not None:
            parent = self.parent_span_id
            if not isinstance(parent, str):
                parent = _json.dumps(parent).decode()
            _set(self, "parent_span_id", parent.replace("\x00", "\ufffd")[:SESSION_CHARS])


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanFinish:
    OPERATION: ClassVar[str] = "agent_spans/finish"
    agent_span_id: str | None
    status: object = None
    result_payload: dict[str, Any] | None = None
    timestamp: datetime | None = None
    #: the result carries ``$sensitive`` wrappers (the TypeScript SDK says so on finish)
    sensitive_encoding: bool = False

    def __post_init__(self) -> None:
        json_object(self.result_payload, "result_payload")


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanGet:
    OPERATION: ClassVar[str] = "agent_spans/get"
    agent_span_id: str | None
    include_summaries: bool = False
    include_risk_level: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanList:
    OPERATION: ClassVar[str] = "agent_spans/list"
    page: PageRequest = DEFAULT_PAGE
    agent_id: str | None = None
    agent_instance_id: str | None = None
    status: str | None = None
    schema_name: str | None = None
    validation_status: str | None = None
    parent_span_id: str | None = None
    session_id: str | None = None
    include_summaries: bool = False
    include_risk_level: bool = False

    def filters(self) -> dict[str, str]:
        return {name: value for name in ("agent_id", "agent_instance_id", "status", "schema_name",
                                         "validation_status", "parent_span_id", "session_id")
                if isinstance(value := getattr(self, name), str)}


# --------------------------------------------------------------------------- governance

PROFILE_SORT_FIELDS = ("id", "name", "inserted_at", "updated_at")
ALERT_SORT_FIELDS = ("id", "kind", "severity", "inserted_at")
PROFILE_TEMPLATES = ("default", "empty")


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskProfileList:
    """``account_id``: the dashboard names its own account; another is not found."""

    OPERATION: ClassVar[str] = "risk_profiles/list"
    page: PageRequest = DEFAULT_PAGE
    account_id: str | None = None


@dataclass(frozen=True, slots=True)
class RiskProfileGet:
    """``default``: the profile agents without one of their own are scored under."""

    OPERATION: ClassVar[str] = "risk_profiles/get"
    risk_profile_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskProfileCreate:
    """A profile from a ``template`` (``default`` or ``empty``) with the given category
    rules (``{weight, included}``), action rules (``{multiplier, included}``) and
    thresholds (``{medium, high, critical}``) over it."""

    OPERATION: ClassVar[str] = "risk_profiles/create"
    name: str
    description: str | None = None
    template: str = "default"
    categories: dict[str, Any] | None = None
    actions: dict[str, Any] | None = None
    thresholds: dict[str, Any] | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        text(self.name, "details.name", required=True)
        text(self.description, "details.description", limit=TEXT_CHARS)
        if self.template not in PROFILE_TEMPLATES:
            raise field_error("details.template", f"{self.template!r} is not one of {', '.join(PROFILE_TEMPLATES)}")
        for name in ("categories", "actions", "thresholds"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise field_error(f"details.{name}", "must be an object")
        chosen_id(self.id, "details.id")


@dataclass(frozen=True, slots=True)
class AlertCount:
    OPERATION: ClassVar[str] = "alerts/count"


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertList:
    """``acknowledged``: ``False`` (default) the open ones, ``True`` the acknowledged, ``None`` all."""

    OPERATION: ClassVar[str] = "alerts/list"
    page: PageRequest = DEFAULT_PAGE
    acknowledged: bool | None = False
    kind: str | None = None
    severity: str | None = None
    agent_id: str | None = None
    instance_id: str | None = None

    def filters(self) -> dict[str, str]:
        return {name: value for name in ("kind", "severity", "agent_id", "instance_id")
                if isinstance(value := getattr(self, name), str)}


@dataclass(frozen=True, slots=True)
class AlertGet:
    OPERATION: ClassVar[str] = "alerts/get"
    alert_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertAcknowledge:
    """The alerts named, or with ``everything`` every open alert matching the filters."""

    OPERATION: ClassVar[str] = "alerts/acknowledge"
    alert_ids: tuple[str, ...] = ()
    everything: bool = False
    kind: str | None = None
    agent_id: str | None = None

    def __post_init__(self) -> None:
        if not self.everything and not self.alert_ids:
            raise field_error("alert_ids", "name the alerts to acknowledge, or give all=true", code="required_value")
        if len(self.alert_ids) > 1000:
            raise field_error("alert_ids", f"has {len(self.alert_ids):,} ids, over the 1,000 limit")
        for index, alert_id in enumerate(self.alert_ids):
            text(alert_id, f"alert_ids[{index}]", required=True, limit=REFERENCE_CHARS)

    def filters(self) -> dict[str, str]:
        return {name: value for name in ("kind", "agent_id") if isinstance(value := getattr(self, name), str)}


#: Every input an operation takes (what a bulk item may carry).
Command = Union[
    AgentCreate, AgentUpdate, AgentRetire, AgentReinstate, AgentDelete, AgentGet, AgentShow, AgentList,
    SchemaVersionCreate, SchemaVersionGet, InstanceRegister, InstanceStart, InstanceFinish, InstanceRecordQuality,
    InstanceTerminate, InstanceGet, InstanceList, SpanCreate, SpanFinish, SpanGet, SpanList,
    RiskProfileList, RiskProfileGet, RiskProfileCreate, AlertCount, AlertList, AlertGet, AlertAcknowledge,
]
