"""Requests as the Prefactor SDKs send them, read into the registry service's typed inputs.

Each reader takes the flat fields of one operation (a wrapped body's ``details``, or a
flat body, with the path parameters, or the query string) and builds its input; bad
values are refused by the inputs themselves, naming the field.  :data:`BULK_READERS`
maps a bulk item's ``_type`` to the same readers, so an item and its single route read
alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentfolio.app.registry import (
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentList,
    AgentReinstate,
    AgentRetire,
    AgentShow,
    AgentUpdate,
    AlertAcknowledge,
    AlertList,
    BadRequest,
    BulkItem,
    Command,
    IdempotencyKeyReused,
    InstanceFinish,
    InstanceGet,
    InstanceList,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    InstanceTerminate,
    InvalidValue,
    RegistryRefusal,
    RiskProfileCreate,
    RiskProfileList,
    SchemaVersionCreate,
    SchemaVersionGet,
    SpanCreate,
    SpanFinish,
    SpanGet,
    SpanList,
)
from agentfolio.app.registry.errors import from_domain
from agentfolio.app.registry.fields import MAX_BULK_KEY_CHARS, flag, given_text, schema_version_draft, timestamp
from agentfolio.app.registry.inputs import (
    AGENT_SORT_FIELDS,
    ALERT_SORT_FIELDS,
    INSTANCE_SORT_FIELDS,
    PROFILE_SORT_FIELDS,
    SPAN_SORT_FIELDS,
)
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.listing import PageRequest, parse_page_request

Fields = Mapping[str, Any]
MAX_BULK_ITEMS = 10_000
#: Keys of a bulk item that are not the operation's fields.
BULK_META = ("_type", "idempotency_key", "method", "path", "details")


def _ref(value: object) -> str | None:
    """An id or name the request gave, as text (a JSON number names nothing, like any text)."""
    return value if isinstance(value, str) or value is None else str(value)


def _filter(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _page(fields: Fields, sortable: tuple[str, ...]) -> PageRequest:
    try:
        return parse_page_request(fields, list(sortable))
    except RegistryError as error:
        raise from_domain(error) from None


def agent_create(f: Fields) -> AgentCreate:
    return AgentCreate(name=f.get("name"), description=f.get("description"),  # type: ignore[arg-type]
                       external_identifier=f.get("external_identifier"), owner_person_id=f.get("owner_person_id"),
                       risk_profile_id=f.get("risk_profile_id"), team_id=f.get("team_id"), id=f.get("id"))


def agent_update(f: Fields) -> AgentUpdate:
    given = {key: f[key] for key in ("name", "description", "owner_person_id", "risk_profile_id", "team_id",
                                     "external_identifier") if key in f}
    return AgentUpdate(agent_id=_ref(f.get("agent_id")), **given)


def agent_show(f: Fields) -> AgentShow:
    return AgentShow(agent_id=_ref(f.get("agent_id")), external_identifier=_ref(f.get("external_identifier")),
                     include_risk_rollup=flag(f.get("include_risk_rollup"), "include_risk_rollup"))


def agent_list(f: Fields) -> AgentList:
    return AgentList(page=_page(f, AGENT_SORT_FIELDS), risk_profile_id=_filter(f.get("risk_profile_id")),
                     team_id=_filter(f.get("team_id")), owner_person_id=_filter(f.get("owner_person_id")),
                     status=_filter(f.get("status")))


def schema_version_create(f: Fields) -> SchemaVersionCreate:
    draft = schema_version_draft({key: value for key, value in f.items() if key != "agent_id"})
    return SchemaVersionCreate(agent_id=given_text(f.get("agent_id"), "agent_id"), draft=draft)


def _unless_empty(value: object) -> Any:
    """An empty string read as absent (the default); anything else as given, to be checked."""
    return None if value == "" else value


def instance_register(f: Fields) -> InstanceRegister:
    raw_schema = f.get("agent_schema_version")
    return InstanceRegister(
        agent_id=f.get("agent_id"), environment_id=_unless_empty(f.get("environment_id")),
        agent_version=f.get("agent_version"),
        agent_schema_version=None if raw_schema is None else schema_version_draft(raw_schema, "agent_schema_version"),
        update_current_version=flag(f.get("update_current_version", True), "update_current_version"),
        purpose="live" if f.get("purpose") is None else f["purpose"], external_identifier=f.get("external_identifier"),
        session_id=f.get("session_id"), id=f.get("id"))


def instance_start(f: Fields) -> InstanceStart:
    return InstanceStart(agent_instance_id=_ref(f.get("agent_instance_id")),
                         timestamp=timestamp(f.get("timestamp"), "timestamp"))


def instance_finish(f: Fields) -> InstanceFinish:
    return InstanceFinish(agent_instance_id=_ref(f.get("agent_instance_id")), status=f.get("status"),
                          timestamp=timestamp(f.get("timestamp"), "timestamp"))


def instance_record_quality(f: Fields) -> InstanceRecordQuality:
    return InstanceRecordQuality(agent_instance_id=_ref(f.get("agent_instance_id")),
                                 name=f.get("name"), payload=f.get("payload"))  # type: ignore[arg-type]


def instance_terminate(f: Fields) -> InstanceTerminate:
    return InstanceTerminate(agent_instance_id=_ref(f.get("agent_instance_id")), reason=f.get("reason"))


def instance_get(f: Fields) -> InstanceGet:
    return InstanceGet(agent_instance_id=_ref(f.get("agent_instance_id")),
                       include_risk_level=flag(f.get("include_risk_level"), "include_risk_level"))


def instance_list(f: Fields) -> InstanceList:
    return InstanceList(page=_page(f, INSTANCE_SORT_FIELDS), agent_id=_filter(f.get("agent_id")),
                        status=_filter(f.get("status")), environment_id=_filter(f.get("environment_id")),
                        session_id=_filter(f.get("session_id")),
                        include_risk_level=flag(f.get("include_risk_level"), "include_risk_level"))


def span_create(f: Fields) -> SpanCreate:
    return SpanCreate(
        agent_instance_id=f.get("agent_instance_id"), schema_name=f.get("schema_name"),  # type: ignore[arg-type]
        status=f.get("status", "active"), payload=f.get("payload"), result_payload=f.get("result_payload"),
        parent_span_id=f.get("parent_span_id"),
        sensitive_encoding=flag(f.get("sensitive_encoding"), "sensitive_encoding"), session_id=f.get("session_id"),
        started_at=timestamp(f.get("started_at"), "started_at"),
        finished_at=timestamp(f.get("finished_at"), "finished_at"), id=f.get("id"))


def span_finish(f: Fields) -> SpanFinish:
    return SpanFinish(agent_span_id=_ref(f.get("agent_span_id")), status=f.get("status"),
                      result_payload=f.get("result_payload"), timestamp=timestamp(f.get("timestamp"), "timestamp"),
                      sensitive_encoding=flag(f.get("sensitive_encoding"), "sensitive_encoding"))


def span_get(f: Fields) -> SpanGet:
    return SpanGet(agent_span_id=_ref(f.get("agent_span_id")),
                   include_summaries=flag(f.get("include_summaries"), "include_summaries"),
                   include_risk_level=flag(f.get("include_risk_level"), "include_risk_level"))


def span_list(f: Fields) -> SpanList:
    return SpanList(
        page=_page(f, SPAN_SORT_FIELDS), agent_id=_filter(f.get("agent_id")),
        agent_instance_id=_filter(f.get("agent_instance_id")), status=_filter(f.get("status")),
        schema_name=_filter(f.get("schema_name")), validation_status=_filter(f.get("validation_status")),
        parent_span_id=_filter(f.get("parent_span_id")), session_id=_filter(f.get("session_id")),
        include_summaries=flag(f.get("include_summaries"), "include_summaries"),
        include_risk_level=flag(f.get("include_risk_level"), "include_risk_level"))


def risk_profile_list(f: Fields) -> RiskProfileList:
    return RiskProfileList(page=_page(f, PROFILE_SORT_FIELDS), account_id=_filter(f.get("account_id")))


def risk_profile_create(f: Fields) -> RiskProfileCreate:
    return RiskProfileCreate(name=f.get("name"), description=f.get("description"),  # type: ignore[arg-type]
                             template="default" if f.get("template") is None else f["template"],
                             categories=f.get("categories"),
                             actions=f.get("actions"), thresholds=f.get("thresholds"), id=f.get("id"))


def _tristate(value: object, name: str) -> bool | None:
    """``true``/``false``, or ``all`` (or ``any``) for both."""
    if isinstance(value, str) and value.lower() in ("all", "any"):
        return None
    return flag(value, name) if value is not None else False


def alert_list(f: Fields) -> AlertList:
    return AlertList(page=_page(f, ALERT_SORT_FIELDS), acknowledged=_tristate(f.get("acknowledged"), "acknowledged"),
                     kind=_filter(f.get("kind")), severity=_filter(f.get("severity")),
                     agent_id=_filter(f.get("agent_id")), instance_id=_filter(f.get("agent_instance_id")))


def alert_acknowledge(f: Fields) -> AlertAcknowledge:
    raw = f.get("alert_ids")
    if raw is not None and not isinstance(raw, list):
        raise InvalidValue("alert_ids: must be an array of alert ids", errors={"alert_ids": "must be an array"})
    return AlertAcknowledge(alert_ids=tuple(_ref(item) or "" for item in raw or ()),
                            everything=flag(f.get("all"), "all"), kind=_filter(f.get("kind")),
                            agent_id=_filter(f.get("agent_id")))


#: A bulk item's ``_type`` → the reader of its fields (terminating is left to single requests).
BULK_READERS: dict[str, Callable[[Fields], Command]] = {
    "agents/create": agent_create,
    "agents/update": agent_update,
    "agents/retire": lambda f: AgentRetire(_ref(f.get("agent_id"))),
    "agents/reinstate": lambda f: AgentReinstate(_ref(f.get("agent_id"))),
    "agents/delete": lambda f: AgentDelete(_ref(f.get("agent_id"))),
    "agents/get": lambda f: AgentGet(_ref(f.get("agent_id"))),
    "agents/show": agent_show,
    "agents/list": agent_list,
    "agent_schema_versions/create": schema_version_create,
    "agent_schema_versions/get": lambda f: SchemaVersionGet(_ref(f.get("agent_schema_version_id"))),
    "agent_instances/register": instance_register,
    "agent_instances/start": instance_start,
    "agent_instances/finish": instance_finish,
    "agent_instances/record_quality": instance_record_quality,
    "agent_instances/show": instance_get,
    "agent_instances/get": instance_get,
    "agent_instances/list": instance_list,
    "agent_spans/create": span_create,
    "agent_spans/finish": span_finish,
    "agent_spans/get": span_get,
    "agent_spans/list": span_list,
}


def read(reader: Callable[[Fields], Command], fields: Fields) -> Command | RegistryRefusal:
    try:
        return reader(fields)
    except RegistryRefusal as refusal:
        return refusal


def bulk_items(body: object) -> list[BulkItem]:
    """The items of ``POST /api/v1/bulk``; the request is refused as a whole when its
    shape is wrong, an item's unusable fields are reported when the run reaches it."""
    def refuse(where: str, message: str) -> InvalidValue:
        return InvalidValue(f"{where}: {message}", errors={where: message})

    if not isinstance(body, dict):
        raise refuse("items", "the body must be an object with an 'items' array")
    raw = body.get("items")
    if not isinstance(raw, list) or not raw:
        raise refuse("items", "must be a non-empty array")
    if len(raw) > MAX_BULK_ITEMS:
        raise refuse("items", f"has {len(raw):,} items, over the {MAX_BULK_ITEMS:,} limit")
    items: list[BulkItem] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            raise refuse(where, "must be an object")
        kind = item.get("_type")
        key = item.get("idempotency_key")
        if not isinstance(kind, str) or not kind:
            raise refuse(f"{where}._type", "is required (e.g. 'agent_spans/create')")
        if not isinstance(key, str) or not key or len(key) > MAX_BULK_KEY_CHARS or "\x00" in key:
            raise refuse(f"{where}.idempotency_key", f"is required: a string of 1-{MAX_BULK_KEY_CHARS} characters")
        if key in seen:  # the outputs are keyed by it: a key already used, as across requests (409)
            message = f"{key!r} is used by another item of this request"
            raise IdempotencyKeyReused(f"{where}.idempotency_key: {message}",
                                       errors={f"{where}.idempotency_key": message})
        seen.add(key)
        details = item.get("details")
        fields = {k: v for k, v in item.items() if k not in BULK_META}
        if isinstance(details, dict):
            fields.update(details)
        fields.pop("idempotency_key", None)
        reader = BULK_READERS.get(kind)
        if reader is None:
            command: Command | RegistryRefusal = BadRequest(
                f"unknown _type {kind!r} (known: {', '.join(BULK_READERS)})")
        else:
            command = read(reader, fields)
        items.append(BulkItem(key, command))
    return items
