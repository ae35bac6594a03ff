"""Traces as people read them: the list of an account's traces, and one trace as a tree
of spans read a page at a time, each span's detail read when it is asked for.

A trace is an agent instance (an OpenTelemetry trace lands as one).  Its spans are shown
depth first, children in start order (see :mod:`agentfolio.store.registry.traces`):
:meth:`TraceService.rows` continues that order after a span, or goes back before one,
by following the tree through indexes, so a page costs the same in a trace of fifty
spans or of a million, and every span can be reached.  Nothing here reads payloads
beyond the page's own rows (their titles) or the one span asked for.

The viewer (:mod:`agentfolio.web.traces`) and ``agentfolio traces`` call this; titles,
validation and risk are the registry's (:mod:`agentfolio.app.registry.runs`).
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from agentfolio.app.registry.errors import InvalidValue, RegistryRefusal, not_found
from agentfolio.app.registry.outputs import Timestamp, from_micros
from agentfolio.app.registry.runs import instance_output, span_output
from agentfolio.app.registry.work import Principal, Work
from agentfolio.app.span_messages import SpanConversation, is_otel_span, span_conversation
from agentfolio.registry import ids
from agentfolio.registry.sensitive import load_masked
from agentfolio.registry.spans import CompiledSchemaVersion
from agentfolio.registry.templates import summaries_budget
from agentfolio.store import Store
from agentfolio.store.registry import RegistryUnit
from agentfolio.store.registry.traces import SORTS, Key, TraceFilter, key_of

__all__ = ["ROW_PAGE", "SpanDetail", "SpanRow", "TraceBreakdown", "TraceHeader", "TracePage", "TraceQuery", "TraceRows",
           "TraceService", "TraceSummary", "walk_rows"]

#: Rows of a trace one request draws, by default and at most.
ROW_PAGE = 200
MAX_ROWS = 1000
LIST_PAGE = 50
MAX_LIST = 200
#: Siblings read at once while walking down a level.
_BATCH = 100
STATUSES = ("pending", "active", "complete", "failed", "cancelled", "terminated")


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True)


class _Trace(_Output):
    id: str
    agent_id: str
    agent_name: str
    status: str
    #: The OpenTelemetry trace id, or the instance's external identifier.
    external_identifier: str | None
    session_id: str | None
    started_at: Timestamp | None
    finished_at: Timestamp | None
    span_count: int
    failed_count: int
    #: Spans failing validation (their schema, or a parent not in the trace).
    flagged_count: int


class TraceSummary(_Trace):
    """A trace as the list shows it."""

    duration_ms: float | None


class TracePage(_Output):
    items: list[TraceSummary]
    #: Cursors for the next and previous pages (``None``: none there).
    next: str | None
    previous: str | None
    sort: str
    descending: bool


class TraceHeader(_Trace):
    """What a trace page shows above its spans."""

    termination_reason: str | None
    schema_version_id: str | None
    #: The timeline: first span start and last span end (microseconds since the epoch).
    first_us: int | None
    last_us: int | None

    @property
    def duration_ms(self) -> float | None:
        if self.first_us is None or self.last_us is None:
            return None
        return (self.last_us - self.first_us) / 1000


class TraceBreakdown(_Output):
    """What a trace costs a pass over its spans to know: spans per status, and its risk."""

    status_counts: dict[str, int]
    risk_level: str | None = None
    risk_score: float | None = None
    risk: dict[str, Any] | None = None


class SpanRow(_Output):
    """One row of the tree: no payloads, only what the row shows."""

    id: str
    parent_id: str | None
    depth: int
    schema_name: str
    title: str
    summary: str | None
    status: str
    validation_status: str
    started_us: int | None
    finished_us: int | None
    has_children: bool
    #: Why the row is flagged beside its validation (a parent that loops back...).
    flags: list[str] = Field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return self.validation_status == "invalid" or bool(self.flags)

    @property
    def duration_ms(self) -> float | None:
        if self.started_us is None or self.finished_us is None:
            return None
        return max(0.0, (self.finished_us - self.started_us) / 1000)


class TraceRows(_Output):
    """Consecutive rows of a trace in tree order, and whether more lie beyond each end."""

    rows: list[SpanRow]
    more_before: bool
    more_after: bool


class SpanDetail(_Output):
    """Everything one span holds, for the detail pane and ``traces show --span``."""

    row: SpanRow
    payload: Any
    result_payload: Any
    validation: dict[str, Any]
    risk_level: str | None = None
    risk_score: float | None = None
    session_id: str | None = None
    #: The OpenTelemetry span kept whole, when the span came over OTLP.
    otel: dict[str, Any] | None = None
    #: The messages the span carries, read into a session (``None``: it carries none).
    conversation: Any = Field(default=None, exclude=True)
    conversation_notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TraceQuery:
    """Which traces to list and in what order; ``after``/``before``: a page's cursor."""

    status: str | None = None
    agent: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    flagged: bool | None = None
    sort: str = "started"
    descending: bool = True
    after: str | None = None
    before: str | None = None
    limit: int = LIST_PAGE


def _micros(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)


def encode_cursor(value: Any, identity: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([value, identity])).decode().rstrip("=")


def decode_cursor(text: str) -> tuple[int | str | None, str]:
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise InvalidValue("the page cursor is not one this list made; start from the first page") from None
    if (not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str)
            or not (raw[0] is None or isinstance(raw[0], str) or (isinstance(raw[0], int) and abs(raw[0]) < 2 ** 62))):
        raise InvalidValue("the page cursor is not one this list made; start from the first page")
    return raw[0], raw[1]


# --------------------------------------------------------------------------- the walk


@dataclass
class _Frame:
    """A level of the walk: the children of ``parent`` (``None``: the roots), read a batch
    at a time from ``key`` on (backwards: down from it)."""

    parent: Any
    depth: int
    key: Key | None = None
    buffer: deque[Any] = field(default_factory=deque)
    exhausted: bool = False

    def next(self, unit: RegistryUnit, instance_id: str, want: int, *, backwards: bool = False) -> Any:
        """The next child, or ``None`` when there is none."""
        if not self.buffer and not self.exhausted:
            want = min(_BATCH, max(want, 1))
            parent = self.parent.id if self.parent is not None else None
            batch = unit.traces.children(instance_id, parent, after=None if backwards else self.key,
                                         before=self.key if backwards else None, backwards=backwards, limit=want)
            self.exhausted = len(batch) < want
            self.buffer.extend(batch)
        if not self.buffer:
            return None
        row = self.buffer.popleft()
        self.key = key_of(row)
        return row


def _chain(unit: RegistryUnit, instance_id: str, span_id: str) -> list[Any]:
    """The span and its ancestors up to its root; refused when the span is not in the
    trace or its parents loop (such a span is not in the tree)."""
    chain = unit.traces.ancestors(instance_id, span_id)
    if not chain:
        raise not_found("agent span", span_id)
    seen: set[str] = set()
    for row in chain:
        if row.id in seen:
            raise InvalidValue(f"span {span_id!r} is not reachable from a root of this trace (its parents loop)")
        seen.add(row.id)
    if chain[-1].parent_found is True:
        raise InvalidValue(f"span {span_id!r} is nested deeper than this viewer follows")
    return chain


def _frames(chain: list[Any]) -> list[_Frame]:
    """One frame per level from the roots down to the span ``chain`` starts with, each
    positioned at that level's span on the chain."""
    depth = len(chain) - 1
    return [_Frame(chain[level + 1] if level + 1 < len(chain) else None, depth - level, key_of(chain[level]))
            for level in range(depth, -1, -1)]


def walk_rows(unit: RegistryUnit, instance_id: str, *, after: str | None = None, descend: bool = True,
              within: str | None = None, limit: int = ROW_PAGE) -> tuple[list[tuple[Any, int, bool]], bool]:
    """Up to ``limit`` rows in tree order after span ``after`` (from the first row without
    it), as (skeleton row, depth, has children); ``descend=False`` skips ``after``'s own
    subtree; ``within`` stops at the end of that span's subtree.  Also whether more follow."""
    stack: list[_Frame]
    if after is None:
        if within is not None:
            raise InvalidValue("'within' needs 'after' (a span of that subtree)")
        stack = [_Frame(None, 0)]
    else:
        chain = _chain(unit, instance_id, after)  # the span first, its root last
        stack = _frames(chain)
        if within is not None:
            levels = [index for index, row in enumerate(chain) if row.id == within]
            if not levels:
                raise InvalidValue(f"span {after!r} is not in the subtree of {within!r}")
            floor = len(chain) - levels[0]  # the depth of the children of ``within``
            stack = [frame for frame in stack if frame.depth >= floor]
        if descend:
            stack.append(_Frame(chain[0], len(chain)))
    out: list[tuple[Any, int, bool]] = []
    while stack and len(out) <= limit:  # one row past the page tells whether more follow
        frame = stack[-1]
        row = frame.next(unit, instance_id, limit + 1 - len(out))
        if row is None:
            stack.pop()
            continue
        out.append((row, frame.depth, bool(row.has_children)))
        if row.has_children:
            stack.append(_Frame(row, frame.depth + 1))
    return out[:limit], len(out) > limit


def walk_back(unit: RegistryUnit, instance_id: str, before: str, *,
              limit: int = ROW_PAGE) -> tuple[list[tuple[Any, int, bool]], bool]:
    """Up to ``limit`` rows in tree order before span ``before`` (answered in tree order),
    and whether more lie before them.  Backwards, a span comes after all of its
    descendants: a frame's parent is emitted when the frame runs out."""
    stack = _frames(_chain(unit, instance_id, before))
    out: list[tuple[Any, int, bool]] = []
    while stack and len(out) <= limit:
        frame = stack[-1]
        row = frame.next(unit, instance_id, limit + 1 - len(out), backwards=True)
        if row is None:
            stack.pop()
            if frame.parent is not None:
                out.append((frame.parent, frame.depth - 1, True))
            continue
        if row.has_children:
            stack.append(_Frame(row, frame.depth + 1))
        else:
            out.append((row, frame.depth, False))
    more = len(out) > limit
    return out[:limit][::-1], more


# --------------------------------------------------------------------------- the service


class TraceService:
    """Traces for every front end, on one :class:`~agentfolio.store.Store`."""

    def __init__(self, store: Store) -> None:
        self._rows = store.registry

    def _reading(self, principal: Principal) -> Any:
        return self._rows.reading(self._rows.account(principal.account.pk))

    def _work(self, unit: RegistryUnit, principal: Principal) -> Work:
        return Work(unit, principal, self._rows.account(principal.account.pk))

    # ------------------------------------------------------------------ the list

    def list(self, principal: Principal, query: TraceQuery) -> TracePage:
        """A page of traces, newest first by default; each row reads no span."""
        if query.sort not in SORTS:
            raise InvalidValue(f"cannot sort traces by {query.sort!r}; by one of {', '.join(SORTS)}")
        if query.status is not None and query.status not in STATUSES:
            raise InvalidValue(f"no trace status {query.status!r}; one of {', '.join(STATUSES)}")
        limit = max(1, min(query.limit, MAX_LIST))
        after = decode_cursor(query.after) if query.after else None
        before = decode_cursor(query.before) if query.before and not query.after else None
        agent = principal.agent_id if principal.deployed else None
        filters = TraceFilter(status=query.status, agent=(query.agent or "").strip()[:200] or None,
                              since=_micros(query.since), until=_micros(query.until), flagged=query.flagged)
        with self._reading(principal) as unit:
            rows = unit.trace_list.page(filters, sort=query.sort, descending=query.descending, after=after,
                                        before=before, limit=limit + 1, only_agent=agent)
        backwards = before is not None
        extra = len(rows) > limit
        if extra:
            rows = rows[1:] if backwards else rows[:limit]
        items = [_summary(row) for row in rows]
        first, last = (rows[0], rows[-1]) if rows else (None, None)
        more_after = extra if not backwards else True
        more_before = extra if backwards else (after is not None)
        return TracePage(items=items,
                         next=encode_cursor(last.sort_value, last.id) if last is not None and more_after else None,
                         previous=encode_cursor(first.sort_value, first.id) if first is not None and more_before
                         else None, sort=query.sort, descending=query.descending)

    # ------------------------------------------------------------------ one trace

    def resolve(self, principal: Principal, ref: str) -> str:
        """The instance id of the trace ``ref`` names (its id, or its OpenTelemetry trace
        id or external identifier when exactly one trace has it)."""
        ref = ref.strip()
        with self._reading(principal) as unit:
            found = unit.trace_list.named(ref) if ref and len(ref) <= 255 else []
            work = self._work(unit, principal)
            reachable = []
            for instance_id in found:
                try:
                    reachable.append(work.instance(instance_id).id)
                except RegistryRefusal:
                    continue
        if not reachable:
            raise not_found("trace", ref)
        if len(reachable) > 1 and ref not in reachable:
            raise InvalidValue(f"{len(reachable)} traces are named {ref!r} (one per agent): give an instance id, "
                               f"one of {', '.join(reachable)}")
        return ref if ref in reachable else reachable[0]

    def conversations(self, principal: Principal, instance_id: str,
                      span_ids: Sequence[str]) -> dict[str, SpanConversation]:
        """The messages each of these spans carries, read in one pass over their payloads
        (spans that carry none are left out)."""
        with self._reading(principal) as unit:
            instance = self._work(unit, principal).instance(instance_id)
            stored = unit.traces.payloads(instance.id, span_ids)
        out: dict[str, SpanConversation] = {}
        for span_id, row in stored.items():
            payload = load_masked(row.payload)
            result = None if row.result_payload is None else load_masked(row.result_payload)
            try:
                found = span_conversation(payload, result)
            except Exception:  # bad messages never stop the trace from showing: the span keeps them
                found = None
            if found is not None:
                out[span_id] = found
        return out

    def header(self, principal: Principal, instance_id: str) -> TraceHeader:
        """The trace, its agent and the counts the database keeps: no pass over its spans."""
        with self._reading(principal) as unit:
            row = self._work(unit, principal).instance(instance_id)
            agent = unit.agents.get(row.agent_id)
            stats = unit.traces.stats(row.id)
        first = stats.first_start if stats is not None else None
        last = stats.last_end if stats is not None else None
        return TraceHeader(
            id=row.id, agent_id=row.agent_id, agent_name=agent.name if agent is not None else row.agent_id,
            status=row.status, external_identifier=row.external_identifier, session_id=row.session_id,
            started_at=from_micros(row.started_at), finished_at=from_micros(row.finished_at),
            termination_reason=row.termination_reason, schema_version_id=row.schema_version_id,
            span_count=int(stats.span_count) if stats is not None else 0,
            failed_count=int(stats.failed_count) if stats is not None else 0,
            flagged_count=int(stats.invalid_count) if stats is not None else 0,
            first_us=first if first is not None else row.started_at,
            last_us=last if last is not None else row.finished_at)

    def breakdown(self, principal: Principal, instance_id: str) -> TraceBreakdown:
        """Spans per status and the trace's risk (the registry's score): one pass over the
        trace's spans, so pages ask for it after they are drawn."""
        with self._reading(principal) as unit:
            work = self._work(unit, principal)
            row = work.instance(instance_id)
            instance = instance_output(work, row, risk=work.risk_profile(row.agent_id))
            counts = {group.status: int(group.spans) for group in unit.traces.overview(row.id)}
        return TraceBreakdown(status_counts=counts, risk_level=instance.risk_level, risk_score=instance.risk_score,
                              risk=instance.risk)

    def rows(self, principal: Principal, instance_id: str, *, after: str | None = None, before: str | None = None,
             descend: bool = True, within: str | None = None, limit: int = ROW_PAGE) -> TraceRows:
        """Rows in tree order: the first ones, those after span ``after`` (``descend=False``:
        past its subtree; ``within``: not past that span's subtree), or those before span
        ``before``."""
        limit = max(1, min(limit, MAX_ROWS))
        for value in (after, before, within):
            if value is not None and not ids.is_id(value):
                raise not_found("agent span", value)
        with self._reading(principal) as unit:
            work = self._work(unit, principal)
            instance = work.instance(instance_id)
            compiled = unit.compiled(instance.schema_version_id)
            if before is not None:
                walked, more = walk_back(unit, instance.id, before, limit=limit)
                rows = _rows(unit, instance.id, compiled, walked)
                return TraceRows(rows=rows, more_before=more, more_after=True)
            walked, more = walk_rows(unit, instance.id, after=after, descend=descend, within=within, limit=limit)
            return TraceRows(rows=_rows(unit, instance.id, compiled, walked), more_before=after is not None,
                             more_after=more)

    def around(self, principal: Principal, instance_id: str, span_id: str, *, before: int = 40,
               after: int = ROW_PAGE) -> TraceRows:
        """The rows around one span: some before it, the span, and a page after it."""
        earlier = self.rows(principal, instance_id, before=span_id, limit=before)
        later = self.rows(principal, instance_id, after=span_id, limit=after)
        with self._reading(principal) as unit:
            work = self._work(unit, principal)
            instance = work.instance(instance_id)
            chain = _chain(unit, instance.id, span_id)
            node = unit.traces.node(instance.id, span_id)
            itself = _rows(unit, instance.id, unit.compiled(instance.schema_version_id),
                           [(node, len(chain) - 1, bool(node.has_children))])
        return TraceRows(rows=[*earlier.rows, *itself, *later.rows], more_before=earlier.more_before,
                         more_after=later.more_after)

    def all_rows(self, principal: Principal, instance_id: str, *, page: int = MAX_ROWS) -> Iterator[SpanRow]:
        """Every row of the trace in tree order, read a page at a time."""
        after: str | None = None
        while True:
            found = self.rows(principal, instance_id, after=after, limit=page)
            yield from found.rows
            if not found.more_after or not found.rows:
                return
            after = found.rows[-1].id

    def span(self, principal: Principal, instance_id: str, span_id: str) -> SpanDetail:
        """One span whole: params, result, validation, risk, and (for OTel spans) the
        span as sent, and the messages it carries read as a conversation."""
        if not ids.is_id(span_id):
            raise not_found("agent span", span_id)
        with self._reading(principal) as unit:
            work = self._work(unit, principal)
            instance = work.instance(instance_id)
            stored = unit.spans.get(span_id)
            if stored is None or stored["instance_id"] != instance.id:
                raise not_found("agent span", span_id)
            with summaries_budget():
                span = span_output(work, stored, summaries=True, risk=work.risk_profile(instance.agent_id))
            node = unit.traces.node(instance.id, span_id)
            depth = len(unit.traces.ancestors(instance.id, span_id)) - 1
        row = SpanRow(id=span.id, parent_id=span.parent_span_id, depth=max(depth, 0), schema_name=span.schema_name,
                      title=span.schema_title, summary=span.summary, status=span.status,
                      validation_status=str(span.validation.get("status") or node.validation_status),
                      started_us=node.started_at, finished_us=node.finished_at,
                      has_children=bool(node.has_children))
        return detail_of(row, span.payload, span.result_payload, span.validation, risk_level=span.risk_level,
                         risk_score=span.risk_score, session_id=span.session_id)


def detail_of(row: SpanRow, payload: Any, result: Any, validation: Mapping[str, Any], *,
              risk_level: str | None = None, risk_score: float | None = None,
              session_id: str | None = None) -> SpanDetail:
    """A span's detail from its parts (a stored span, or one of an opened export)."""
    conversation: SpanConversation | None = None
    try:
        conversation = span_conversation(payload, result)
    except Exception:  # bad messages never hide the span: its params and result are drawn as they are
        conversation = None
    return SpanDetail(row=row, payload=payload, result_payload=result, validation=dict(validation),
                      risk_level=risk_level, risk_score=risk_score, session_id=session_id,
                      otel=dict(payload) if is_otel_span(payload) else None,
                      conversation=conversation.session if conversation else None,
                      conversation_notes=conversation.notes if conversation else [])


def _summary(row: Any) -> TraceSummary:
    duration = None
    if row.started_at is not None and row.finished_at is not None:
        duration = max(0.0, (row.finished_at - row.started_at) / 1000)
    return TraceSummary(id=row.id, agent_id=row.agent_id, agent_name=row.agent_name, status=row.status,
                        external_identifier=row.external_identifier, session_id=row.session_id,
                        started_at=from_micros(row.started_at), finished_at=from_micros(row.finished_at),
                        duration_ms=duration, span_count=int(row.span_count), failed_count=int(row.failed_count),
                        flagged_count=int(row.invalid_count))


def _rows(unit: RegistryUnit, instance_id: str, compiled: CompiledSchemaVersion | None,
          walked: list[tuple[Any, int, bool]]) -> list[SpanRow]:
    """Rows with their titles; summaries rendered (one shared budget) only for span types
    that have a template, reading only those spans' payloads."""
    templated = {name for name, span_type in (compiled.span_types.items() if compiled else ())
                 if span_type.template is not None}
    wanted = [row.id for row, _, _ in walked if row.schema_name in templated]
    payloads = unit.traces.payloads(instance_id, wanted) if wanted else {}
    out = []
    with summaries_budget():
        for row, depth, has_children in walked:
            summary = None
            stored = payloads.get(row.id)
            if stored is not None and compiled is not None:
                payload = load_masked(stored.payload)
                result = None if stored.result_payload is None else load_masked(stored.result_payload)
                summary = compiled.summary(row.schema_name, payload, result)
            flags = ["parent_span_id names no span of this instance"] \
                if row.parent_span_id is not None and row.parent_found is not True else []
            out.append(SpanRow(id=row.id, parent_id=row.parent_span_id if row.parent_found else None, depth=depth,
                               schema_name=row.schema_name,
                               title=compiled.title(row.schema_name) if compiled else row.schema_name,
                               summary=summary, status=row.status, validation_status=row.validation_status,
                               started_us=row.started_at, finished_us=row.finished_at, has_children=has_children,
                               flags=flags))
    return out

