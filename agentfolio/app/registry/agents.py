"""Agents and their schema versions: create, change, retire, read, and risk roll-ups."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentfolio import _json
from agentfolio.app.registry.errors import InvalidAction, InvalidValue, field_error, not_found
from agentfolio.app.registry.governance import check_assignable, schema_version_alerts
from agentfolio.app.registry.inputs import (
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentList,
    AgentReinstate,
    AgentRetire,
    AgentShow,
    AgentUpdate,
    SchemaVersionCreate,
    SchemaVersionGet,
    Unset,
)
from agentfolio.app.registry.outputs import (
    Agent,
    AgentActions,
    Page,
    RiskReport,
    SchemaVersion,
    SchemaVersionRisk,
    from_micros,
)
from agentfolio.app.registry.work import Work, now_us
from agentfolio.registry import ids
from agentfolio.registry.listing import page_info
from agentfolio.registry.risk import DataRisk, rollup, score_agent, score_span_type
from agentfolio.registry.schema_versions import (
    SchemaVersionDraft,
    count_external_identifier_repeats,
    load_span_types,
    schema_version_details,
)
from agentfolio.registry.spans import CompiledSchemaVersion

FINISHED_INSTANCE = ("complete", "failed", "cancelled", "terminated")


# --------------------------------------------------------------------------- agents


def instance_counts(work: Work, agent_id: str) -> dict[str, int]:
    counts = {"total": 0, "pending": 0, "active": 0, "complete": 0, "failed": 0, "cancelled": 0,
              "terminated": 0, "finished": 0}
    for status, count in work.unit.instances.status_counts(agent_id).items():
        counts["total"] += count
        counts[status] = counts.get(status, 0) + count
        if status in FINISHED_INSTANCE:
            counts["finished"] += count
    return counts


def agent_output(work: Work, row: Any, *, counts: bool = True) -> Agent:
    retired = row.status == "retired"
    return Agent(
        id=row.id, account_id=work.account.id, name=row.name, description=row.description,
        external_identifier=row.external_identifier, status=row.status, owner_person_id=row.owner_person_id,
        risk_profile_id=row.risk_profile_id, team_id=row.team_id, current_version_id=row.current_version_id,
        current_schema_version_id=row.current_schema_version_id,
        available_actions=AgentActions(update=not retired, retire=not retired, reinstate=retired, delete=True),
        inserted_at=from_micros(row.inserted_at), updated_at=from_micros(row.updated_at),
        instance_counts=instance_counts(work, row.id) if counts else None)


def create(work: Work, command: AgentCreate) -> Agent:
    work.deny_deployment("create agents")
    agent_id = work.claim_id(command.id, work.unit.agents.exists)
    external = command.external_identifier
    if external is not None and work.unit.agents.by_external_identifier(external) is not None:
        raise field_error("external_identifier", f"{external!r} is already used by another agent")
    stamp = now_us()
    work.unit.agents.insert(
        id=agent_id, name=command.name, description=command.description, external_identifier=external,
        owner_person_id=command.owner_person_id, risk_profile_id=check_assignable(work, command.risk_profile_id),
        team_id=command.team_id, status="pending", inserted_at=stamp, updated_at=stamp)
    return agent_output(work, work.agent(agent_id))


def update(work: Work, command: AgentUpdate) -> Agent:
    row = work.agent(command.agent_id)
    if row.status == "retired":
        raise InvalidAction("a retired agent cannot be updated; reinstate it first")
    if not isinstance(command.external_identifier, Unset) and command.external_identifier != row.external_identifier:
        raise field_error("external_identifier", "can only be set when the agent is created")
    changes = command.changes()
    if "risk_profile_id" in changes:
        changes["risk_profile_id"] = check_assignable(work, changes["risk_profile_id"])
        work.agent_profiles.pop(row.id, None)
    if changes:
        work.unit.agents.update(row.id, **changes, updated_at=now_us())
    return agent_output(work, work.agent(row.id))


def _set_status(work: Work, row: Any, status: str, allowed_from: Iterable[str], verb: str) -> Agent:
    work.deny_deployment(f"{verb} agents")
    if row.status not in allowed_from:
        raise InvalidAction(f"a {row.status} agent cannot be {verb}d")
    work.unit.agents.update(row.id, status=status, updated_at=now_us())
    return agent_output(work, work.agent(row.id))


def retire(work: Work, command: AgentRetire) -> Agent:
    work.deny_deployment("retire agents")
    return _set_status(work, work.agent(command.agent_id), "retired", ("pending", "active", "dormant"), "retire")


def reinstate(work: Work, command: AgentReinstate) -> Agent:
    row = work.agent(command.agent_id)
    status = "active" if work.unit.instances.any_of_agent(row.id) else "pending"
    return _set_status(work, row, status, ("retired",), "reinstate")


def delete(work: Work, command: AgentDelete) -> Agent:
    work.deny_deployment("delete agents")
    row = work.agent(command.agent_id)
    answer = agent_output(work, row)
    work.unit.agents.delete(row.id)
    return answer


def get(work: Work, command: AgentGet) -> Agent:
    return agent_output(work, work.agent(command.agent_id))


def by_reference(work: Work, agent_id: str | None, external: str | None) -> Any:
    if (agent_id is None) == (external is None):
        message = "give exactly one of agent_id and external_identifier"
        raise InvalidValue(message, errors={"agent_id": message})
    if agent_id is not None:
        return work.agent(agent_id)
    row = work.unit.agents.by_external_identifier(external) if isinstance(external, str) else None
    if row is None:
        raise not_found("agent with external identifier", external)
    return work.agent(row.id)


def show(work: Work, command: AgentShow) -> Agent:
    row = by_reference(work, command.agent_id, command.external_identifier)
    agent = agent_output(work, row)
    if not command.include_risk_rollup:
        return agent
    report = risk_report(work, row.id)
    return agent.model_copy(update={
        "risk_rollup": report.rollup,
        "risk_rollup_by_schema_version": {version.id: version.rollup for version in report.schema_versions}})


def page(work: Work, command: AgentList) -> Page[Agent]:
    only = work.principal.agent_id if work.principal.deployed else None
    rows, total = work.unit.agents.page(command.page, only_id=only, **command.filters())
    info = page_info(total, command.page.offset, command.page.page_size, len(rows))
    return Page[Agent](items=[agent_output(work, row, counts=False) for row in rows], pagination=info.to_json(),
                       sorting=command.page.sorting.to_json())


def risk_report(work: Work, agent_ref: str) -> RiskReport:
    """``agent_ref``: an agent id or external identifier.  Levels and scores are the ones
    every span and run of these span types shows (:mod:`agentfolio.registry.risk`)."""
    agent = work.agent(agent_ref) if ids.is_id(agent_ref) else by_reference(work, None, agent_ref)
    profile = work.risk_profile(agent.id)
    everything: list[tuple[str, DataRisk]] = []
    versions = []
    for row in work.unit.schema_versions.of_agent(agent.id):
        span_types = load_span_types(_json.loads(row.span_type_schemas))
        pairs = [(name, span_type.data_risk) for name, span_type in span_types.items()]
        everything.extend(pairs)
        score, level = score_agent(pairs, profile)
        versions.append(SchemaVersionRisk(
            id=row.id, external_identifier=row.external_identifier, current=row.id == agent.current_schema_version_id,
            rollup={**rollup(pairs).to_json(), "risk_level": level, "risk_score": score},
            span_types=[score_span_type(name, risk, profile).to_json() for name, risk in pairs]))
    score, level = score_agent(everything, profile)
    return RiskReport(agent_id=agent.id, name=agent.name, external_identifier=agent.external_identifier,
                      risk_profile=profile.name, risk_level=level, risk_score=score,
                      rollup={**rollup(everything).to_json(), "risk_level": level, "risk_score": score},
                      schema_versions=versions)


# --------------------------------------------------------------------------- schema versions


def store_schema_version(work: Work, agent_id: str, draft: SchemaVersionDraft, *, reuse: bool) -> str:
    """Keep a schema version of the agent; its id.  ``reuse`` (an inline version at
    registration): a version of this agent with the same span types, or the id given
    when it already names a version of this agent, is answered instead of a new row."""
    fingerprint = draft.fingerprint()
    versions = work.unit.schema_versions
    if reuse:
        found = versions.find(agent_id, fingerprint)
        if found:
            return found
        if draft.id is not None and versions.owner(draft.id) == agent_id:
            return draft.id
    version_id = work.claim_id(draft.id, lambda chosen: versions.owner(chosen) is not None)
    stamp = now_us()
    versions.insert(id=version_id, agent_id=agent_id, external_identifier=draft.external_identifier,
                    fingerprint=fingerprint, span_type_schemas=_json.dumps(draft.span_type_schemas_json()),
                    quality_schemas=_json.dumps(draft.quality_schemas_json()), inserted_at=stamp, updated_at=stamp)
    work.unit.remember(CompiledSchemaVersion.from_draft(draft, version_id))
    schema_version_alerts(work, agent_id, version_id,
                          rollup((name, span_type.data_risk) for name, span_type in draft.span_types.items()).flags)
    return version_id


def version_alerts(work: Work, agent_id: str, version_id: str) -> None:
    """The alerts a stored schema version calls for (one created by another path)."""
    compiled = work.unit.compiled(version_id)
    if compiled is not None:
        schema_version_alerts(work, agent_id, version_id,
                              rollup((name, t.data_risk) for name, t in compiled.span_types.items()).flags)


def schema_version_output(work: Work, version_id: str | None) -> SchemaVersion:
    row = work.unit.schema_versions.get(version_id) if ids.is_id(version_id) else None  # type: ignore[arg-type]
    if row is None or (work.principal.deployed and row.agent_id != work.principal.agent_id):
        raise not_found("agent schema version", version_id)
    span_types = load_span_types(_json.loads(row.span_type_schemas))
    draft = SchemaVersionDraft(row.id, row.agent_id, row.external_identifier, span_types)
    repeats = (0 if row.external_identifier is None else count_external_identifier_repeats(
        row.external_identifier, work.unit.schema_versions.external_identifiers(row.agent_id,
                                                                                row.external_identifier)))
    details = schema_version_details(
        draft, id=row.id, account_id=work.account.id, agent_id=row.agent_id,
        inserted_at=from_micros(row.inserted_at), updated_at=from_micros(row.updated_at),  # type: ignore[arg-type]
        external_identifier_repeats=repeats,
        current_agent_deployment_refs=work.unit.deployments.running_schema_version(row.id))
    details["quality_schemas"] = _json.loads(row.quality_schemas)
    details["inserted_at"] = from_micros(row.inserted_at)
    details["updated_at"] = from_micros(row.updated_at)
    return SchemaVersion.model_validate(details)


def create_schema_version(work: Work, command: SchemaVersionCreate) -> SchemaVersion:
    agent_id = command.agent_id or work.principal.agent_id
    if agent_id is None:
        raise field_error("details.agent_id", "is required", code="required_value")
    agent = work.agent(agent_id)
    version_id = store_schema_version(work, agent.id, command.draft, reuse=False)
    return schema_version_output(work, version_id)


def get_schema_version(work: Work, command: SchemaVersionGet) -> SchemaVersion:
    return schema_version_output(work, command.agent_schema_version_id)
