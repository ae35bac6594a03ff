"""Reads behind the trace page and the trace list, each bounded by what one page shows.

A trace's spans are read as a tree, a few at a time: a span's children in start order
from an index (``ix_registry_spans_tree``), a trace's roots from a partial index
(``ix_registry_spans_roots``), a span's ancestors with one recursive query.  Nothing
here counts or offsets over a trace, so the cost of a page does not grow with the trace.

Start order is ``(started_at, id)`` with spans not started yet (``started_at`` NULL) last,
by id; a position in it is a :data:`Key`.  A root is a span with no parent, or whose
parent is not among the trace's spans (``parent_found`` not true); a child is one whose
parent was found in the trace.  So every span has exactly one place in the tree.

The trace list reads instances in the order asked for, keyset-paged, joined with their
agent's name and with the per-trace counts the span writers keep
(``registry_trace_stats``, see :mod:`agentfolio.store.registry.trace_stats`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.sql.elements import ColumnElement

from agentfolio.store.registry.base import Rows, eq
from agentfolio.store.registry_tables import (
    registry_agents as t_agents,
)
from agentfolio.store.registry_tables import (
    registry_instances as t_instances,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)
from agentfolio.store.registry_tables import (
    registry_trace_stats as t_stats,
)

__all__ = ["SKELETON", "Key", "TraceFilter", "TraceList", "TraceSpans", "key_of"]

#: A position in start order: (started_at or None, id).
Key = tuple[int | None, str]

#: The columns a row of the tree needs (no payloads).
SKELETON = (t_spans.c.id, t_spans.c.parent_span_id, t_spans.c.parent_found, t_spans.c.schema_name,
            t_spans.c.status, t_spans.c.validation_status, t_spans.c.started_at, t_spans.c.finished_at)
#: Most ancestors followed up from a span (a deeper chain is shown from there).
MAX_DEPTH = 10_000
_CHUNK = 500


def key_of(row: Any) -> Key:
    return (row.started_at, row.id)


#: (phase, bounded) pairs: the started spans then those not started, forwards; the other
#: way round backwards.  ``bounded``: only those beyond the key.
_Phases = list[tuple[str, bool]]


def _phases(key: Key | None, backwards: bool) -> _Phases:
    if key is None:
        return [("null", False), ("started", False)] if backwards else [("started", False), ("null", False)]
    if key[0] is None:
        return [("null", True), ("started", False)] if backwards else [("null", True)]
    return [("started", True)] if backwards else [("started", True), ("null", False)]


class TraceSpans(Rows):
    """One account's spans, read as trees."""

    __slots__ = ("_statements",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        # A walk runs the same few statements many times with other values: built once.
        self._statements: dict[tuple[Any, ...], Any] = {}

    @staticmethod
    def _skeleton() -> tuple[Any, ...]:
        """The skeleton columns and whether each span has children (an index probe; the
        children of a span of this account's trace are in that trace)."""
        child = cast(sa.Alias, t_spans.alias("child"))
        has_children = sa.exists().where(child.c.instance_id == t_spans.c.instance_id,
                                         child.c.parent_span_id == t_spans.c.id, child.c.parent_found.is_(True))
        return (*SKELETON, has_children.label("has_children"))

    def _in(self, instance_id: str) -> sa.Select[Any]:
        return self.scope.select_by_key(t_spans, *self._skeleton()).where(t_spans.c.instance_id == instance_id)

    def node(self, instance_id: str, span_id: str) -> Row[Any] | None:
        return self.conn.execute(self._in(instance_id).where(eq(t_spans.c.id, span_id))).first()

    def _children_statement(self, roots: bool, phase: str, bounded: bool, backwards: bool) -> Any:
        key = (roots, phase, bounded, backwards)
        found = self._statements.get(key)
        if found is not None:
            return found
        query = self.scope.select_by_key(t_spans, *self._skeleton()).where(
            t_spans.c.instance_id == sa.bindparam("instance"))
        if roots:
            query = query.where(t_spans.c.parent_found.is_not(True))
        else:
            query = query.where(t_spans.c.parent_span_id == sa.bindparam("parent"), t_spans.c.parent_found.is_(True))
        position = sa.bindparam("id", type_=sa.String)
        if phase == "started":
            query = query.where(t_spans.c.started_at.is_not(None))
            if bounded:
                ours = sa.tuple_(t_spans.c.started_at, t_spans.c.id)
                theirs = sa.tuple_(sa.bindparam("started", type_=sa.BigInteger), position)
                query = query.where(ours < theirs if backwards else ours > theirs)
            columns: tuple[Any, ...] = (t_spans.c.started_at, t_spans.c.id)
        else:
            query = query.where(t_spans.c.started_at.is_(None))
            if bounded:
                query = query.where(t_spans.c.id < position if backwards else t_spans.c.id > position)
            columns = (t_spans.c.id,)
        query = query.order_by(*(column.desc() if backwards else column.asc() for column in columns)) \
            .limit(sa.bindparam("limit", type_=sa.Integer))
        self._statements[key] = query
        return query

    def children(self, instance_id: str, parent_id: str | None, *, after: Key | None = None,
                 before: Key | None = None, backwards: bool = False, limit: int = 50) -> list[Row[Any]]:
        """Children of ``parent_id`` (``None``: the roots) in start order after ``after``
        (or from the first); ``backwards``: the nearest ones before ``before`` (or from the
        last), nearest first.  Each row says whether it ``has_children``."""
        if parent_id is not None and "\x00" in parent_id:
            return []
        key = before if backwards else after
        found: list[Row[Any]] = []
        for phase, bounded in _phases(key, backwards):
            if len(found) >= limit:
                break
            values: dict[str, Any] = {"instance": instance_id, "limit": limit - len(found)}
            if parent_id is not None:
                values["parent"] = parent_id
            if bounded and key is not None:
                values["id"] = key[1]
                if phase == "started":
                    values["started"] = key[0]
            statement = self._children_statement(parent_id is None, phase, bounded, backwards)
            found.extend(self.conn.execute(statement, values).all())
        return found

    def last_child(self, instance_id: str, parent_id: str) -> Row[Any] | None:
        found = self.children(instance_id, parent_id, backwards=True, limit=1)
        return found[0] if found else None

    def ancestors(self, instance_id: str, span_id: str) -> list[Row[Any]]:
        """The span and each of its ancestors up to its root (at most :data:`MAX_DEPTH`)."""
        level = sa.literal(0).label("level")
        chain = (self.scope.select(t_spans, *SKELETON, t_spans.c.instance_id, level)
                 .where(t_spans.c.instance_id == instance_id, eq(t_spans.c.id, span_id))
                 .cte("chain", recursive=True))
        up = cast(sa.Alias, t_spans.alias("up"))
        # Each step stays in the trace of the chain's first row, which the scope chose.
        step = (sa.select(*(up.c[column.name] for column in SKELETON), up.c.instance_id,
                          (chain.c.level + 1).label("level"))
                .where(up.c.id == chain.c.parent_span_id, chain.c.parent_found.is_(True),
                       up.c.instance_id == chain.c.instance_id, chain.c.level < MAX_DEPTH))
        chain = chain.union_all(step)
        return list(self.conn.execute(sa.select(chain).order_by(chain.c.level)).all())

    def stats(self, instance_id: str) -> Row[Any] | None:
        """The counts and timeline bounds kept for the trace."""
        return self.conn.execute(self.scope.select(t_stats).where(t_stats.c.instance_id == instance_id)).first()

    def overview(self, instance_id: str) -> list[Row[Any]]:
        """Per status: how many spans, how many fail validation, first start, last start and last finish."""
        invalid = sa.func.sum(sa.case((t_spans.c.validation_status == "invalid", 1), else_=0))
        return list(self.conn.execute(
            self.scope.select_by_key(t_spans, t_spans.c.status, sa.func.count().label("spans"),
                                     invalid.label("invalid"), sa.func.min(t_spans.c.started_at).label("first_start"),
                                     sa.func.max(t_spans.c.started_at).label("last_start"),
                                     sa.func.max(t_spans.c.finished_at).label("last_finish"))
            .where(t_spans.c.instance_id == instance_id).group_by(t_spans.c.status)).all())

    def payloads(self, instance_id: str, span_ids: Iterable[str]) -> dict[str, Row[Any]]:
        """Payload, result payload and validation of these spans of the trace."""
        wanted = list(span_ids)
        out: dict[str, Row[Any]] = {}
        for start in range(0, len(wanted), _CHUNK):
            for row in self.conn.execute(self.scope.select(
                    t_spans, t_spans.c.id, t_spans.c.payload, t_spans.c.result_payload, t_spans.c.validation)
                    .where(t_spans.c.instance_id == instance_id, t_spans.c.id.in_(wanted[start:start + _CHUNK]))):
                out[row.id] = row
        return out


# --------------------------------------------------------------------------- the trace list


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """Which traces to list: ``agent`` is an agent id or part of an agent's name (any
    case); ``since``/``until`` bound the start (microseconds); ``flagged``: only traces
    with a span failing validation (``False``: only those without)."""

    status: str | None = None
    agent: str | None = None
    since: int | None = None
    until: int | None = None
    flagged: bool | None = None


_DURATION = t_instances.c.finished_at - t_instances.c.started_at
SORTS: dict[str, ColumnElement[Any]] = {
    "started": t_instances.c.started_at,
    "duration": _DURATION,
    "spans": sa.func.coalesce(t_stats.c.span_count, 0),
    "flagged": sa.func.coalesce(t_stats.c.invalid_count, 0),
    "failed": sa.func.coalesce(t_stats.c.failed_count, 0),
    "status": t_instances.c.status,
    "agent": t_agents.c.name,
}
#: A cursor names a row by its sort value and id: (value or None, id).
Cursor = tuple[int | str | None, str]


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _seek(value: ColumnElement[Any], cursor: Cursor, *, descending: bool, forward: bool) -> ColumnElement[bool]:
    """Rows strictly after (``forward``) or before ``cursor`` in the order
    ``(value IS NULL), value [DESC], id [DESC]`` (NULL values last either way)."""
    known, identity = cursor
    # "<" walking forward through a descending order, or back through an ascending one.
    less = descending == forward

    def beyond(left: Any, right: Any) -> ColumnElement[bool]:
        return left < right if less else left > right  # type: ignore[no-any-return]
    if known is None:
        same_null = sa.and_(value.is_(None), beyond(t_instances.c.id, identity))
        return same_null if forward else sa.or_(value.is_not(None), same_null)
    among_known = sa.and_(value.is_not(None), sa.or_(beyond(value, known),
                                                    sa.and_(value == known, beyond(t_instances.c.id, identity))))
    return sa.or_(among_known, value.is_(None)) if forward else among_known


class TraceList(Rows):
    """One account's traces (agent instances) with their agent's name and counts."""

    def named(self, ref: str, *, limit: int = 10) -> list[str]:
        """Ids of the traces ``ref`` names: an instance id, or an external identifier (an
        OpenTelemetry trace id, a run's name) of one or more instances."""
        return list(self.conn.execute(
            self.scope.select(t_instances, t_instances.c.id)
            .where(sa.or_(eq(t_instances.c.id, ref), eq(t_instances.c.external_identifier, ref)))
            .order_by(t_instances.c.id).limit(limit)).scalars())

    def page(self, filters: TraceFilter, *, sort: str = "started", descending: bool = True,
             after: Cursor | None = None, before: Cursor | None = None, limit: int = 50,
             only_agent: str | None = None) -> list[Row[Any]]:
        """A page of traces in the order asked for: the first, the one after ``after``,
        or the one before ``before`` (answered in the same order); ``only_agent``: the
        traces of that agent alone (a deployment token's)."""
        value = SORTS[sort]
        query = (sa.select(t_instances.c.id, t_instances.c.agent_id, t_agents.c.name.label("agent_name"),
                           t_instances.c.status, t_instances.c.external_identifier, t_instances.c.session_id,
                           t_instances.c.started_at, t_instances.c.finished_at, t_instances.c.inserted_at,
                           sa.func.coalesce(t_stats.c.span_count, 0).label("span_count"),
                           sa.func.coalesce(t_stats.c.failed_count, 0).label("failed_count"),
                           sa.func.coalesce(t_stats.c.invalid_count, 0).label("invalid_count"),
                           value.label("sort_value"))
                 .select_from(t_instances.join(t_agents, t_agents.c.id == t_instances.c.agent_id)
                              .outerjoin(t_stats, t_stats.c.instance_id == t_instances.c.id))
                 # The agent and the counts are the scoped instance's own.
                 .where(self.scope.owns(t_instances)))
        if only_agent is not None:
            query = query.where(t_instances.c.agent_id == only_agent)
        if filters.status:
            query = query.where(eq(t_instances.c.status, filters.status))
        if filters.agent:
            query = query.where(sa.or_(eq(t_instances.c.agent_id, filters.agent),
                                       sa.func.lower(t_agents.c.name).like(_like(filters.agent), escape="\\")))
        if filters.since is not None:
            query = query.where(t_instances.c.started_at >= filters.since)
        if filters.until is not None:
            query = query.where(t_instances.c.started_at < filters.until)
        if filters.flagged is not None:
            flagged = sa.func.coalesce(t_stats.c.invalid_count, 0) > 0
            query = query.where(flagged if filters.flagged else sa.not_(flagged))
        backwards = before is not None and after is None
        if after is not None:
            query = query.where(_seek(value, after, descending=descending, forward=True))
        elif before is not None:
            query = query.where(_seek(value, before, descending=descending, forward=False))
        down = descending != backwards
        nulls = value.is_(None)
        order = [nulls.desc() if backwards else nulls.asc(), value.desc() if down else value.asc(),
                 t_instances.c.id.desc() if down else t_instances.c.id.asc()]
        rows = cast(list[Row[Any]], list(self.conn.execute(query.order_by(*order).limit(limit)).all()))
        return rows[::-1] if backwards else rows
