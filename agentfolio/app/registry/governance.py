"""Governing an account's agents: the risk profiles it keeps (listed, created, assigned
through an agent's ``risk_profile_id``) and its alerts (raised when what they are about
is written, counted and listed until someone acknowledges them).

Alert kinds, each raised once for its subject:

* ``schema_breaking_span`` (high): a span whose payload or result breaks its span type's schema;
* ``flagged_span`` (medium): a span of a span type its schema version does not declare;
* ``critical_risk_combination`` (critical): a schema version whose span types together
  carry a critical risk flag (sensitive data and external communication);
* ``terminated_instance`` (high): a run an operator terminated.
"""

from __future__ import annotations

from typing import Any

from agentfolio import _json
from agentfolio.app.registry.errors import field_error, from_domain, not_found
from agentfolio.app.registry.inputs import (
    AlertAcknowledge,
    AlertCount,
    AlertGet,
    AlertList,
    RiskProfileCreate,
    RiskProfileGet,
    RiskProfileList,
)
from agentfolio.app.registry.outputs import Alert, AlertCountOutput, Page, RiskProfileOutput, from_micros
from agentfolio.app.registry.work import DEFAULT_PROFILE_ID, Work, now_us
from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.listing import page_info
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE, RiskFlag, RiskProfile

ALERT_KINDS = ("schema_breaking_span", "flagged_span", "critical_risk_combination", "terminated_instance")
_SEVERITY = {"schema_breaking_span": "high", "flagged_span": "medium", "critical_risk_combination": "critical",
             "terminated_instance": "high"}


# --------------------------------------------------------------------------- risk profiles


def _profile_output(work: Work, profile: RiskProfile, *, profile_id: str, agents: int,
                    row: Any = None) -> RiskProfileOutput:
    body = profile.model_dump(mode="json")
    return RiskProfileOutput(
        id=profile_id, account_id=work.account.id, name=profile.name, description=profile.description,
        categories=body["categories"], actions=body["actions"], thresholds=body["thresholds"],
        is_default=profile_id == DEFAULT_PROFILE_ID, agent_count=agents,
        inserted_at=from_micros(row.inserted_at) if row is not None else None,
        updated_at=from_micros(row.updated_at) if row is not None else None)


def list_profiles(work: Work, command: RiskProfileList) -> Page[RiskProfileOutput]:
    """The profiles the account keeps (agents without one are scored under the default,
    ``GET /api/v1/risk_profile/default``)."""
    work.deny_deployment("read risk profiles")
    if command.account_id is not None and command.account_id != work.account.id:
        raise not_found("account", command.account_id)
    rows, total = work.unit.risk_profiles.page(command.page)
    counts = work.unit.risk_profiles.agent_counts()
    items = [_profile_output(work, RiskProfile.model_validate(_json.loads(row.profile)), profile_id=row.id,
                             agents=counts.get(row.id, 0), row=row) for row in rows]
    info = page_info(total, command.page.offset, command.page.page_size, len(rows))
    return Page[RiskProfileOutput](items=items, pagination=info.to_json(), sorting=command.page.sorting.to_json())


def get_profile(work: Work, command: RiskProfileGet) -> RiskProfileOutput:
    work.deny_deployment("read risk profiles")
    counts = work.unit.risk_profiles.agent_counts()
    if command.risk_profile_id == DEFAULT_PROFILE_ID:
        assigned = sum(counts.values())
        return _profile_output(work, work.default_risk_profile(), profile_id=DEFAULT_PROFILE_ID,
                               agents=work.unit.agents.count() - assigned)
    profile_id = command.risk_profile_id
    row = work.unit.risk_profiles.get(profile_id) if profile_id is not None and ids.is_id(profile_id) else None
    if row is None:
        raise not_found("risk profile", command.risk_profile_id)
    return _profile_output(work, RiskProfile.model_validate(_json.loads(row.profile)), profile_id=row.id,
                           agents=counts.get(row.id, 0), row=row)


def create_profile(work: Work, command: RiskProfileCreate) -> RiskProfileOutput:
    """A new profile: the template's weights, multipliers and thresholds (``default``: the
    built-in default; ``empty``: nothing weighs anything) with the given ones over them."""
    work.deny_deployment("create risk profiles")
    base = DEFAULT_RISK_PROFILE.model_dump(mode="json") if command.template == "default" else \
        {"categories": {}, "actions": {}, "thresholds": DEFAULT_RISK_PROFILE.thresholds.model_dump(mode="json")}
    raw: dict[str, Any] = {**base, "name": command.name, "description": command.description}
    for part in ("categories", "actions"):
        given = getattr(command, part)
        if given is not None:
            raw[part] = {**raw[part], **given}
    if command.thresholds is not None:
        raw["thresholds"] = {**raw["thresholds"], **command.thresholds}
    try:
        profile = RiskProfile.from_json(raw, "details")
    except RegistryError as error:
        raise from_domain(error) from None
    if work.unit.risk_profiles.by_name(command.name) is not None:
        # A name already taken conflicts with what is stored (409), as a reused id does.
        raise field_error("details.name", f"{command.name!r} is already the name of a risk profile of this account",
                          code="conflict")
    profile_id = work.claim_id(command.id, work.unit.risk_profiles.exists)
    stamp = now_us()
    work.unit.risk_profiles.insert(id=profile_id, name=command.name,
                                   profile=_json.dumps(profile.model_dump(mode="json")),
                                   inserted_at=stamp, updated_at=stamp)
    return get_profile(work, RiskProfileGet(risk_profile_id=profile_id))


def check_assignable(work: Work, profile_id: str | None) -> str | None:
    """A ``risk_profile_id`` an agent may be given: a profile of the account, or
    ``default``/``None`` for the account's default (stored as ``None``)."""
    if profile_id is None or profile_id == DEFAULT_PROFILE_ID:
        return None
    if not ids.is_id(profile_id) or not work.unit.risk_profiles.exists(profile_id):
        raise field_error("risk_profile_id", f"{profile_id!r} names no risk profile of this account "
                          "(list them with GET /api/v1/risk_profile)")
    return profile_id


# --------------------------------------------------------------------------- alerts


def raise_alert(work: Work, kind: str, subject_id: str, *, agent_id: str, message: str,
                instance_id: str | None = None, span_id: str | None = None,
                schema_version_id: str | None = None, new_subject: bool = False) -> None:
    """Raise an alert of ``kind`` about ``subject_id`` unless one was raised already
    (``new_subject``: the subject was made in this operation, so none can have been)."""
    if not new_subject and work.unit.alerts.raised(kind, subject_id):
        return
    work.unit.alerts.insert(id=work.new_id(), kind=kind, severity=_SEVERITY[kind], subject_id=subject_id,
                            agent_id=agent_id, instance_id=instance_id, span_id=span_id,
                            schema_version_id=schema_version_id, message=message[:2000], inserted_at=now_us())


def span_alerts(work: Work, span: dict[str, Any], validation: Any, *, new_span: bool) -> None:
    """The alert a span's validation calls for, if any (``validation``: a SpanValidation)."""
    if validation.status != "invalid":
        return
    parts = {problem.part for problem in validation.problems}
    common = {"agent_id": span["agent_id"], "instance_id": span["instance_id"], "span_id": span["id"],
              "new_subject": new_span}
    if parts & {"payload", "result_payload"}:
        first = next(p for p in validation.problems if p.part in ("payload", "result_payload"))
        raise_alert(work, "schema_breaking_span", span["id"], **common,
                    message=f"span {span['schema_name']!r} breaks its span type's schema: {first.part}"
                            f"{first.pointer or ''}: {first.message}")
    elif "schema_name" in parts:
        raise_alert(work, "flagged_span", span["id"], **common,
                    message=f"span type {span['schema_name']!r} is not declared by the run's schema version")


def schema_version_alerts(work: Work, agent_id: str, version_id: str, flags: tuple[RiskFlag, ...]) -> None:
    for flag in flags:
        if flag.severity == "critical":
            raise_alert(work, "critical_risk_combination", version_id, agent_id=agent_id,
                        schema_version_id=version_id, message=flag.message, new_subject=True)
            return


def _alert_output(work: Work, row: Any) -> Alert:
    return Alert(id=row.id, account_id=work.account.id, kind=row.kind, severity=row.severity, message=row.message,
                 agent_id=row.agent_id, agent_instance_id=row.instance_id, agent_span_id=row.span_id,
                 agent_schema_version_id=row.schema_version_id, inserted_at=from_micros(row.inserted_at),
                 acknowledged=row.acknowledged_at is not None, acknowledged_at=from_micros(row.acknowledged_at))


def count_alerts(work: Work, command: AlertCount) -> AlertCountOutput:
    work.deny_deployment("read alerts")
    return AlertCountOutput(count=work.unit.alerts.unacknowledged_count())


def list_alerts(work: Work, command: AlertList) -> Page[Alert]:
    work.deny_deployment("read alerts")
    rows, total = work.unit.alerts.page(command.page, acknowledged=command.acknowledged, **command.filters())
    info = page_info(total, command.page.offset, command.page.page_size, len(rows))
    return Page[Alert](items=[_alert_output(work, row) for row in rows], pagination=info.to_json(),
                       sorting=command.page.sorting.to_json())


def get_alert(work: Work, command: AlertGet) -> Alert:
    work.deny_deployment("read alerts")
    alert_id = command.alert_id
    row = work.unit.alerts.get(alert_id) if alert_id is not None and ids.is_id(alert_id) else None
    if row is None:
        raise not_found("alert", command.alert_id)
    return _alert_output(work, row)


def acknowledge(work: Work, command: AlertAcknowledge) -> AlertCountOutput:
    """Acknowledge the alerts named (or, with ``everything``, all matching the filters);
    answers how many were acknowledged now and how many remain."""
    work.deny_deployment("acknowledge alerts")
    when = now_us()
    if command.everything:
        changed = work.unit.alerts.acknowledge_all(when, **command.filters())
    else:
        known = [alert_id for alert_id in command.alert_ids if ids.is_id(alert_id) and work.unit.alerts.get(alert_id)]
        missing = [alert_id for alert_id in command.alert_ids if alert_id not in known]
        if missing:
            raise not_found("alert", missing[0])
        changed = work.unit.alerts.acknowledge(known, when)
    return AlertCountOutput(count=work.unit.alerts.unacknowledged_count(), acknowledged=changed)
