"""Account isolation of the registry, on SQLite and PostgreSQL.

Two accounts hold the same kinds of rows (agents, agent versions, schema versions,
environments, deployments, tokens, instances, spans, idempotency records, settings),
some with equal names and keys.  Every repository method, run in a unit of account B
with A's ids, must find nothing and change nothing of A's; through the service, B lists,
gets, updates and deletes across accounts and sees or touches only its own.

``scripts/mutate_scope.py`` runs this file once per ``AccountScope`` call of the store
with that one call unscoped: each run must fail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from agentfolio.app.registry import (
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentList,
    AgentRetire,
    AgentShow,
    AgentUpdate,
    InstanceFinish,
    InstanceGet,
    InstanceList,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    NotFound,
    NotPermitted,
    PageRequest,
    Principal,
    RegistryService,
    SchemaVersionGet,
    Sorting,
    SpanCreate,
    SpanFinish,
    SpanGet,
    SpanList,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE
from agentfolio.store import Store
from agentfolio.store.registry import RegistryUnit
from agentfolio.store.registry_tables import registry_agent_versions, registry_idempotency, registry_schema_versions

VERSION = {"external_identifier": "v1", "span_type_schemas": [
    {"name": "step", "params_schema": {"type": "object"}, "template": "step {{n}}"}],
    "quality_schemas": [{"name": "score", "schema": {"type": "object"}}]}
EVERYTHING = PageRequest(0, 100, Sorting("id", "asc"))
EMPTY = (None, False, [], {})


@dataclass
class Holdings:
    """What one account stored."""

    principal: Principal
    account_id: str
    agent: str
    external: str
    instance: str
    instance_external: str
    version: str
    agent_version: str
    span: str
    key: str
    environment: str
    environment_id: str
    deployment: str
    version_fingerprint: str
    agent_version_fingerprint: str


def _populate(service: RegistryService, store: Store, name: str) -> Holdings:
    principal = Principal(store.accounts.ensure(name))
    external = f"bot-{name}"
    agent = service.create_agent(principal, AgentCreate(name="bot", external_identifier=external),
                                 key=f"create-{name}").id
    service.create_agent(principal, AgentCreate(name="shared", external_identifier="shared"))
    environment = f"staging-{name}"
    token = service.create_deployment_token(principal, agent, environment=environment)
    draft = schema_version_draft({**VERSION, "external_identifier": f"v-{name}"}, "agent_schema_version")
    instance = service.register_instance(principal, InstanceRegister(
        agent_id=agent, environment_id=token.environment_id, agent_version={"name": name},
        agent_schema_version=draft, external_identifier=f"run-{name}", session_id="same-session"))
    span = service.create_span(principal, SpanCreate(agent_instance_id=instance.id, schema_name="step",
                                                     payload={"n": 1}), key="same-key").span
    service.run(principal, InstanceRecordQuality(agent_instance_id=instance.id, name="score", payload={"s": 1}))
    profile = DEFAULT_RISK_PROFILE.model_dump(mode="json")
    service.set_risk_profile(principal, {**profile, "name": f"profile-{name}"})
    version = instance.agent_schema_version_id or ""
    return Holdings(principal, service.caller(principal).account_id, agent, external, instance.id,
                    f"run-{name}", version, instance.agent_version_id, span.id, "same-key", environment,
                    token.environment_id, instance.agent_deployment_id,
                    _fingerprint(store, registry_schema_versions, version),
                    _fingerprint(store, registry_agent_versions, instance.agent_version_id))


@pytest.fixture
def two(store: Store) -> tuple[RegistryService, Holdings, Holdings]:
    service = RegistryService(store)
    return service, _populate(service, store, "alice"), _populate(service, store, "bob")


def _unit_of(store: Store, holdings: Holdings, work: Callable[[RegistryUnit], Any]) -> Any:
    """``work`` in a write unit of the holder's account."""
    account = store.registry.account(holdings.principal.account.pk)
    return store.registry.write(account, work)


def _read_in(store: Store, holdings: Holdings, read: Callable[[RegistryUnit], Any]) -> Any:
    with store.registry.reading(store.registry.account(holdings.principal.account.pk)) as unit:
        return read(unit)


def _fingerprint(store: Store, table: sa.Table, row_id: str) -> str:
    with store.engine.connect() as connection:
        return connection.execute(sa.select(table.c.fingerprint).where(table.c.id == row_id)).scalar_one()


# --------------------------------------------------------------------------- repositories

#: (what, read in B's unit with A's holdings) → must find nothing
READS: list[tuple[str, Callable[[RegistryUnit, Holdings], Any]]] = [
    ("agents.get", lambda u, a: u.agents.get(a.agent)),
    ("agents.by_external_identifier", lambda u, a: u.agents.by_external_identifier(a.external)),
    ("agents.exists", lambda u, a: u.agents.exists(a.agent)),
    ("agent_versions.find", lambda u, a: u.agent_versions.find(a.agent, a.agent_version_fingerprint)),
    ("schema_versions.get", lambda u, a: u.schema_versions.get(a.version)),
    ("schema_versions.owner", lambda u, a: u.schema_versions.owner(a.version)),
    ("schema_versions.find", lambda u, a: u.schema_versions.find(a.agent, a.version_fingerprint)),
    ("schema_versions.external_identifiers", lambda u, a: u.schema_versions.external_identifiers(
        a.agent, "v-alice")),
    ("schema_versions.of_agent", lambda u, a: u.schema_versions.of_agent(a.agent)),
    ("schema_versions.span_type_schemas", lambda u, a: u.schema_versions.span_type_schemas(a.version)),
    ("schema_versions.quality_schemas", lambda u, a: u.schema_versions.quality_schemas(a.version)),
    ("environments.by_name", lambda u, a: u.environments.by_name(a.environment)),
    ("environments.exists", lambda u, a: u.environments.exists(a.environment_id)),
    ("deployments.find", lambda u, a: u.deployments.find(a.agent, a.environment_id)),
    ("deployments.current_schema_version", lambda u, a: u.deployments.current_schema_version(a.deployment)),
    ("deployments.running_schema_version", lambda u, a: u.deployments.running_schema_version(a.version)),
    ("instances.get", lambda u, a: u.instances.get(a.instance)),
    ("instances.exists", lambda u, a: u.instances.exists(a.instance)),
    ("instances.external_identifier_used", lambda u, a: u.instances.external_identifier_used(
        a.agent, a.instance_external)),
    ("instances.any_of_agent", lambda u, a: u.instances.any_of_agent(a.agent)),
    ("instances.status_counts", lambda u, a: u.instances.status_counts(a.agent)),
    ("spans.get", lambda u, a: u.spans.get(a.span)),
    ("spans.exists", lambda u, a: u.spans.exists(a.span)),
    ("spans.preload", lambda u, a: (u.spans.preload([a.span]), u.spans.loaded.get(a.span))[1]),
    ("spans.instance_of", lambda u, a: u.spans.instance_of(a.span)),
    ("spans.status_counts", lambda u, a: u.spans.status_counts(a.instance)),
    ("spans.schema_name_counts", lambda u, a: u.spans.schema_name_counts(a.instance)),
    ("idempotency.find", lambda u, a: u.idempotency.find("agents/create", "create-alice")),
    ("idempotency.find_keys", lambda u, a: u.idempotency.find_keys([("agents/create", "create-alice")])),
]


def test_a_unit_finds_nothing_of_another_account(two, store: Store) -> None:
    _, alice, bob = two
    unseen = [what for what, read in READS
              if _read_in(store, alice, lambda unit, read=read: read(unit, alice)) in EMPTY]
    assert unseen == [], "each read must find alice's rows in alice's own unit"
    leaks = {what: found for what, read in READS
             if (found := _read_in(store, bob, lambda unit, read=read: read(unit, alice))) not in EMPTY}
    assert leaks == {}, "reads in bob's unit found alice's rows"
    counted, listed = _read_in(store, bob, lambda unit: (unit.agents.count(), unit.agents.page(EVERYTHING)[0]))
    assert counted == len(listed) and {row.account_pk for row in listed} == {bob.principal.account.pk}


def test_a_unit_changes_nothing_of_another_account(two, store: Store) -> None:
    service, alice, bob = two

    def vandalise(unit: RegistryUnit) -> None:
        unit.agents.update(alice.agent, name="hacked")
        unit.instances.update(alice.instance, status="failed")
        unit.spans.update(alice.span, status="failed")
        unit.deployments.update(alice.deployment, current_schema_version_id=None)
        unit.settings.set_risk_profile(None)
        unit.agents.delete(alice.agent)

    _unit_of(store, bob, vandalise)
    assert service.run(alice.principal, AgentGet(alice.agent)).name == "bot"
    assert service.run(alice.principal, InstanceGet(agent_instance_id=alice.instance)).status == "pending"
    assert service.run(alice.principal, SpanGet(agent_span_id=alice.span)).status == "active"
    assert service.risk_profile(alice.principal).name == "profile-alice"
    assert _read_in(store, alice, lambda unit: unit.deployments.current_schema_version(alice.deployment)) \
        == alice.version


def test_each_account_has_its_own_settings_row(two, store: Store) -> None:
    service, alice, bob = two
    for holdings in (alice, bob):
        row = _read_in(store, holdings, lambda unit: unit.settings.get())
        assert row.id == holdings.account_id
        assert service.risk_profile(holdings.principal).name == f"profile-{holdings.principal.account.name}"


def test_inserted_rows_belong_to_the_unit_account(two, store: Store) -> None:
    _, alice, bob = two
    pks = {row.account_pk for row in _rows(store, "registry_spans")}
    assert pks == {alice.principal.account.pk, bob.principal.account.pk}
    for table in ("registry_agents", "registry_agent_versions", "registry_schema_versions", "registry_environments",
                  "registry_deployments", "registry_tokens", "registry_instances", "registry_idempotency"):
        owners = {row.account_pk for row in _rows(store, table)}
        assert owners == pks, table


def _rows(store: Store, table: str) -> list[Any]:
    with store.engine.connect() as connection:
        return list(connection.execute(sa.text(f"SELECT account_pk FROM {table}")))


# --------------------------------------------------------------------------- the service


def test_lists_show_only_the_callers_rows(two) -> None:
    service, alice, bob = two
    for mine, theirs in ((alice, bob), (bob, alice)):
        agents = service.list_agents(mine.principal, AgentList(page=EVERYTHING))
        assert {agent.id for agent in agents.items} >= {mine.agent} and agents.pagination["item_count"] == 2
        assert theirs.agent not in {agent.id for agent in agents.items}
        instances = service.list_instances(mine.principal, InstanceList(page=EVERYTHING))
        assert [item.id for item in instances.items] == [mine.instance]
        assert instances.pagination["item_count"] == 1
        spans = service.list_spans(mine.principal, SpanList(page=EVERYTHING, session_id="same-session"))
        assert [span.id for span in spans.items] == [mine.span] and spans.pagination["item_count"] == 1
        filtered = service.list_spans(mine.principal, SpanList(page=EVERYTHING, agent_instance_id=theirs.instance))
        assert filtered.items == [] and filtered.pagination["item_count"] == 0


GETS: list[tuple[str, Callable[[Holdings], Any]]] = [
    ("agent", lambda a: AgentGet(a.agent)),
    ("agent by external identifier", lambda a: AgentShow(external_identifier=a.external)),
    ("schema version", lambda a: SchemaVersionGet(a.version)),
    ("instance", lambda a: InstanceGet(agent_instance_id=a.instance)),
    ("span", lambda a: SpanGet(agent_span_id=a.span)),
]
CHANGES: list[tuple[str, Callable[[Holdings], Any]]] = [
    ("update agent", lambda a: AgentUpdate(agent_id=a.agent, name="hacked")),
    ("retire agent", lambda a: AgentRetire(a.agent)),
    ("delete agent", lambda a: AgentDelete(a.agent)),
    ("start instance", lambda a: InstanceStart(agent_instance_id=a.instance)),
    ("finish instance", lambda a: InstanceFinish(agent_instance_id=a.instance, status="failed")),
    ("record quality", lambda a: InstanceRecordQuality(agent_instance_id=a.instance, name="score", payload={})),
    ("finish span", lambda a: SpanFinish(agent_span_id=a.span, status="failed")),
    ("create span", lambda a: SpanCreate(agent_instance_id=a.instance, schema_name="step")),
    ("register instance", lambda a: InstanceRegister(agent_id=a.agent, agent_version={})),
]


def test_another_accounts_objects_are_not_found(two) -> None:
    service, alice, bob = two
    for what, command in GETS + CHANGES:
        with pytest.raises(NotFound):
            service.run(bob.principal, command(alice))
        agent = service.run(alice.principal, AgentGet(alice.agent))
        assert (agent.name, agent.status) == ("bot", "active"), what
        instance = service.run(alice.principal, InstanceGet(agent_instance_id=alice.instance))
        assert (instance.status, instance.span_counts["total"]) == ("pending", 1), what
        assert service.run(alice.principal, SpanGet(agent_span_id=alice.span)).status == "active", what


def test_idempotency_keys_are_per_account(two) -> None:
    service, alice, bob = two
    again = service.create_agent(bob.principal, AgentCreate(name="bot", external_identifier="bot-alice"),
                                 key="create-alice")
    assert again.id != alice.agent and again.account_id == bob.account_id
    replay = service.create_agent(alice.principal, AgentCreate(name="bot", external_identifier="bot-alice"),
                                  key="create-alice")
    assert replay.id == alice.agent


def test_an_expired_key_is_freed_only_in_its_account(two, store: Store) -> None:
    service, alice, bob = two
    bobs = service.create_agent(bob.principal, AgentCreate(name="kept", external_identifier="k"), key="shared")
    service.create_agent(alice.principal, AgentCreate(name="old", external_identifier="k"), key="shared")
    with store.engine.begin() as connection:  # alice's record of the key is past the window
        connection.execute(sa.update(registry_idempotency)
                           .where(registry_idempotency.c.account_pk == alice.principal.account.pk)
                           .values(inserted_at=0))
    service.create_agent(alice.principal, AgentCreate(name="new", external_identifier="k2"), key="shared")
    replay = service.create_agent(bob.principal, AgentCreate(name="kept", external_identifier="k"), key="shared")
    assert replay.id == bobs.id


def test_a_deployment_token_of_another_account_reaches_nothing(two, store: Store) -> None:
    service, alice, bob = two
    token = service.create_deployment_token(bob.principal, bob.agent)
    deployed = service.authenticate(token.token)
    assert deployed is not None and deployed.account.pk == bob.principal.account.pk
    with pytest.raises((NotFound, NotPermitted)):
        service.run(deployed, AgentGet(alice.agent))
    with pytest.raises(NotFound):
        service.run(deployed, SpanGet(agent_span_id=alice.span))
    assert [span.id for span in service.list_spans(deployed, SpanList(page=EVERYTHING)).items] == [bob.span]
