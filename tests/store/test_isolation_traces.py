"""Account isolation of the trace reads, on SQLite and PostgreSQL: every read of the trace
page and the trace list, run in a unit of account B with account A's instance and span
ids, finds nothing of A's.

``scripts/mutate_scope.py`` runs this file (with the other isolation suites) once per
``AccountScope`` call of the store with that one call unscoped: each run must fail.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentfolio.app.registry import AgentCreate, InstanceRegister, Principal, RegistryService, SpanCreate
from agentfolio.store import Store
from agentfolio.store.registry import RegistryUnit
from agentfolio.store.registry.traces import TraceFilter

START = datetime(2026, 1, 5, tzinfo=UTC)


def run_of(store: Store, account: str) -> tuple[str, list[str]]:
    """An instance of a new agent of ``account``: a root span and its child (the same
    names and starts in every account)."""
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure(account))
    agent = service.create_agent(principal, AgentCreate(name="shared name", external_identifier="same")).id
    instance = service.register_instance(principal, InstanceRegister(agent_id=agent, agent_version={"name": "a"},
                                                                     external_identifier="run-1")).id
    root = service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="step", status="complete",
                                                     payload={"n": 1}, result_payload={}, started_at=START,
                                                     finished_at=START + timedelta(seconds=2))).span.id
    child = service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="step",
                                                      status="failed", payload={}, result_payload={},
                                                      parent_span_id=root, started_at=START + timedelta(seconds=1),
                                                      finished_at=START + timedelta(seconds=2))).span.id
    return instance, [root, child]


def test_another_accounts_trace_reads_find_nothing(store: Store) -> None:
    instance, (root, child) = run_of(store, "alpha")
    run_of(store, "beta")
    alpha = store.accounts.get("alpha")
    beta = store.accounts.get("beta")
    assert alpha is not None and beta is not None
    for owner, expected in ((alpha, True), (beta, False)):
        with store.registry.reading(store.registry.account(owner.pk)) as unit:
            assert isinstance(unit, RegistryUnit)
            traces = unit.traces
            assert (traces.node(instance, child) is not None) is expected
            assert bool(traces.children(instance, None)) is expected
            assert bool(traces.children(instance, root)) is expected
            assert bool(traces.children(instance, None, backwards=True)) is expected
            assert bool(traces.children(instance, None, after=(None, ""))) is False
            assert (traces.last_child(instance, root) is not None) is expected
            assert len(traces.ancestors(instance, child)) == (2 if expected else 0)
            assert (traces.stats(instance) is not None) is expected
            assert bool(traces.overview(instance)) is expected
            assert bool(traces.payloads(instance, [root, child])) is expected
            listed = [row.id for row in unit.trace_list.page(TraceFilter(), limit=50)]
            assert (instance in listed) is expected and len(listed) == 1
            assert (unit.trace_list.named(instance) == [instance]) is expected
            named = unit.trace_list.named("run-1")
            assert len(named) == 1 and (named == [instance]) is expected
            by_agent = [row.id for row in unit.trace_list.page(TraceFilter(agent="shared"), limit=50)]
            assert (instance in by_agent) is expected and len(by_agent) == 1
