"""A span export opened as a file: its spans as a tree on a timeline, each titled by its
rendered template, served to the trace page like a stored trace (:class:`FileTrace`).

Titles, validation and risk come from the registry domain (one implementation each):
``CompiledSchemaVersion.summary`` renders the span type's Liquid template,
``CompiledSchemaVersion.validate`` checks params and result payloads, and
``risk.score_instance`` scores the run.  A span export without its schema version is
still shown: titles fall back to the span's own ``summary``/``schema_title``/``schema_name``
and its stored ``validation`` (if any) is shown as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentfolio.app.registry.errors import InvalidValue, not_found
from agentfolio.app.traces import ROW_PAGE, SpanDetail, SpanRow, TraceRows, detail_of
from agentfolio.registry.risk import InstanceScore, score_instance
from agentfolio.registry.spans import CompiledSchemaVersion, SpanValidation, validate_without_version
from agentfolio.web.html import parse_moment

PARENT_MISSING = "parent_span_id names no span of this instance"


@dataclass
class SpanNode:
    span: dict[str, Any]
    id: str
    parent_id: str | None
    schema_name: str
    title: str
    summary: str | None
    status: str
    started_at: Any
    finished_at: Any
    start: float | None
    end: float | None
    validation: dict[str, Any]
    flags: list[str] = field(default_factory=list)
    children: list[SpanNode] = field(default_factory=list)
    depth: int = 0
    #: Where its bar sits on the timeline, in thousandths of the trace's span.
    bar_x: float = 0.0
    bar_width: float = 0.0

    @property
    def duration_ms(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, (self.end - self.start) * 1000)

    @property
    def flagged(self) -> bool:
        return bool(self.flags) or self.validation.get("status") == "invalid"

    @property
    def payload(self) -> Any:
        return self.span.get("payload")

    @property
    def result_payload(self) -> Any:
        return self.span.get("result_payload")


@dataclass
class Trace:
    nodes: list[SpanNode]  # depth-first order, roots first
    roots: list[SpanNode]
    start: float | None
    end: float | None
    instance: dict[str, Any] | None
    schema_version_id: str | None
    has_schema_version: bool
    risk: InstanceScore | None
    status_counts: dict[str, int]

    @property
    def flagged(self) -> int:
        return sum(node.flagged for node in self.nodes)

    @property
    def duration_ms(self) -> float | None:
        return None if self.start is None or self.end is None else (self.end - self.start) * 1000


def build_trace(spans: list[dict[str, Any]], *, schema_version: dict[str, Any] | None = None,
                instance: dict[str, Any] | None = None, stored: bool = False) -> Trace:
    """``stored``: the spans come from the store, which validated them and rendered their
    summaries when they were written and read; those are shown as recorded. The summaries
    rendered here share one read's budget, however many spans there are."""
    from agentfolio.registry.templates import summaries_budget

    with summaries_budget():
        return _build_trace(spans, schema_version=schema_version, instance=instance, stored=stored)


def _build_trace(spans: list[dict[str, Any]], *, schema_version: dict[str, Any] | None,
                 instance: dict[str, Any] | None, stored: bool) -> Trace:
    compiled = None
    if schema_version:
        from agentfolio.web.agents import span_types_of

        span_types, _, meta = span_types_of(schema_version)
        compiled = CompiledSchemaVersion(meta.get("id") if isinstance(meta.get("id"), str) else None, span_types)
    nodes: dict[str, SpanNode] = {}
    order: list[SpanNode] = []
    for index, span in enumerate(spans):
        span_id = str(span.get("id") or f"#{index}")
        name = str(span.get("schema_name") or "?")
        payload, result = span.get("payload"), span.get("result_payload")
        status = str(span.get("status") or "?")
        recorded = span.get("validation")
        if stored and isinstance(recorded, dict):
            validation = recorded
            summary = span.get("summary") if isinstance(span.get("summary"), str) else None
            title = str(span.get("schema_title") or (compiled.title(name) if compiled else name))
        elif compiled is not None:
            validation = compiled.validate(name, payload, result, status=status).to_json()
            summary = compiled.summary(name, payload, result)
            title = compiled.title(name)
        else:
            recorded = span.get("validation")
            validation = recorded if isinstance(recorded, dict) else validate_without_version().to_json()
            summary = span.get("summary") if isinstance(span.get("summary"), str) else None
            title = str(span.get("schema_title") or name)
        start, end = parse_moment(span.get("started_at")), parse_moment(span.get("finished_at"))
        node = SpanNode(span, span_id, span.get("parent_span_id"), name, title, summary, status,
                        span.get("started_at"), span.get("finished_at"),
                        start.timestamp() if start else None, end.timestamp() if end else None, validation)
        if span_id in nodes:
            node.flags.append(f"duplicate span id {span_id!r}")
            span_id = f"{span_id}#{index}"
            node.id = span_id
        nodes[span_id] = node
        order.append(node)
    roots: list[SpanNode] = []
    for node in order:
        parent = nodes.get(node.parent_id) if node.parent_id else None
        already = any(p.get("part") == "parent_span_id" for p in node.validation.get("problems") or ()
                      if isinstance(p, dict))
        if node.parent_id and parent is None and not already:
            node.flags.append(PARENT_MISSING)
        if parent is not None and parent is not node:
            parent.children.append(node)
        else:
            roots.append(node)
    times = [t for node in order for t in (node.start, node.end) if t is not None]
    first, last = (min(times), max(times)) if times else (None, None)
    ordered: list[SpanNode] = []

    def key(node: SpanNode) -> tuple[float, str]:
        return (node.start if node.start is not None else float("inf"), node.id)

    stack = [(root, 0) for root in sorted(roots, key=key, reverse=True)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        node.depth = depth
        ordered.append(node)
        stack.extend((child, depth + 1) for child in sorted(node.children, key=key, reverse=True))
    for node in order:  # a parent cycle leaves spans unreachable from any root
        if id(node) not in seen:
            node.flags.append("parent chain loops back on itself")
            ordered.append(node)
    if first is not None and last is not None:
        width = max(last - first, 1e-9)
        for node in ordered:
            if node.start is None:
                continue
            bar_end = node.end if node.end is not None else last
            node.bar_x = round((node.start - first) / width * 1000, 2)
            node.bar_width = round(max((bar_end - node.start) / width * 1000, 2), 2)
    counts: dict[str, int] = {}
    for node in ordered:
        counts[node.status] = counts.get(node.status, 0) + 1
    risk = None
    if compiled is not None:
        per_type: dict[str, int] = {}
        for node in ordered:
            per_type[node.schema_name] = per_type.get(node.schema_name, 0) + 1
        risk = score_instance(per_type, {name: t.data_risk for name, t in compiled.span_types.items()})
    return Trace(ordered, roots, first, last, instance, compiled.id if compiled else None, compiled is not None,
                 risk, counts)


def trace_from_document(document: Any) -> Trace:
    from agentfolio.app.documents import schema_version_of, span_list

    spans = span_list(document) or []
    schema_version = None
    instance = None
    if isinstance(document, dict):
        for key in ("schema_version", "agent_schema_version"):
            if isinstance(document.get(key), dict):
                schema_version = schema_version_of(document[key])
                if schema_version is not None:
                    break
        instance = document.get("agent_instance") or document.get("instance")
    return build_trace(spans, schema_version=schema_version, instance=instance if isinstance(instance, dict) else None)


def _micros(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1_000_000)


class FileTrace:
    """An opened export read like a stored trace: the same rows, pages and span details.
    Everything is in memory already, so a page is a slice of the tree's order."""

    def __init__(self, trace: Trace, title: str) -> None:
        self.trace = trace
        self.title = title
        self._index = {node.id: position for position, node in enumerate(trace.nodes)}

    @property
    def first_us(self) -> int | None:
        return _micros(self.trace.start)

    @property
    def last_us(self) -> int | None:
        return _micros(self.trace.end)

    def _position(self, span_id: str) -> int:
        position = self._index.get(span_id)
        if position is None:
            raise not_found("span", span_id)
        return position

    def _subtree_end(self, position: int) -> int:
        depth = self.trace.nodes[position].depth
        end = position + 1
        while end < len(self.trace.nodes) and self.trace.nodes[end].depth > depth:
            end += 1
        return end

    def row(self, node: SpanNode) -> SpanRow:
        return SpanRow(id=node.id, parent_id=node.parent_id if node.depth else None, depth=node.depth,
                       schema_name=node.schema_name, title=node.title, summary=node.summary, status=node.status,
                       validation_status=str(node.validation.get("status") or "unchecked"),
                       started_us=_micros(node.start), finished_us=_micros(node.end), has_children=bool(node.children),
                       flags=list(node.flags))

    def rows(self, *, after: str | None = None, before: str | None = None, descend: bool = True,
             within: str | None = None, limit: int = ROW_PAGE) -> TraceRows:
        nodes = self.trace.nodes
        if before is not None:
            end = self._position(before)
            start = max(0, end - limit)
            return TraceRows(rows=[self.row(node) for node in nodes[start:end]], more_before=start > 0,
                             more_after=True)
        start, stop = 0, len(nodes)
        if after is not None:
            position = self._position(after)
            start = position + 1 if descend else self._subtree_end(position)
            if within is not None:
                root = self._position(within)
                if not root <= position < self._subtree_end(root):
                    raise InvalidValue(f"span {after!r} is not in the subtree of {within!r}")
                stop = self._subtree_end(root)
        return TraceRows(rows=[self.row(node) for node in nodes[start:min(stop, start + limit)]],
                         more_before=start > 0, more_after=start + limit < stop)

    def around(self, span_id: str, *, before: int = 40, after: int = ROW_PAGE) -> TraceRows:
        position = self._position(span_id)
        start = max(0, position - before)
        stop = min(len(self.trace.nodes), position + 1 + after)
        return TraceRows(rows=[self.row(node) for node in self.trace.nodes[start:stop]], more_before=start > 0,
                         more_after=stop < len(self.trace.nodes))

    def span(self, span_id: str) -> SpanDetail:
        node = self.trace.nodes[self._position(span_id)]
        return detail_of(self.row(node), node.payload, node.result_payload, node.validation)


__all__ = ["FileTrace", "SpanNode", "SpanValidation", "Trace", "build_trace", "trace_from_document"]
