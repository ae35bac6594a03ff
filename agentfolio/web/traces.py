"""The trace pages: the list of traces, and one trace as a split pane.

On the left the spans as a tree beside their waterfall, read a page at a time (the
first page is in the page; more pages, before or after, come from ``…/rows`` as the
list scrolls or ``j``/``k`` step past its end); on the right the selected span's
detail, read when it is selected (``…/span?id=``), its id in the URL (``?span=``) so
back, forward and reload keep it.  No payload is in the page but the selected span's:
the page weighs the same for a trace of any size.

A stored trace is read through :class:`agentfolio.app.traces.TraceService`; an opened
span export through :class:`agentfolio.web.trace_files.FileTrace`, which answers the
same rows and details.  Routes are added to the viewer's router by :func:`add_routes`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from agentfolio.app.registry import Principal
from agentfolio.app.traces import (
    ROW_PAGE,
    SpanDetail,
    SpanRow,
    TraceBreakdown,
    TraceHeader,
    TracePage,
    TraceQuery,
    TraceRows,
)
from agentfolio.errors import AgentfolioError
from agentfolio.present.durations import duration_label, moment_label, offset_label, span_duration_label
from agentfolio.web import html
from agentfolio.web.trace_files import FileTrace, SpanNode, SpanValidation, Trace, build_trace, trace_from_document

if TYPE_CHECKING:
    from agentfolio.web.app import WebViewer

__all__ = ["FileTrace", "SpanNode", "SpanValidation", "Trace", "add_routes", "build_trace", "trace_from_document"]

#: Rows drawn before a linked span when a page opens on it.
ROWS_BEFORE_LINKED = 40
#: Rows in the page as it opens (a few screens); the list reads more as it scrolls.
FIRST_ROWS = 100
_CSS_TOKEN = re.compile(r"[^a-z0-9_-]")
#: Closest two axis labels may be, in percent of the axis.
TICK_GAP = 9.0
#: Deepest indentation drawn (deeper spans say their depth in ``aria-level``).
MAX_INDENT = 30


# --------------------------------------------------------------------------- labels


def css_token(text: str) -> str:
    return _CSS_TOKEN.sub("", text.lower())[:24] or "unknown"


_NICE = (1, 2, 5)


def tick_step(total_us: float, wanted: int = 5) -> float:
    """The round step (1, 2 or 5 × 10ⁿ µs) giving about ``wanted`` ticks over ``total_us``."""
    raw = max(total_us / wanted, 1.0)
    power = 10 ** math.floor(math.log10(raw))
    for nice in (*_NICE, 10):
        if nice * power >= raw:
            return float(nice * power)
    return float(10 * power)


@dataclass(frozen=True)
class Timeline:
    """Where spans sit on the waterfall: offsets from the trace's first start."""

    first_us: int | None
    last_us: int | None

    @property
    def total_us(self) -> int:
        if self.first_us is None or self.last_us is None:
            return 1
        return max(self.last_us - self.first_us, 1)

    def offset(self, us: int | None) -> int | None:
        return None if us is None or self.first_us is None else us - self.first_us

    def ticks(self) -> list[tuple[float, str]]:
        """Round moments along the axis, as (percent, label); none crowding the one before."""
        step = tick_step(self.total_us)
        out: list[tuple[float, str]] = []
        for index in range(int(self.total_us // step) + 1):
            x = round(index * step / self.total_us * 100, 3)
            if out and x - out[-1][0] < TICK_GAP:
                continue
            out.append((x, "0" if index == 0 else duration_label(index * step)))
        return out


@dataclass(frozen=True, slots=True)
class RowView:
    """A row as the template draws it, every value worked out once."""

    row: SpanRow
    name: str
    status_class: str
    indent: int
    start: int | None
    end: int | None
    start_label: str
    duration_label: str
    #: The bar's left edge and width, in percent of the timeline.
    bar: tuple[float, float] | None


def row_view(row: SpanRow, timeline: Timeline) -> RowView:
    start = timeline.offset(row.started_us)
    end = timeline.offset(row.finished_us if row.finished_us is not None else timeline.last_us)
    bar = None
    if start is not None and end is not None:
        total = timeline.total_us
        bar = (round(start / total * 100, 3), round(max((end - start) / total * 100, 0.15), 3))
    return RowView(row, row.summary or row.title, css_token(row.status), min(row.depth, MAX_INDENT), start, end,
                   offset_label(start), span_duration_label(row.started_us, row.finished_us), bar)


@dataclass
class DetailView:
    """A span's detail as the right pane draws it."""

    detail: SpanDetail
    timeline: Timeline
    page_url: str
    entries: list[Any] = field(default_factory=list)
    usage: str | None = None

    @property
    def row(self) -> RowView:
        return row_view(self.detail.row, self.timeline)

    @property
    def started_label(self) -> str:
        return moment_label(self.detail.row.started_us)

    @property
    def problems(self) -> list[dict[str, Any]]:
        return [p for p in self.detail.validation.get("problems") or () if isinstance(p, dict)]

    @property
    def note(self) -> str | None:
        note = self.detail.validation.get("note")
        return note if isinstance(note, str) else None

    @property
    def otel(self) -> dict[str, Any] | None:
        return self.detail.otel

    def event_offset(self, event: Any) -> str:
        """An OTel event's time as an offset from its span's start."""
        if not isinstance(event, dict) or not self.otel:
            return ""
        at, start = event.get("time_unix_nano"), self.otel.get("start_time_unix_nano")
        if not isinstance(at, int) or not isinstance(start, int):
            return ""
        return offset_label(max(0, at - start) / 1000)


def detail_view(detail: SpanDetail, timeline: Timeline, page_url: str) -> DetailView:
    view = DetailView(detail, timeline, page_url)
    if detail.conversation is not None:
        session_view = html.session_view(detail.conversation)
        view.entries = html.entry_views(session_view)
    return view


# --------------------------------------------------------------------------- sources


class TraceSource(Protocol):
    """A trace the page can draw: a stored one or an opened export."""

    title: str
    url: str

    def timeline(self) -> Timeline: ...

    def rows(self, *, after: str | None = None, before: str | None = None, descend: bool = True,
             within: str | None = None, limit: int = ROW_PAGE) -> TraceRows: ...

    def around(self, span_id: str) -> TraceRows: ...

    def span(self, span_id: str) -> SpanDetail: ...


class StoredTrace:
    """A stored trace, read for the signed-in account."""

    def __init__(self, folio: Any, account: Any, instance_id: str, prefix: str) -> None:
        self.service = folio.traces
        self.principal = Principal(account)
        self.instance_id = instance_id
        self.url = f"{prefix}/traces/{quote(instance_id, safe='')}"
        self.header: TraceHeader = self.service.header(self.principal, instance_id)
        self.title = f"{self.header.agent_name} · trace {self.header.external_identifier or instance_id}"

    def timeline(self) -> Timeline:
        return Timeline(self.header.first_us, self.header.last_us)

    def rows(self, **options: Any) -> TraceRows:
        rows: TraceRows = self.service.rows(self.principal, self.instance_id, **options)
        return rows

    def around(self, span_id: str) -> TraceRows:
        rows: TraceRows = self.service.around(self.principal, self.instance_id, span_id, before=ROWS_BEFORE_LINKED,
                                              after=FIRST_ROWS)
        return rows

    def span(self, span_id: str) -> SpanDetail:
        detail: SpanDetail = self.service.span(self.principal, self.instance_id, span_id)
        return detail

    def breakdown(self) -> TraceBreakdown:
        found: TraceBreakdown = self.service.breakdown(self.principal, self.instance_id)
        return found


class OpenedTrace:
    """An opened span export (kept in memory with the opened file)."""

    def __init__(self, opened: Any, prefix: str) -> None:
        trace = opened.cache.get("trace") or opened.cache.setdefault("trace", trace_from_document(opened.document))
        self.file: FileTrace = opened.cache.get("file_trace") or opened.cache.setdefault(
            "file_trace", FileTrace(trace, opened.name))
        self.trace: Trace = trace
        self.title = opened.name
        self.url = f"{prefix}/open/{opened.token}"

    def timeline(self) -> Timeline:
        return Timeline(self.file.first_us, self.file.last_us)

    def rows(self, **options: Any) -> TraceRows:
        return self.file.rows(**options)

    def around(self, span_id: str) -> TraceRows:
        return self.file.around(span_id, before=ROWS_BEFORE_LINKED, after=FIRST_ROWS)

    def span(self, span_id: str) -> SpanDetail:
        return self.file.span(span_id)


# --------------------------------------------------------------------------- pages


def _rows_context(source: TraceSource, found: TraceRows) -> dict[str, Any]:
    timeline = source.timeline()
    return {"rows": [row_view(row, timeline) for row in found.rows], "more_before": found.more_before,
            "more_after": found.more_after, "rows_url": source.url + "/rows", "within": None}


def trace_page_context(source: TraceSource, span_id: str | None) -> dict[str, Any]:
    """What ``trace.html`` draws: the header, the first rows (or those around the linked
    span) and the linked span's detail."""
    timeline = source.timeline()
    selected = None
    if span_id:
        found = source.around(span_id)
        selected = detail_view(source.span(span_id), timeline, source.url)
    else:
        found = source.rows(limit=FIRST_ROWS)
    return {"source": source, "timeline": timeline, "selected": selected, "total_us": timeline.total_us,
            "duration_label": duration_label, "moment_label": moment_label, **_rows_context(source, found)}


def _fragment(template: str, prefix: str, **context: Any) -> Response:
    from agentfolio.web.app import SECURITY_HEADERS

    body = html.render(template, base=prefix, **context)
    return HTMLResponse(body, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


def _flag(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)


@dataclass
class ListView:
    """The trace list's page: its filters as asked, its rows and its links."""

    page: TracePage | None
    filters: dict[str, str]
    url: str

    def link(self, **changes: str | None) -> str:
        query = {**self.filters, **changes}
        return self.url + "?" + urlencode({key: value for key, value in query.items() if value})

    def sort_link(self, sort: str) -> str:
        descending = "asc" if self.filters.get("sort") == sort and self.filters.get("order") != "asc" else "desc"
        return self.link(sort=sort, order=descending, after=None, before=None)

    def sort_state(self, sort: str) -> str:
        if self.filters.get("sort", "started") != sort:
            return "none"
        return "ascending" if self.filters.get("order") == "asc" else "descending"


LIST_SORTS = {"started": "Started", "agent": "Agent", "duration": "Duration", "status": "Status",
              "spans": "Spans", "failed": "Failed", "flagged": "Flagged"}


def add_routes(router: APIRouter, viewer: WebViewer, guarded: Callable[..., Any]) -> None:
    """The trace list, stored traces and opened exports' rows and spans."""
    prefix = viewer.prefix

    def stored(who: Any, instance_id: str) -> StoredTrace:
        return StoredTrace(viewer.folio, who.account, instance_id, prefix)

    def opened(request: Request, who: Any, token: str) -> OpenedTrace | Response:
        found = viewer.opened.get(token, who)
        if found is None or found.kind != "trace":
            return viewer.error(request, who, 404, "Not open any more", "Open the file again to see it.")
        return OpenedTrace(found, prefix)

    def has_registry() -> bool:
        return viewer.folio is not None and getattr(viewer.folio, "traces", None) is not None

    def no_store(request: Request, who: Any) -> Response:
        return viewer.error(request, who, 404, "No store", "This viewer has no trace store.")

    @router.get("/traces")
    @guarded
    async def traces_page(request: Request, who: Any, status: str = "", agent: str = "", since: str = "",
                          until: str = "", flagged: str = "", sort: str = "started", order: str = "desc",
                          after: str = "", before: str = "") -> Response:
        filters = {"status": status, "agent": agent[:200], "since": since[:40], "until": until[:40],
                   "flagged": flagged if flagged in ("yes", "no") else "", "sort": sort if sort in LIST_SORTS else "",
                   "order": "asc" if order == "asc" else ""}
        page = None
        if has_registry():
            query = TraceQuery(status=status or None, agent=agent or None, since=html.parse_moment(since),
                               until=html.parse_moment(until), flagged=_flag(flagged),
                               sort=sort if sort in LIST_SORTS else "started", descending=order != "asc",
                               after=after or None, before=before or None)
            page = await run_in_threadpool(viewer.folio.traces.list, Principal(who.account), query)
        view = ListView(page, filters, f"{prefix}/traces")
        return viewer.page(request, "traces.html", who, nav="traces", listing=view, sorts=LIST_SORTS,
                           has_registry=has_registry(), traces=viewer.opened.of_kind(who, "trace"),
                           duration=duration_label, css_token=css_token)

    @router.get("/traces/{instance_id}")
    @guarded
    async def trace_page(request: Request, who: Any, instance_id: str, span: str = "") -> Response:
        if not has_registry():
            return no_store(request, who)

        def build() -> dict[str, Any]:
            source = stored(who, instance_id)
            return trace_page_context(source, span or None)

        context = await run_in_threadpool(build)
        return viewer.page(request, "trace.html", who, nav="traces", trace_title=context["source"].title,
                           breakdown_url=context["source"].url + "/breakdown", **context)

    @router.get("/traces/{instance_id}/rows")
    @guarded
    async def trace_rows(request: Request, who: Any, instance_id: str, after: str = "", before: str = "",
                         descend: int = 1, within: str = "") -> Response:
        if not has_registry():
            return no_store(request, who)
        return await run_in_threadpool(_rows_fragment, stored(who, instance_id), after, before, descend, within)

    # The span's id as a query parameter: an opened export's ids may hold "/".
    @router.get("/traces/{instance_id}/span")
    @guarded
    async def trace_span(request: Request, who: Any, instance_id: str, id: str = "") -> Response:
        span_id = id
        if not has_registry():
            return no_store(request, who)
        return await run_in_threadpool(_span_fragment, stored(who, instance_id), span_id)

    @router.get("/traces/{instance_id}/breakdown")
    @guarded
    async def trace_breakdown(request: Request, who: Any, instance_id: str) -> Response:
        if not has_registry():
            return no_store(request, who)

        def build() -> Response:
            source = stored(who, instance_id)
            return _fragment("partials/trace_breakdown.html", prefix, breakdown=source.breakdown(),
                             header=source.header)

        return await run_in_threadpool(build)

    @router.get("/open/{token}/rows")
    @guarded
    async def opened_rows(request: Request, who: Any, token: str, after: str = "", before: str = "",
                          descend: int = 1, within: str = "") -> Response:
        source = opened(request, who, token)
        if isinstance(source, Response):
            return source
        return await run_in_threadpool(_rows_fragment, source, after, before, descend, within)

    @router.get("/open/{token}/span")
    @guarded
    async def opened_span(request: Request, who: Any, token: str, id: str = "") -> Response:
        span_id = id
        source = opened(request, who, token)
        if isinstance(source, Response):
            return source
        return await run_in_threadpool(_span_fragment, source, span_id)

    def _rows_fragment(source: TraceSource, after: str, before: str, descend: int, within: str) -> Response:
        found = source.rows(after=after or None, before=before or None, descend=bool(descend),
                            within=within or None)
        context = _rows_context(source, found)
        context["within"] = within or None
        context["direction"] = "before" if before else "after"
        return _fragment("partials/trace_rows.html", prefix, **context)

    def _span_fragment(source: TraceSource, span_id: str) -> Response:
        try:
            view = detail_view(source.span(span_id), source.timeline(), source.url)
        except AgentfolioError as error:  # the pane says so; the page around it stays
            response = _fragment("partials/trace_detail_missing.html", prefix, message=error.message)
            response.status_code = 404 if error.code == "not_found" else 400
            return response
        return _fragment("partials/trace_detail.html", prefix, selected=view)


def opened_trace_page(viewer: WebViewer, request: Request, who: Any, opened: Any) -> Response:
    """The page of an opened span export (``/open/{token}``), ``?span=`` selecting a span."""
    source = OpenedTrace(opened, viewer.prefix)
    span = request.query_params.get("span") or None
    context = trace_page_context(source, span)
    trace = source.trace
    breakdown = TraceBreakdown(status_counts=dict(trace.status_counts),
                               risk_level=trace.risk.level if trace.risk else None,
                               risk_score=trace.risk.score if trace.risk else None)
    return viewer.page(request, "trace.html", who, nav="traces", trace_title=source.title, breakdown=breakdown,
                       file_trace=trace, **context)

