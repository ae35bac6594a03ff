"""Account isolation of risk profiles and alerts, on SQLite and PostgreSQL: in a unit of
account B, every repository method given A's ids and names finds nothing and changes
nothing of A's (``scripts/mutate_scope.py`` runs this file with each scoping call of the
store removed in turn)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentfolio.app.registry import (
    AgentUpdate,
    AlertCount,
    InstanceRegister,
    InstanceTerminate,
    PageRequest,
    Principal,
    RegistryService,
    RiskProfileCreate,
    Sorting,
    SpanCreate,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.store import Store
from agentfolio.store.registry import RegistryUnit

VERSION = {"span_type_schemas": [{"name": "step", "params_schema": {"type": "object", "required": ["n"]}}]}
EVERYTHING = PageRequest(0, 100, Sorting("id", "asc"))


def populate(service: RegistryService, store: Store, name: str) -> dict[str, Any]:
    principal = Principal(store.accounts.ensure(name))
    run = service.register_instance(principal, InstanceRegister(
        agent_version={"name": "bot"}, agent_schema_version=schema_version_draft(VERSION, "agent_schema_version")))
    span = service.create_span(principal, SpanCreate(agent_instance_id=run.id, schema_name="step")).span
    service.run(principal, InstanceTerminate(agent_instance_id=run.id))
    profile = service.run(principal, RiskProfileCreate(name="same name"))
    service.run(principal, AgentUpdate(agent_id=run.agent_id, risk_profile_id=profile.id))
    return {"principal": principal, "profile": profile.id, "span": span.id, "run": run.id}


@pytest.fixture
def two(store: Store) -> tuple[RegistryService, dict[str, Any], dict[str, Any]]:
    service = RegistryService(store)
    return service, populate(service, store, "alice"), populate(service, store, "bob")


def in_unit(store: Store, holder: dict[str, Any], work: Callable[[RegistryUnit], Any]) -> Any:
    return store.registry.write(store.registry.account(holder["principal"].account.pk), work)


READS: list[tuple[str, Callable[[RegistryUnit, dict[str, Any]], Any]]] = [
    ("risk_profiles.get", lambda u, a: u.risk_profiles.get(a["profile"])),
    ("risk_profiles.exists", lambda u, a: u.risk_profiles.exists(a["profile"])),
    ("alerts.raised", lambda u, a: u.alerts.raised("schema_breaking_span", a["span"])),
    ("alerts.raised (run)", lambda u, a: u.alerts.raised("terminated_instance", a["run"])),
    ("alerts.get", lambda u, a: u.alerts.get(next(row.id for row in u.alerts.page(EVERYTHING, acknowledged=None)[0]))),
]


def test_a_unit_finds_nothing_of_another_account(two, store: Store) -> None:
    _, alice, bob = two
    for what, read in READS:
        assert read_in_own(store, alice, read) not in (None, False), what
    leaks = {}
    for what, read in READS[:4]:
        found = in_unit(store, bob, lambda unit, read=read: read(unit, alice))
        if found not in (None, False):
            leaks[what] = found
    assert leaks == {}
    alice_alerts = in_unit(store, alice, lambda unit: [row.id for row in unit.alerts.page(
        EVERYTHING, acknowledged=None)[0]])
    assert alice_alerts
    assert [in_unit(store, bob, lambda unit, alert=alert: unit.alerts.get(alert)) for alert in alice_alerts] \
        == [None] * len(alice_alerts)
    # Bob's own lists hold only his: one profile of the same name, his two alerts.
    mine = in_unit(store, bob, lambda unit: (unit.risk_profiles.page(EVERYTHING)[0],
                                             unit.risk_profiles.by_name("same name"),
                                             unit.risk_profiles.agent_counts(),
                                             unit.alerts.page(EVERYTHING, acknowledged=None)[0],
                                             unit.alerts.unacknowledged_count()))
    profiles, named, counts, alerts, open_count = mine
    assert [row.id for row in profiles] == [bob["profile"]] and named.id == bob["profile"]
    assert counts == {bob["profile"]: 1}
    assert {row.subject_id for row in alerts} == {bob["span"], bob["run"]} and open_count == 2


def read_in_own(store: Store, holder: dict[str, Any], read: Callable[[RegistryUnit, dict[str, Any]], Any]) -> Any:
    return in_unit(store, holder, lambda unit: read(unit, holder))


def test_a_unit_changes_nothing_of_another_account(two, store: Store) -> None:
    service, alice, bob = two
    alice_alerts = in_unit(store, alice, lambda unit: [row.id for row in unit.alerts.page(
        EVERYTHING, acknowledged=None)[0]])

    def vandalise(unit: RegistryUnit) -> None:
        unit.alerts.acknowledge(alice_alerts, 1)
        unit.alerts.acknowledge_all(1)

    in_unit(store, bob, vandalise)
    assert service.run(alice["principal"], AlertCount()).count == 2
    assert service.run(bob["principal"], AlertCount()).count == 0
