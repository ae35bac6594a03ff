"""Traces read as trees a page at a time, on SQLite and PostgreSQL: every span is reached
exactly once in depth-first start order whatever the page size, forwards or backwards;
subtrees are skipped or read alone; the trace list pages, sorts and filters from counts
the database keeps exact through every way spans are written, moved and deleted; one
account never sees another's traces."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.app.registry import (
    AgentCreate,
    AgentDelete,
    BulkItem,
    InstanceRegister,
    InvalidValue,
    NotFound,
    Principal,
    RegistryService,
    SpanCreate,
    SpanFinish,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.app.traces import TraceQuery, TraceService
from agentfolio.otel.decode import OtelSpan
from agentfolio.otel.mapping import map_spans
from agentfolio.registry import ids
from agentfolio.store import Store
from agentfolio.store.engine import read_transaction
from agentfolio.store.otel_spans import OtelSpans
from agentfolio.store.registry_tables import registry_spans, registry_trace_stats

BASE = datetime(2026, 1, 1, tzinfo=UTC)
VERSION = {"external_identifier": "v1", "span_type_schemas": [
    {"name": "step", "title": "Step", "params_schema": {"type": "object", "required": ["n"]},
     "template": "step {{n}}"},
    {"name": "note", "params_schema": {"type": "object"}}]}
_accounts = itertools.count()


@dataclass
class Planned:
    id: str
    parent: str | None
    found: bool
    started: int | None


def new_account(store: Store) -> tuple[RegistryService, Principal, str, int]:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure(f"acct-{next(_accounts)}"))
    agent = service.create_agent(principal, AgentCreate(name=f"Agent {next(_accounts)}")).id
    partition = store.registry.account(principal.account.pk).partition
    return service, principal, agent, partition


def register(service: RegistryService, principal: Principal, agent: str, **extra: Any) -> str:
    return service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={"name": "a"},
        agent_schema_version=schema_version_draft(VERSION, "agent_schema_version"), **extra)).id


def plant(service: RegistryService, principal: Principal, instance: str, partition: int,
          plan: list[tuple[int | str | None, int | None]]) -> list[Planned]:
    """Spans from ``(parent, start second)`` pairs: parent an earlier index, ``None`` (a
    root) or ``"missing"`` (a parent no span has); start ``None``: not started."""
    made: list[Planned] = []
    items = []
    for index, (parent, second) in enumerate(plan):
        span_id = ids.new_id(partition)
        if parent == "missing":
            parent_id, found = ids.new_id(partition), False
        elif parent is None:
            parent_id, found = None, False
        else:
            parent_id, found = made[int(parent)].id, True
        started = None if second is None else BASE + timedelta(seconds=second)
        made.append(Planned(span_id, parent_id, found, None if started is None else int(started.timestamp() * 1e6)))
        status = "pending" if started is None else ("failed" if index % 5 == 3 else "complete")
        items.append(BulkItem(f"{instance}-{index}", SpanCreate(
            agent_instance_id=instance, schema_name="step" if index % 3 else "note", status=status,
            payload={"n": index} if index % 7 else {}, result_payload=None if status == "pending" else {},
            parent_span_id=parent_id, id=span_id, started_at=started,
            finished_at=None if started is None else started + timedelta(seconds=1))))
    answers = service.bulk(principal, items)
    assert all(not isinstance(answer.answer, Exception) for answer in answers), answers
    return made


def reference(spans: list[Planned]) -> list[tuple[str, int]]:
    children: dict[str | None, list[Planned]] = defaultdict(list)
    roots = []
    for span in spans:
        (children[span.parent] if span.found else roots).append(span)

    def key(span: Planned) -> tuple[bool, int, str]:
        return (span.started is None, span.started or 0, span.id)

    out: list[tuple[str, int]] = []

    def visit(span: Planned, depth: int) -> None:
        out.append((span.id, depth))
        for child in sorted(children[span.id], key=key):
            visit(child, depth + 1)

    for root in sorted(roots, key=key):
        visit(root, 0)
    return out


@st.composite
def forests(draw: Any) -> list[tuple[int | str | None, int | None]]:
    size = draw(st.integers(1, 24))
    plan: list[tuple[int | str | None, int | None]] = []
    for index in range(size):
        parent = draw(st.one_of(st.none(), st.just("missing"), st.integers(0, index - 1))) if index else \
            draw(st.one_of(st.none(), st.just("missing")))
        plan.append((parent, draw(st.one_of(st.none(), st.integers(0, 5)))))
    return plan


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=forests(), page=st.integers(1, 7))
def test_every_span_once_in_depth_first_start_order_at_any_page_size(store: Store, plan: Any, page: int) -> None:
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    spans = plant(service, principal, instance, partition, plan)
    expected = reference(spans)
    traces = TraceService(store)
    seen: list[tuple[str, int]] = []
    after = None
    while True:
        found = traces.rows(principal, instance, after=after, limit=page)
        seen.extend((row.id, row.depth) for row in found.rows)
        if not found.more_after:
            break
        after = found.rows[-1].id
    assert seen == expected
    backwards: list[tuple[str, int]] = []
    last = expected[-1][0]
    backwards.insert(0, expected[-1])
    while True:
        found = traces.rows(principal, instance, before=last, limit=page)
        backwards[:0] = [(row.id, row.depth) for row in found.rows]
        if not found.more_before:
            break
        last = found.rows[0].id
    assert backwards == expected
    position = {span_id: index for index, (span_id, _) in enumerate(expected)}
    for span_id, depth in expected:
        subtree_end = next((i for i, (_, d) in enumerate(expected) if i > position[span_id] and d <= depth),
                           len(expected))
        skipped = traces.rows(principal, instance, after=span_id, descend=False, limit=len(expected))
        assert [row.id for row in skipped.rows] == [sid for sid, _ in expected[subtree_end:]]
        inside = traces.rows(principal, instance, after=span_id, within=span_id, limit=len(expected))
        assert [row.id for row in inside.rows] == [sid for sid, _ in expected[position[span_id] + 1:subtree_end]]
    all_rows = list(traces.all_rows(principal, instance, page=page))
    assert [(row.id, row.depth) for row in all_rows] == expected
    by_id = {row.id: row for row in all_rows}
    for span in spans:
        assert by_id[span.id].has_children == any(other.parent == span.id and other.found for other in spans)


def test_rows_carry_titles_summaries_and_flags_and_the_header_counts(store: Store) -> None:
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    spans = plant(service, principal, instance, partition,
                  [(None, 0), (0, 1), (1, 2), ("missing", 3), (0, 4), (0, 5), (0, 6), (0, 7)])
    traces = TraceService(store)
    rows = traces.rows(principal, instance).rows
    by_id = {row.id: row for row in rows}
    assert by_id[spans[0].id].title == "note" and by_id[spans[0].id].summary is None
    assert by_id[spans[1].id].title == "Step" and by_id[spans[1].id].summary == "step 1"
    assert by_id[spans[3].id].flagged and by_id[spans[3].id].depth == 0  # its parent is no span of the trace
    header = traces.header(principal, instance)
    assert header.span_count == 8 and header.failed_count == 1
    assert traces.breakdown(principal, instance).status_counts == {"complete": 7, "failed": 1}
    assert header.flagged_count == 2  # span 7's params lack "n"; span 3's parent is missing
    assert by_id[spans[7].id].flagged and not by_id[spans[0].id].flagged
    assert header.first_us == spans[0].started and header.last_us == spans[7].started + 1_000_000
    detail = traces.span(principal, instance, spans[1].id)
    assert detail.payload == {"n": 1} and detail.row.summary == "step 1" and detail.row.depth == 1
    assert detail.validation["status"] == "valid"


def test_sqlite_reads_a_trace_through_the_traces_indexes(store: Store) -> None:
    """Reading one trace never walks the account's spans: SQLite without statistics rated
    the indexes leading with the account (by start, by status) as good as the trace's own,
    so a trace page cost what the account had stored."""
    if store.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's planner, without statistics; PostgreSQL plans from its own")
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    spans = plant(service, principal, instance, partition, [(None, 0), (0, 1), (1, 2), (0, 3), (None, 4)])
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    traces = TraceService(store)
    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        traces.header(principal, instance)
        traces.breakdown(principal, instance)
        traces.rows(principal, instance)
        traces.around(principal, instance, spans[2].id, before=1, after=1)
        traces.span(principal, instance, spans[1].id)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    walks = []
    with store.engine.connect() as connection:
        for statement, parameters in statements:
            if "registry_spans" in statement:
                plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
                # An index leading with the account walks it, unless it is looked up by span id too.
                walks += [step for step in plan if "registry_spans USING" in step and "(account_pk=?" in step
                          and "(account_pk=? AND id=?)" not in step]
    assert any("registry_spans" in statement for statement, _ in statements)
    assert walks == []


def test_a_deep_link_window_and_refusals(store: Store) -> None:
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    spans = plant(service, principal, instance, partition, [(None, i) for i in range(30)])
    traces = TraceService(store)
    window = traces.around(principal, instance, spans[15].id, before=5, after=5)
    assert [row.id for row in window.rows] == [span.id for span in spans[10:21]]
    assert window.more_before and window.more_after
    with pytest.raises(NotFound):
        traces.rows(principal, instance, after="not-an-id")
    with pytest.raises(NotFound):
        traces.span(principal, instance, ids.new_id(partition))
    with pytest.raises(InvalidValue):
        traces.rows(principal, instance, after=spans[3].id, within=spans[4].id)
    other_instance = register(service, principal, agent)
    with pytest.raises(NotFound):  # a span of another trace is not this trace's
        traces.span(principal, other_instance, spans[0].id)


def stats(store: Store) -> dict[str, tuple[int, int, int]]:
    with read_transaction(store.engine) as connection:
        kept = {row.instance_id: (row.span_count, row.failed_count, row.invalid_count)
                for row in connection.execute(sa.select(registry_trace_stats))}
        bounds = {row.instance_id: (row.first_start, row.last_end)
                  for row in connection.execute(sa.select(registry_trace_stats))}
        for row in connection.execute(sa.select(registry_spans.c.instance_id, sa.func.min(registry_spans.c.started_at),
                                                sa.func.max(sa.func.coalesce(registry_spans.c.finished_at,
                                                                             registry_spans.c.started_at)))
                                      .group_by(registry_spans.c.instance_id)):
            first, last = bounds[row[0]]  # the kept bounds hold every span (they may only be wider)
            assert first <= row[1] and last >= row[2]
        invalid = sa.func.sum(sa.case((registry_spans.c.validation_status == "invalid", 1), else_=0))
        failed = sa.func.sum(sa.case((registry_spans.c.status == "failed", 1), else_=0))
        counted = {row[0]: (row[1], row[2], row[3]) for row in connection.execute(
            sa.select(registry_spans.c.instance_id, sa.func.count(), failed, invalid)
            .group_by(registry_spans.c.instance_id))}
    return {key: value for key, value in kept.items() if value != (0, 0, 0)}, counted  # type: ignore[return-value]


def test_counts_stay_exact_through_creates_finishes_bulk_otlp_moves_and_deletes(store: Store) -> None:
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    created = service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="step",
                                                        payload={"n": 1})).span.id
    plant(service, principal, instance, partition, [(None, i) for i in range(12)])
    service.run(principal, SpanFinish(agent_span_id=created, status="failed", result_payload={}))
    kept, counted = stats(store)
    assert kept == counted and kept[instance][1] >= 1
    # OTLP: children first under their service, then the span naming the agent moves them.
    trace = "cd" * 16

    def otel(index: int, parent: int | None, attributes: dict[str, Any] | None = None) -> OtelSpan:
        return OtelSpan(trace_id=trace, span_id=f"{index + 1:016x}", parent_span_id=None if parent is None
                        else f"{parent + 1:016x}", name=f"step {index}", kind="INTERNAL",
                        start_ns=1_700_000_000 * 10**9 + index, end_ns=1_700_000_000 * 10**9 + 100 + index,
                        status_code="ERROR" if index == 2 else "UNSET", status_message="",
                        attributes=attributes or {}, events=[], links=[],
                        resource={"attributes": {"service.name": "svc"}}, scope={"name": "tests"})

    writer = OtelSpans(store.registry)
    writer.write(principal.account, map_spans([otel(1, 0), otel(2, 1)]))
    kept, counted = stats(store)
    assert kept == counted
    writer.write(principal.account, map_spans([otel(0, None, {"gen_ai.agent.name": "planner"})]))
    kept, counted = stats(store)
    assert kept == counted
    assert sorted(count for count, _, _ in counted.values()) == sorted([13, 3])
    service.run(principal, AgentDelete(agent_id=agent))
    kept, counted = stats(store)
    assert kept == counted and instance not in kept


def test_the_list_pages_sorts_and_filters_without_counting_spans(store: Store) -> None:
    service, principal, agent, partition = new_account(store)
    other_agent = service.create_agent(principal, AgentCreate(name="Zeta scout")).id
    made = []
    for index in range(7):
        owner = agent if index % 2 else other_agent
        instance = register(service, principal, owner, external_identifier=f"run-{index}")
        plan: list[tuple[int | str | None, int | None]] = [(None, index)] + [(0, index)] * index
        if index % 3 == 0:
            plan.append(("missing", index))  # flagged: a parent no span of the trace has
        plant(service, principal, instance, partition, plan)
        made.append(instance)
    traces = TraceService(store)
    everything = traces.list(principal, TraceQuery(limit=100)).items
    assert {item.id for item in everything} == set(made)
    assert all(item.agent_name in ("Zeta scout",) or item.agent_name.startswith("Agent") for item in everything)
    for sort in ("started", "duration", "spans", "flagged", "failed", "status", "agent"):
        for descending in (True, False):
            whole = [item.id for item in traces.list(principal, TraceQuery(sort=sort, descending=descending,
                                                                           limit=100)).items]
            paged: list[str] = []
            page = traces.list(principal, TraceQuery(sort=sort, descending=descending, limit=2))
            pages = [page]
            while True:
                paged.extend(item.id for item in page.items)
                if page.next is None:
                    break
                page = traces.list(principal, TraceQuery(sort=sort, descending=descending, limit=2,
                                                         after=page.next))
                pages.append(page)
            assert paged == whole, (sort, descending)
            back = traces.list(principal, TraceQuery(sort=sort, descending=descending, limit=2,
                                                     before=pages[-1].previous)) if pages[-1].previous else None
            if back is not None:
                assert [item.id for item in back.items] == [item.id for item in pages[-2].items]
    by_spans = traces.list(principal, TraceQuery(sort="spans", descending=True, limit=100)).items
    assert [item.span_count for item in by_spans] == sorted((item.span_count for item in by_spans), reverse=True)
    assert by_spans[0].span_count == 8 and by_spans[0].id == made[6]
    zeta = traces.list(principal, TraceQuery(agent="zeta", limit=100)).items
    assert {item.agent_id for item in zeta} == {other_agent} and len(zeta) == 4
    assert {item.id for item in traces.list(principal, TraceQuery(agent=agent, limit=100)).items} == \
        {made[i] for i in (1, 3, 5)}
    flagged = traces.list(principal, TraceQuery(flagged=True, limit=100)).items
    assert {item.id for item in flagged} == {made[i] for i in (0, 3, 6)}
    assert all(item.flagged_count == 1 for item in flagged)
    clean = traces.list(principal, TraceQuery(flagged=False, limit=100)).items
    assert {item.id for item in flagged} | {item.id for item in clean} == set(made)
    with pytest.raises(InvalidValue):
        traces.list(principal, TraceQuery(sort="nonsense"))
    with pytest.raises(InvalidValue):
        traces.list(principal, TraceQuery(after="%%%not-a-cursor"))


def test_one_account_never_sees_another_accounts_traces(store: Store) -> None:
    service, principal, agent, partition = new_account(store)
    instance = register(service, principal, agent)
    spans = plant(service, principal, instance, partition, [(None, 0), (0, 1)])
    other_service, other, other_agent, _ = new_account(store)
    register(other_service, other, other_agent)
    traces = TraceService(store)
    assert [item.id for item in traces.list(other, TraceQuery(limit=100)).items] != [instance]
    assert instance not in {item.id for item in traces.list(other, TraceQuery(agent=agent, limit=100)).items}
    for call in (lambda: traces.header(other, instance), lambda: traces.rows(other, instance),
                 lambda: traces.span(other, instance, spans[0].id)):
        with pytest.raises(NotFound):
            call()
