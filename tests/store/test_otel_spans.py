"""OTel spans in the registry tables: spans of one trace arriving in any order and in any
split into requests assemble into one trace under the agent that names itself, with
every parent found; re-sent spans are not stored twice; span types become the agent's
schema version."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.otel.decode import OtelSpan
from agentfolio.otel.mapping import map_spans
from agentfolio.store import Store
from agentfolio.store.engine import read_transaction
from agentfolio.store.otel_spans import OtelSpans
from agentfolio.store.registry_tables import registry_agents, registry_instances, registry_spans

_accounts = itertools.count()
START = 1_700_000_000 * 10**9


def span(index: int, parent: int | None, *, trace: str = "ab" * 16, attributes: dict[str, Any] | None = None,
         service: str = "svc") -> OtelSpan:
    return OtelSpan(trace_id=trace, span_id=f"{index + 1:016x}", parent_span_id=None if parent is None
                    else f"{parent + 1:016x}", name=f"step {index}", kind="INTERNAL", start_ns=START + index,
                    end_ns=START + 100 + index, status_code="UNSET", status_message="",
                    attributes=attributes or {}, events=[], links=[],
                    resource={"attributes": {"service.name": service}}, scope={"name": "tests"})


def rows(store: Store, account_pk: int) -> list[Any]:
    with read_transaction(store.engine) as connection:
        return connection.execute(sa.select(registry_spans).where(registry_spans.c.account_pk == account_pk)).all()


def agents_of(store: Store, account_pk: int) -> dict[str, str]:
    with read_transaction(store.engine) as connection:
        return dict(connection.execute(sa.select(registry_agents.c.id, registry_agents.c.name).where(
            registry_agents.c.account_pk == account_pk)).all())


@st.composite
def trees(draw: Any) -> tuple[list[int | None], list[list[int]]]:
    """A span tree (parent index per span, span 0 the root named by the agent) and the
    requests it is sent in: any order, any split."""
    size = draw(st.integers(2, 9))
    parents: list[int | None] = [None] + [draw(st.integers(0, i - 1)) for i in range(1, size)]
    order = draw(st.permutations(range(size)))
    cuts = sorted(draw(st.sets(st.integers(1, size - 1), max_size=size - 1)))
    requests = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, size], strict=False)]
    return parents, requests


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trees(), st.booleans())
def test_any_arrival_order_assembles_one_trace(store: Store, tree: Any, resend: bool) -> None:
    parents, requests = tree
    account = store.accounts.ensure(f"otel-{next(_accounts)}")
    writer = OtelSpans(store.registry)
    built = [span(i, parent, attributes={"gen_ai.agent.name": "Planner", "gen_ai.operation.name": "invoke_agent"}
                  if i == 0 else {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i % 3}"})
             for i, parent in enumerate(parents)]
    for request in requests:
        writer.write(account, map_spans([built[i] for i in request]))
    if resend:
        again = writer.write(account, map_spans(built))
        assert again.inserted == 0 and again.duplicates == len(built)
    stored = rows(store, account.pk)
    assert len(stored) == len(built)
    assert len({row.instance_id for row in stored}) == 1
    assert set(agents_of(store, account.pk).values()) >= {"Planner"}
    planner = next(agent_id for agent_id, name in agents_of(store, account.pk).items() if name == "Planner")
    assert {row.agent_id for row in stored} == {planner}
    assert all(row.validation_status == "valid" and row.parent_found is not False for row in stored), [
        (row.schema_name, row.validation) for row in stored]
    by_id = {row.id: row for row in stored}
    for row in stored:
        if row.parent_span_id is not None:
            assert by_id[row.parent_span_id].payload is not None
    with read_transaction(store.engine) as connection:
        instances = connection.execute(sa.select(registry_instances).where(
            registry_instances.c.account_pk == account.pk)).all()
    assert len(instances) == 1 and instances[0].external_identifier == "ab" * 16
    assert instances[0].status == "complete"
    compiled = store.registry.versions.get(instances[0].schema_version_id)
    assert compiled is not None and {row.schema_name for row in stored} <= set(compiled.span_types)


def test_an_unnamed_trace_belongs_to_its_service(store: Store) -> None:
    account = store.accounts.ensure("plain")
    written = OtelSpans(store.registry).write(account, map_spans([span(0, None, service="billing"),
                                                                  span(1, 0, service="billing")]))
    assert written.inserted == 2
    assert set(agents_of(store, account.pk).values()) == {"billing"}


def test_two_agents_in_one_trace_keep_their_own_spans(store: Store) -> None:
    """A outer agent calls an inner one; the inner agent's spans arrive first, then the
    inner agent span, then the outer one."""
    account = store.accounts.ensure("two")
    writer = OtelSpans(store.registry)
    outer = span(0, None, attributes={"gen_ai.agent.name": "Outer", "gen_ai.operation.name": "invoke_agent"})
    inner = span(1, 0, attributes={"gen_ai.agent.name": "Inner", "gen_ai.operation.name": "invoke_agent"})
    inner_chat = span(2, 1, attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
    outer_chat = span(3, 0, attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
    for batch in ([inner_chat], [inner], [outer_chat], [outer]):
        writer.write(account, map_spans(batch))
    names = agents_of(store, account.pk)
    placed = {row.payload and row.schema_name + "@" + names[row.agent_id] for row in rows(store, account.pk)}
    assert placed == {"invoke_agent Outer@Outer", "invoke_agent Inner@Inner", "chat m@Inner", "chat m@Outer"}
    stored = rows(store, account.pk)
    assert all(row.validation_status in ("valid", "invalid") for row in stored)
    # The inner agent's span names a parent in the outer agent's trace: flagged, as a cross-trace parent is.
    inner_row = next(row for row in stored if row.schema_name == "invoke_agent Inner")
    assert inner_row.parent_found is False


def _children_then_roots(store: Store, traces: int) -> tuple[Any, list[tuple[str, Any]]]:
    """``traces`` traces (a root naming the agent, seven children) sent as exporters send
    long runs: every child in one request, the roots in the next; the account and the
    statements the second request ran (with their parameters)."""
    account = store.accounts.ensure(f"late-roots-{traces}-{next(_accounts)}")
    writer = OtelSpans(store.registry)
    built = [[span(0, None, trace=f"{number:032x}",
                   attributes={"gen_ai.agent.name": "Planner", "gen_ai.operation.name": "invoke_agent"})]
             + [span(i, 0, trace=f"{number:032x}", attributes={"gen_ai.operation.name": "chat",
                                                                "gen_ai.request.model": f"m{i % 2}"})
                for i in range(1, 8)] for number in range(1, traces + 1)]
    writer.write(account, map_spans([child for tree in built for child in tree[1:]]))
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        writer.write(account, map_spans([tree[0] for tree in built]))
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    return account, statements


def test_children_stored_before_their_roots_move_to_the_agents_traces_together(store: Store) -> None:
    account, statements_for_4 = _children_then_roots(store, 4)
    stored = rows(store, account.pk)
    assert len(stored) == 32
    planner = next(agent_id for agent_id, name in agents_of(store, account.pk).items() if name == "Planner")
    assert {row.agent_id for row in stored} == {planner}
    assert all(row.validation_status == "valid" and row.parent_found is not False for row in stored)
    with read_transaction(store.engine) as connection:
        instances = connection.execute(sa.select(registry_instances).where(
            registry_instances.c.account_pk == account.pk)).all()
    # One trace each, the service's stand-ins removed once their spans moved out.
    assert sorted(row.external_identifier for row in instances) == [f"{n:032x}" for n in range(1, 5)]
    assert {row.agent_id for row in instances} == {planner}
    assert {row.instance_id for row in stored} == {row.id for row in instances}
    # The work does not grow with the traces moved: the same statements for 4 traces as for 64.
    _account, statements_for_64 = _children_then_roots(store, 64)
    assert len(statements_for_64) == len(statements_for_4)


def test_sqlite_finds_the_spans_of_traces_through_the_trace_index(store: Store) -> None:
    """Without statistics SQLite rated an index leading with the account as good as the
    trace's own, and walked every span of the account for each trace a root arrived for."""
    if store.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's planner, without statistics; PostgreSQL plans from its own")
    _account, statements = _children_then_roots(store, 2)
    by_trace = [(statement, parameters) for statement, parameters in statements
                if statement.lstrip().startswith("SELECT registry_spans.instance_id, registry_spans.id")]
    assert len(by_trace) == 1
    with store.engine.connect() as connection:
        plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + by_trace[0][0],
                                                             by_trace[0][1])]
    assert any("registry_spans USING INDEX ix_registry_spans_tree" in step for step in plan), plan


def test_otel_span_types_count_as_undeclared_in_the_risk_rollup(store: Store) -> None:
    from agentfolio.app.registry import Principal, RegistryService

    account = store.accounts.ensure("risk")
    OtelSpans(store.registry).write(account, map_spans([
        span(0, None, attributes={"gen_ai.agent.name": "Mailer", "gen_ai.operation.name": "invoke_agent"}),
        span(1, 0, attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_email"})]))
    report = RegistryService(store).agent_risk(Principal(account), "Mailer").model_dump(mode="json")
    assert set(report["rollup"]["undeclared_span_types"]) == {"invoke_agent Mailer", "execute_tool send_email"}
