"""Agent runs: instances (register, start, finish, quality, terminate) and their spans.

Spans are never refused for their content: each is validated against its instance's
schema version (compiled once) and stored with the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from itertools import islice
from typing import Any

import orjson

from agentfolio import _json
from agentfolio.app.registry.agents import create as create_agent
from agentfolio.app.registry.agents import store_schema_version
from agentfolio.app.registry.errors import InvalidAction, NotPermitted, field_error, from_domain, not_found
from agentfolio.app.registry.fields import text
from agentfolio.app.registry.governance import raise_alert, span_alerts
from agentfolio.app.registry.inputs import (
    AgentCreate,
    InstanceFinish,
    InstanceGet,
    InstanceList,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    InstanceTerminate,
    SpanCreate,
    SpanFinish,
    SpanGet,
    SpanList,
)
from agentfolio.app.registry.outputs import EPOCH, Control, Instance, Page, Span, SpanWritten, from_micros
from agentfolio.app.registry.work import Work, now_us
from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.jsonschemas import SchemaCompileError, compile_schema
from agentfolio.registry.listing import page_info
from agentfolio.registry.risk import RiskProfile, score_instance
from agentfolio.registry.sensitive import encode_at_rest, masked, mentions_sensitive
from agentfolio.registry.spans import (
    CompiledSchemaVersion,
    SpanValidation,
    check_create,
    check_finish,
    check_instance_finish,
    span_counts,
    validate_without_version,
    within_run,
)
from agentfolio.registry.templates import render_summary, summaries_budget

FINISHED_SPAN = ("complete", "failed", "cancelled")


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else (moment - EPOCH) // timedelta(microseconds=1)


# --------------------------------------------------------------------------- instances


def _span_counts(work: Work, instance_id: str) -> dict[str, int]:
    counts = span_counts(())
    for status, count in work.unit.spans.status_counts(instance_id).items():
        counts["total"] += count
        counts[status] = counts.get(status, 0) + count
        if status in FINISHED_SPAN:
            counts["finished"] += count
    return counts


def instance_output(work: Work, row: Any, *, counts: dict[str, int] | None = None,
                    risk: RiskProfile | None = None) -> Instance:
    quality = _json.loads(row.quality_payloads) if row.quality_payloads is not None else {}
    quality = quality or {}
    extras: dict[str, Any] = {}
    if risk is not None:
        names = work.unit.spans.schema_name_counts(row.id)
        compiled = work.unit.compiled(row.schema_version_id)
        declared = {name: span_type.data_risk
                    for name, span_type in (compiled.span_types if compiled else {}).items()}
        score = score_instance(names, declared, risk)
        extras = {"risk_score": round(score.score, 4), "risk_level": score.level,
                  "risk": {**score.to_json(), "risk_profile": risk.name}}
    return Instance(
        id=row.id, account_id=work.account.id, agent_id=row.agent_id, agent_version_id=row.agent_version_id,
        agent_schema_version_id=row.schema_version_id, environment_id=row.environment_id,
        agent_deployment_id=row.deployment_id, status=row.status, inserted_at=from_micros(row.inserted_at),
        updated_at=from_micros(row.updated_at), started_at=from_micros(row.started_at),
        finished_at=from_micros(row.finished_at), termination_reason=row.termination_reason,
        external_identifier=row.external_identifier, purpose=row.purpose, session_id=row.session_id,
        span_counts=counts if counts is not None else _span_counts(work, row.id),
        quality_payloads=quality.get("payloads", {}), quality_summaries=quality.get("summaries", {}),
        quality_validation=quality.get("validation", {}), **_dashboard_quality(quality), **extras)


def _dashboard_quality(quality: Mapping[str, Any]) -> dict[str, Any]:
    """The open dashboard's single ``quality_payload`` / ``quality_summary``: every recorded
    payload by its quality schema's name, and the rendered summaries one per line."""
    payloads, summaries = quality.get("payloads") or {}, quality.get("summaries") or {}
    return {"quality_payload": dict(payloads) or None,
            "quality_summary": "\n".join(str(summaries[name]) for name in sorted(summaries)) or None}


def _agent_version(work: Work, agent_id: str, command: InstanceRegister) -> str:
    content = command.version_content()
    fingerprint = hashlib.sha256(_json.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()
    found = work.unit.agent_versions.find(agent_id, fingerprint)
    if found:
        return found
    version_id = work.new_id()
    runtime = content["runtime_environment"]
    work.unit.agent_versions.insert(
        id=version_id, agent_id=agent_id, name=content["name"], external_identifier=content["external_identifier"],
        description=content["description"], runtime_environment=None if runtime is None else _json.dumps(runtime),
        fingerprint=fingerprint, inserted_at=now_us())
    return version_id


def deployment_for(work: Work, agent_id: str, environment_id: str) -> str:
    found = work.unit.deployments.find(agent_id, environment_id)
    if found:
        return found
    deployment_id = work.new_id()
    stamp = now_us()
    work.unit.deployments.insert(id=deployment_id, agent_id=agent_id, environment_id=environment_id,
                                 inserted_at=stamp, updated_at=stamp)
    return deployment_id


def _agent_to_register(work: Work, command: InstanceRegister) -> Any:
    """The agent an account token registers a run of. Beyond the hosted API, so that an SDK's
    quickstart works with nothing but a token: an ``agent_id`` that is not an ID (the SDK
    README's ``"my-agent"``) names the agent by its external identifier, and without
    ``agent_id`` the agent is named by ``agent_version.name``; either way the agent is
    made the first time, with that name as its external identifier.  An ``agent_id`` that
    is an ID must name an agent of the account: IDs are never made up on the caller's behalf."""
    version_name = (command.agent_version or {}).get("name")
    if command.agent_id is not None:
        if ids.is_id(command.agent_id):
            return work.agent(command.agent_id)
        external = command.agent_id
        text(external, "agent_id")
        name = version_name if isinstance(version_name, str) and version_name.strip() else external
    else:
        if not isinstance(version_name, str) or not version_name.strip():
            raise field_error("agent_id", "is required with an account token (or give agent_version.name to find "
                              "or create the agent by that name)", code="required_value")
        external = name = version_name
    row = work.unit.agents.by_external_identifier(external)
    if row is None:
        made = create_agent(work, AgentCreate(name=name, external_identifier=external,
                                              description="made by the first run registered under this name"))
        return work.agent(made.id)
    return work.agent(row.id)


def register(work: Work, command: InstanceRegister) -> Instance:
    principal = work.principal
    if principal.deployed:
        if command.agent_id not in (None, principal.agent_id):
            raise NotPermitted("this deployment token belongs to another agent")
        agent = work.agent(principal.agent_id)
        environment_id = principal.environment_id
        assert environment_id is not None
    else:
        agent = _agent_to_register(work, command)
        environment_id = command.environment_id or work.account.default_environment_id
        if not ids.is_id(environment_id) or not work.unit.environments.exists(environment_id):
            raise not_found("environment", environment_id)
    if agent.status == "retired":
        raise InvalidAction("the agent is retired; reinstate it to run new instances")
    instance_id = work.claim_id(command.id, work.unit.instances.exists)
    external = command.external_identifier
    if external is not None and work.unit.instances.external_identifier_used(agent.id, external):
        raise field_error("external_identifier", f"{external!r} is already used by another instance of this agent")
    version_id = _agent_version(work, agent.id, command)
    deployment_id = deployment_for(work, agent.id, environment_id)
    if command.agent_schema_version is not None:
        schema_version_id = store_schema_version(work, agent.id, command.agent_schema_version, reuse=True)
    else:
        schema_version_id = (work.unit.deployments.current_schema_version(deployment_id)
                             or agent.current_schema_version_id)
    stamp = now_us()
    if command.update_current_version:
        work.unit.deployments.update(deployment_id, current_version_id=version_id,
                                     current_schema_version_id=schema_version_id, updated_at=stamp)
        work.unit.agents.update(agent.id, current_version_id=version_id,
                                current_schema_version_id=schema_version_id, updated_at=stamp)
    if agent.status in ("pending", "dormant"):
        work.unit.agents.update(agent.id, status="active", updated_at=stamp)
    work.unit.instances.insert(
        id=instance_id, agent_id=agent.id, agent_version_id=version_id, schema_version_id=schema_version_id,
        environment_id=environment_id, deployment_id=deployment_id, status="pending", external_identifier=external,
        purpose=command.purpose, session_id=command.session_id, inserted_at=stamp, updated_at=stamp)
    return instance_output(work, work.instance(instance_id), counts=span_counts(()))


def start(work: Work, command: InstanceStart) -> Instance:
    row = work.instance(command.agent_instance_id)
    if row.status == "pending":
        work.unit.instances.update(row.id, status="active", started_at=_micros(command.timestamp) or now_us(),
                                   updated_at=now_us())
    elif row.status != "active":
        # The start arrived after the finish: the Prefactor SDKs send an instance's start and
        # finish from concurrent queue workers, so the two can cross on the way.  The finish
        # stands; the start only says when the run began, if that is earlier than known.
        started = _micros(command.timestamp)
        if started is not None and (row.started_at is None or started < row.started_at):
            work.unit.instances.update(row.id, started_at=started, updated_at=now_us())
    return instance_output(work, work.instance(row.id))


def finish(work: Work, command: InstanceFinish) -> Instance:
    row = work.instance(command.agent_instance_id)
    try:
        status = check_instance_finish(row.status, command.status)
    except RegistryError as error:
        raise from_domain(error) from None
    when = _micros(command.timestamp) or now_us()
    work.unit.instances.update(row.id, status=status, finished_at=when, started_at=row.started_at or when,
                               updated_at=now_us())
    return instance_output(work, work.instance(row.id))


def terminate(work: Work, command: InstanceTerminate) -> Instance:
    work.deny_deployment("terminate instances")
    row = work.instance(command.agent_instance_id)
    if row.status in ("complete", "failed", "cancelled", "terminated"):
        raise InvalidAction(f"the instance already finished ({row.status})")
    stamp = now_us()
    reason = command.reason or "terminated by an operator"
    work.unit.instances.update(row.id, status="terminated", termination_reason=reason, finished_at=stamp,
                               updated_at=stamp)
    raise_alert(work, "terminated_instance", row.id, agent_id=row.agent_id, instance_id=row.id,
                message=f"run terminated: {reason}")
    return instance_output(work, work.instance(row.id))


def record_quality(work: Work, command: InstanceRecordQuality) -> Instance:
    row = work.instance(command.agent_instance_id)
    name, payload = command.name, command.payload
    quality = (_json.loads(row.quality_payloads) if row.quality_payloads is not None else None) or {}
    payloads = quality.setdefault("payloads", {})
    summaries = quality.setdefault("summaries", {})
    validation = quality.setdefault("validation", {})
    if payload is None:
        for part in (payloads, summaries, validation):
            part.pop(name, None)
    else:
        schema = None
        if row.schema_version_id:
            raw = work.unit.schema_versions.quality_schemas(row.schema_version_id)
            schema = (_json.loads(raw) or {}).get(name) if raw else None
        payloads[name] = payload
        validation[name] = _validate_quality(schema, name, payload)
        summary = render_summary(schema.get("template"), payload) if schema and schema.get("template") else None
        if summary is None:
            summaries.pop(name, None)
        else:
            summaries[name] = summary
    work.unit.instances.update(row.id, quality_payloads=_json.dumps(quality), updated_at=now_us())
    return instance_output(work, work.instance(row.id))


def _validate_quality(schema: Mapping[str, Any] | None, name: str, payload: Any) -> dict[str, Any]:
    if schema is None:
        return {"status": "invalid", "problems": [{"part": "name", "pointer": "", "schema_pointer": "",
                                                   "message": f"quality schema {name!r} is not declared"}],
                "note": None}
    if (schema.get("schema_validation") or {}).get("status") != "success":
        return {"status": "unchecked", "problems": [], "note": "the quality schema is invalid"}
    try:
        validator = compile_schema(schema.get("schema") or {})
    except SchemaCompileError as error:
        return {"status": "unchecked", "problems": [], "note": str(error)}
    problems = [{"part": "payload", "pointer": "".join(f"/{step}" for step in error.instance_path),
                 "schema_pointer": "".join(f"/{step}" for step in error.schema_path), "message": error.message[:300]}
                for error in islice(validator.iter_errors(payload), 20)]
    return {"status": "invalid" if problems else "valid", "problems": problems, "note": None}


def get_instance(work: Work, command: InstanceGet) -> Instance:
    row = work.instance(command.agent_instance_id)
    return instance_output(work, row, risk=work.risk_profile(row.agent_id) if command.include_risk_level else None)


def list_instances(work: Work, command: InstanceList) -> Page[Instance]:
    token_agent = work.principal.agent_id if work.principal.deployed else None
    rows, total = work.unit.instances.page(command.page, agent_of_token=token_agent, **command.filters())
    info = page_info(total, command.page.offset, command.page.page_size, len(rows))
    items = [instance_output(work, row, risk=work.risk_profile(row.agent_id) if command.include_risk_level else None)
             for row in rows]
    return Page[Instance](items=items, pagination=info.to_json(), sorting=command.page.sorting.to_json())


# --------------------------------------------------------------------------- spans


def _parent_found(work: Work, parent: str | None, instance_id: str) -> bool | None:
    if parent is None:
        return None
    if not ids.is_id(parent):
        return False
    found = work.span_instances.get(parent)
    if found is None:
        found = work.unit.spans.instance_of(parent)
        if found is not None:
            work.span_instances[parent] = found
    return found == instance_id


def _validate(compiled: CompiledSchemaVersion | None, schema_name: str, payload: Any, result: Any, status: str,
              parent_found: bool | None, sensitive: bool) -> SpanValidation:
    validation = (compiled.validate(schema_name, payload, result, status=status) if compiled is not None
                  else validate_without_version())
    return within_run(validation, parent_found=parent_found, sensitive=sensitive)


def span_output(work: Work, row: Mapping[Any, Any], *, summaries: bool = False, risk: RiskProfile | None = None,
                decoded: tuple[Any, Any, Any] | None = None) -> Span:
    """``decoded``: (payload, result payload, validation) when the caller has them as objects."""
    compiled = work.unit.compiled(row["schema_version_id"])
    if decoded is not None:
        payload, result, validation = decoded
    else:
        payload = _json.loads(row["payload"])
        result = None if row["result_payload"] is None else _json.loads(row["result_payload"])
        validation = _json.loads(row["validation"]) if row["validation"] is not None else None
    if validation is None:
        validation = {"status": row["validation_status"], "problems": [], "note": None}
    if row["sensitive_encoding"]:  # kept encoded at rest; answered masked
        payload, result = masked(payload), masked(result)
    name = row["schema_name"]
    extras: dict[str, Any] = {}
    if risk is not None:
        score = work.type_score(compiled, name, risk)
        extras = {"risk_score": round(score.score, 4) if score else 0.0,
                  "risk_level": score.level if score else "unknown"}
    return Span(
        id=row["id"], account_id=work.account.id, agent_id=row["agent_id"], agent_instance_id=row["instance_id"],
        agent_schema_version_id=row["schema_version_id"], parent_span_id=row["parent_span_id"], schema_name=name,
        schema_title=compiled.title(name) if compiled else name, status=row["status"], payload=payload,
        result_payload=result, summary=compiled.summary(name, payload, result) if summaries and compiled else None,
        started_at=from_micros(row["started_at"]), finished_at=from_micros(row["finished_at"]),
        inserted_at=from_micros(row["inserted_at"]), updated_at=from_micros(row["updated_at"]),
        validation=validation, sensitive_encoding=bool(row["sensitive_encoding"]), session_id=row["session_id"],
        purpose=work.instance(row["instance_id"], cached=True).purpose, **extras)


def _written(span: Span, instance: Any) -> SpanWritten:
    control = None
    if instance.status == "terminated":
        control = Control(terminate=True, reason=instance.termination_reason or "terminated")
    return SpanWritten(span=span, control=control)


def create_span(work: Work, command: SpanCreate) -> SpanWritten:
    instance = work.instance(command.agent_instance_id, cached=True)
    try:
        status = check_create(command.status, result_payload=command.result_payload,
                              finished_at=command.finished_at, field_path="status")
    except RegistryError as error:
        raise from_domain(error) from None
    payload = {} if command.payload is None else command.payload
    result = command.result_payload
    span_id = work.claim_id(command.id, work.unit.spans.exists)
    parent = command.parent_span_id
    session_id = command.session_id or instance.session_id
    stamp = now_us()
    started = _micros(command.started_at)
    finished = _micros(command.finished_at)
    if status != "pending":  # a span that has not started keeps what the client said (usually nothing)
        started = started or stamp
    if status in FINISHED_SPAN:
        finished = finished or stamp
    parent_found = _parent_found(work, parent, instance.id)
    raw_payload, raw_result = _json.dumps(payload), None if result is None else _json.dumps(result)
    sensitive = command.sensitive_encoding or mentions_sensitive(raw_payload) or mentions_sensitive(raw_result)
    # A sensitive span is checked masked: a problem's message quotes the value it is about.
    validation = _validate(work.unit.compiled(instance.schema_version_id), command.schema_name,
                           masked(payload) if sensitive else payload, masked(result) if sensitive else result,
                           status, parent_found, sensitive)
    if sensitive:
        raw_payload = _json.dumps(encode_at_rest(payload))
        raw_result = None if result is None else _json.dumps(encode_at_rest(result))
    row = {"id": span_id, "agent_id": instance.agent_id, "instance_id": instance.id,
           "schema_version_id": instance.schema_version_id, "parent_span_id": parent,
           "parent_found": parent_found, "schema_name": command.schema_name, "status": status,
           "payload": raw_payload, "result_payload": raw_result,
           "sensitive_encoding": sensitive, "validation_status": validation.status,
           "validation": None if validation.status == "valid" else _json.dumps(validation.to_json()),
           "session_id": session_id, "started_at": started, "finished_at": finished,
           "inserted_at": stamp, "updated_at": stamp}
    work.unit.spans.add(row)
    span_alerts(work, row, validation, new_span=True)
    return _written(span_output(work, row, decoded=(payload, result, validation.to_json())), instance)


def finish_span(work: Work, command: SpanFinish) -> SpanWritten:
    row = work.span(command.agent_span_id)
    try:
        status = check_finish(row["status"], command.status)
    except RegistryError as error:
        raise from_domain(error) from None
    result = command.result_payload
    when = _micros(command.timestamp) or now_us()
    instance = work.instance(row["instance_id"], cached=True)
    payload = _json.loads(row["payload"])
    raw_result = None if result is None else _json.dumps(result)
    sensitive = bool(row["sensitive_encoding"]) or command.sensitive_encoding or mentions_sensitive(raw_result)
    validation = _validate(work.unit.compiled(row["schema_version_id"]), row["schema_name"],
                           masked(payload) if sensitive else payload, masked(result) if sensitive else result,
                           status, row["parent_found"], sensitive)
    if sensitive and result is not None:
        raw_result = _json.dumps(encode_at_rest(result))
    changes = {"status": status, "result_payload": raw_result, "sensitive_encoding": sensitive,
               "finished_at": when, "started_at": row["started_at"] or when, "updated_at": now_us(),
               "validation_status": validation.status,
               "validation": None if validation.status == "valid" else _json.dumps(validation.to_json())}
    if sensitive and not row["sensitive_encoding"]:  # a payload stored before the client said it was sensitive
        changes["payload"] = _json.dumps(encode_at_rest(payload))
    work.unit.spans.update(row["id"], **changes)
    span_alerts(work, {**row, **changes}, validation, new_span=False)
    return _written(span_output(work, {**row, **changes}), instance)


def written_again(work: Work, span_id: str) -> SpanWritten:
    """A span write's answer read again from the span as it is now (an idempotent replay)."""
    row = work.span(span_id)
    return _written(span_output(work, row), work.instance(row["instance_id"], cached=True))


def get_span(work: Work, command: SpanGet) -> Span:
    row = work.span(command.agent_span_id)
    return span_output(work, row, summaries=command.include_summaries,
                       risk=work.risk_profile(row["agent_id"]) if command.include_risk_level else None)


def list_spans(work: Work, command: SpanList) -> Page[Span]:
    token_agent = work.principal.agent_id if work.principal.deployed else None
    rows, total = work.unit.spans.page(command.page, agent_of_token=token_agent, **command.filters())
    info = page_info(total, command.page.offset, command.page.page_size, len(rows))
    # All the summaries of one page share one render budget, however many template bombs it holds.
    with summaries_budget():
        items = [span_output(work, row._mapping, summaries=command.include_summaries,
                             risk=work.risk_profile(row.agent_id) if command.include_risk_level else None)
                 for row in rows]
    return Page[Span](items=items, pagination=info.to_json(), sorting=command.page.sorting.to_json())
