"""The fields of the registry's create and update bodies, as pydantic models: what the
OpenAPI document says each field takes (type, length, pattern).  The models only describe:
the service's inputs (:mod:`agentfolio.app.registry.inputs`) make the checks, with the
same limits (:mod:`agentfolio.app.registry.fields`, the domain's constants).  Unknown
fields are ignored by the server (the Prefactor SDKs send some), so the models allow them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from agentfolio.api.registry.common import IDEMPOTENCY_KEY, NON_BLANK
from agentfolio.app.registry.fields import NAME_CHARS, PURPOSES, REFERENCE_CHARS, SESSION_CHARS, TEXT_CHARS
from agentfolio.app.registry.inputs import PROFILE_TEMPLATES
from agentfolio.registry.ids import ID_PATTERN
from agentfolio.registry.risk import ACTION_VALUES, ACTIONS, CATEGORIES, CATEGORY_VALUES, CLASSIFICATIONS
from agentfolio.registry.schema_versions import MAX_SPAN_TYPES
from agentfolio.registry.spans import FINISH_STATUSES, SPAN_STATUSES

__all__ = [
    "AgentCreateDetails",
    "AgentUpdateDetails",
    "InstanceRegisterBody",
    "RiskProfileCreateDetails",
    "SchemaVersionCreateDetails",
    "SpanCreateDetails",
    "details_schema",
]

_NO_NUL = "^[^\\x00]*$"
#: A name: text with something besides spaces, without NUL.
Name = Annotated[str, StringConstraints(min_length=1, max_length=NAME_CHARS, pattern=NON_BLANK)]
ShortText = Annotated[str, StringConstraints(max_length=NAME_CHARS, pattern=_NO_NUL)]
Description = Annotated[str, StringConstraints(max_length=TEXT_CHARS, pattern=_NO_NUL)]
Reference = Annotated[str, StringConstraints(max_length=REFERENCE_CHARS, pattern=_NO_NUL)]
SessionId = Annotated[str, StringConstraints(max_length=SESSION_CHARS, pattern=_NO_NUL)]
#: A title, description or template of a span type or quality schema (NUL is kept).
Title = Annotated[str, StringConstraints(max_length=NAME_CHARS)]
Template = Annotated[str, StringConstraints(max_length=TEXT_CHARS)]
#: ``true``/``false`` (the server also reads the strings a query would spell them with).
Flag = Annotated[bool | str, WithJsonSchema({"anyOf": [
    {"type": "boolean"}, {"type": "string", "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$"}]})]
#: An ISO 8601 date-time.  The pattern is the spelling every client sends (the Python
#: SDK's ``isoformat()``, with or without offset, and ``…Z``) with calendar-valid fields;
#: the server reads what Python's ``datetime.fromisoformat`` reads, within years 1-9999 in UTC.
TIMESTAMP_PATTERN = (
    "^(1[0-9]{3}|[2-8][0-9]{3}|9[0-8][0-9]{2})-"
    "((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)"
    "T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,6})?)?"
    "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$")
Timestamp = Annotated[str, StringConstraints(pattern=TIMESTAMP_PATTERN)]
#: An id the caller picks must also lie in its account's id partition (as the ids the
#: server makes for it do), which no static document can say: others are a 422.
ChosenId = Annotated[str, StringConstraints(pattern=ID_PATTERN.pattern)]
CHOSEN_ID: Any = Field(None, description="An id of your own (default: one is made); it must lie in your "
                                         "account's id partition, as the ids made for it do.")
#: An idempotency key given in the fields (left out for none: ``null`` is refused).
Key = Annotated[str, WithJsonSchema(IDEMPOTENCY_KEY)]
#: An object: a JSON Schema, a payload.
JsonObject = dict[str, Any]


def _choices(fields: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    return {"type": ["object", "null"], "additionalProperties": False,
            "properties": {name: {"enum": list(values)} for name, values in fields.items()}}


_CATEGORIES = _choices({**dict.fromkeys(CATEGORIES, CATEGORY_VALUES), "classification": CLASSIFICATIONS})
#: A span type's declared data risk: its three known parts are checked strictly (a
#: misspelt key would hide a declaration), other top-level keys are kept.
DataRisk = Annotated[dict[str, Any], WithJsonSchema({
    "type": "object", "properties": {"action_profile": _choices(dict.fromkeys(ACTIONS, ACTION_VALUES)),
                                     "params_data_categories": _CATEGORIES,
                                     "result_data_categories": _CATEGORIES}})]


#: Span type name → a JSON Schema (the older forms of declaring span types).
SpanSchemaMap = Annotated[dict[str, JsonObject], WithJsonSchema({
    "type": "object", "maxProperties": MAX_SPAN_TYPES, "additionalProperties": {"type": "object"},
    "propertyNames": {"minLength": 1, "maxLength": NAME_CHARS, "pattern": NON_BLANK}})]


class _Details(BaseModel):
    model_config = ConfigDict(extra="allow")


class AgentCreateDetails(_Details):
    name: Name
    description: Description | None = None
    external_identifier: ShortText | None = None
    owner_person_id: Reference | None = None
    risk_profile_id: Reference | None = None
    team_id: Reference | None = None
    id: ChosenId | None = CHOSEN_ID


class AgentUpdateDetails(_Details):
    """Only the fields given change; ``external_identifier`` can only repeat the current one."""

    name: Name = None  # type: ignore[assignment]  # may be left out, never null
    description: Description | None = None
    owner_person_id: Reference | None = None
    risk_profile_id: Reference | None = None
    team_id: Reference | None = None
    external_identifier: Any = None


class RiskProfileCreateDetails(_Details):
    name: Name
    description: Description | None = None
    template: Literal[PROFILE_TEMPLATES] | None = None  # type: ignore[valid-type]
    categories: dict[str, Any] | None = None
    actions: dict[str, Any] | None = None
    thresholds: dict[str, Any] | None = None
    id: ChosenId | None = CHOSEN_ID


# --------------------------------------------------------------------------- schema versions


class _Declaration(_Details):
    """What a span type and a quality schema both declare besides their JSON Schemas."""

    name: Name
    title: Title | None = Field(None, description="Shown for the name (default: the name).")
    description: Template | None = None
    template: Template | None = Field(None, description="A Liquid template of a record's one-line summary (one "
                                                        "that does not compile is reported, not refused).")
    data_risk: DataRisk | None = None


class SpanTypeDeclaration(_Declaration):
    params_schema: JsonObject = Field(description="A JSON Schema ({} accepts any payload).")
    result_schema: JsonObject | None = None


class QualityDeclaration(_Declaration):
    schema_: JsonObject = Field(alias="schema", description="A JSON Schema of the payloads recorded under the name.")


class _SchemaVersion(_Details):
    """The span types of a schema version, in any mix of the three forms the SDKs send
    (a span type's names are unique across them, up to the limit in all)."""

    id: ChosenId | None = CHOSEN_ID
    external_identifier: ShortText | None = None
    span_type_schemas: Annotated[list[SpanTypeDeclaration], Field(max_length=MAX_SPAN_TYPES)] | None = None
    span_schemas: SpanSchemaMap | None = None
    span_result_schemas: SpanSchemaMap | None = None
    quality_schemas: list[QualityDeclaration] | None = None


class SchemaVersionCreateDetails(_SchemaVersion):
    agent_id: Name = Field(description="The agent (left out with a deployment token: its own).")


class InlineSchemaVersion(_SchemaVersion):
    """A schema version declared with the instance that runs it (its agent is the instance's)."""

    agent_id: ChosenId | None = None


# --------------------------------------------------------------------------- instances


class AgentVersionDeclaration(_Details):
    name: ShortText | None = None
    external_identifier: ShortText | None = None
    description: Description | None = None
    runtime_environment: Any = None


class InstanceRegisterBody(_Details):
    """Flat: the fields and the idempotency key side by side."""

    agent_id: Name | None = Field(None, description="The agent's id, or its external identifier (an agent is "
                                                    "made the first time); left out: agent_version.name names it.")
    environment_id: ShortText | None = Field(None, description="Left out or empty: the account's default environment.")
    agent_version: AgentVersionDeclaration | None = None
    agent_schema_version: InlineSchemaVersion | None = None
    update_current_version: Flag | None = True
    purpose: Literal[PURPOSES] | None = None  # type: ignore[valid-type]
    external_identifier: ShortText | None = None
    session_id: SessionId | None = None
    id: ChosenId | None = CHOSEN_ID
    idempotency_key: Key = None  # type: ignore[assignment]  # may be left out, never null


# --------------------------------------------------------------------------- spans


class SpanCreateDetails(_Details):
    """A result payload and a finish time belong to a finished span only."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"anyOf": [
        {"required": ["status"], "properties": {"status": {"enum": list(FINISH_STATUSES)}}},
        {"properties": {"result_payload": {"type": "null"}, "finished_at": {"type": "null"}}}]})

    agent_instance_id: Name
    schema_name: Name
    status: Literal[SPAN_STATUSES] = "active"  # type: ignore[valid-type]
    payload: JsonObject | None = None
    result_payload: JsonObject | None = None
    parent_span_id: Any = Field(None, description="Kept as given (up to 200 characters) and flagged when it names "
                                                  "no span of the instance.")
    sensitive_encoding: Flag | None = None
    session_id: SessionId | None = None
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    id: ChosenId | None = CHOSEN_ID
    idempotency_key: Key = None  # type: ignore[assignment]  # may be left out, never null


def details_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with its nested definitions inline (an operation's request
    body carries no ``$defs`` of its own)."""
    schema = model.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return inline(definitions[node["$ref"].rsplit("/", 1)[1]])
        return {key: ({name: inline(field) for name, field in value.items()} if key == "properties" else inline(value))
                for key, value in node.items() if key != "title"}

    return inline(schema)  # type: ignore[no-any-return]
