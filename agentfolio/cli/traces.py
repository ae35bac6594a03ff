"""``agentfolio traces ls|show``: the traces in the local store, as the viewer shows them.

``traces ls`` lists traces (agent names, start, duration, status, spans, failed, flagged)
with the viewer's filters and sorting, a page at a time (``--after`` takes the cursor a
page ends with).  ``traces show TRACE`` prints the span tree with each span's start,
duration and status, and under each LLM span its messages drawn as a conversation is
drawn by ``agentfolio show``; ``--span ID`` prints one span whole.  ``--json`` prints
the same as JSON.  Every stored string is printed as text (see :mod:`agentfolio.cli.output`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

import typer

from agentfolio.cli.instances import registry_call
from agentfolio.cli.output import EXIT_USAGE, AccountOption, Safe, fail, one_line, print_json, say, stdout

if TYPE_CHECKING:
    from rich.console import RenderableType

    from agentfolio.app.span_messages import SpanConversation
    from agentfolio.app.traces import SpanDetail, SpanRow, TraceHeader

__all__ = ["register"]

traces_app = typer.Typer(name="traces", help="Traces in the local store: list them, show one as a tree.",
                         no_args_is_help=True)
SORTS = ("started", "duration", "spans", "flagged", "failed", "status", "agent")
#: Spans whose messages are read at once while a trace prints.
_BATCH = 200


def register(app: typer.Typer) -> None:
    app.add_typer(traces_app, name="traces")


@traces_app.command("ls")
def list_command(
    agent: Optional[str] = typer.Option(None, "--agent", help="Only traces of agents whose name holds this (or "
                                                                "of the agent with this id)."),
    status: Optional[str] = typer.Option(None, "--status", help="Only traces in this status (complete, failed…)."),
    flagged: Optional[bool] = typer.Option(None, "--flagged/--not-flagged",
                                           help="Only traces with (or without) a span failing validation."),
    since: Optional[str] = typer.Option(None, "--since", help="Only traces started at or after this moment "
                                                              "(ISO 8601; UTC when no offset is given)."),
    until: Optional[str] = typer.Option(None, "--until", help="Only traces started before this moment."),
    sort: str = typer.Option("started", "--sort", help=f"One of {', '.join(SORTS)}."),
    ascending: bool = typer.Option(False, "--asc", help="Smallest (or oldest) first."),
    limit: int = typer.Option(25, "--limit", min=1, max=200, help="Traces per page."),
    after: Optional[str] = typer.Option(None, "--after", help="The cursor a previous page ended with."),
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print the page as JSON."),
) -> None:
    """List traces, newest first: trace, agent, started, duration, status, spans, failed, flagged."""
    from agentfolio.app.traces import TraceQuery

    if sort not in SORTS:
        fail(f"--sort must be one of {', '.join(SORTS)}", EXIT_USAGE)
    query = TraceQuery(status=status, agent=agent, since=_when(since, "--since"), until=_when(until, "--until"),
                       flagged=flagged, sort=sort, descending=not ascending, after=after, limit=limit)
    with registry_call(account) as (folio, principal):
        page = folio.traces.list(principal, query)
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    if not page.items:
        stdout().print("no traces" + (" match" if any((agent, status, since, until, flagged is not None)) else
                                      " yet"), highlight=False)
        return
    from rich.table import Table
    from rich.text import Text

    from agentfolio.present.durations import duration_label

    table = Table(box=None, highlight=False)
    table.add_column("trace", no_wrap=True)  # what `traces show` takes, whole even when piped
    table.add_column("agent", overflow="ellipsis", min_width=8)
    for column in ("started", "duration", "status"):
        table.add_column(column, no_wrap=True)
    for column in ("spans", "failed", "flagged"):
        table.add_column(column, justify="right", no_wrap=True)
    for item in page.items:
        # Stored strings as Text: a cell given a str would read it as Rich markup.
        table.add_row(Text(one_line(item.external_identifier or item.id, 64)), Text(one_line(item.agent_name, 40)),
                      item.started_at.strftime("%Y-%m-%d %H:%M") if item.started_at else "-",
                      duration_label(item.duration_ms * 1000) if item.duration_ms is not None else "-",
                      Text(one_line(item.status, 20)), f"{item.span_count:,}", f"{item.failed_count:,}",
                      f"{item.flagged_count:,}")
    console = stdout()
    if not console.is_terminal:  # piped, a row stays one line however long
        from rich.console import Console

        console = Console(width=240, soft_wrap=False, highlight=False)
    console.print(Safe(table))
    if page.next:
        say(f"more: agentfolio traces ls --after {page.next}", dim=True)


def _when(text: Optional[str], option: str) -> Optional[datetime]:
    if not text:
        return None
    from agentfolio._time import parse_datetime

    found = parse_datetime(text)
    if found is None:
        fail(f"{option}: {text!r} is not a moment (write 2026-01-05T10:00:00Z)", EXIT_USAGE)
    return found


@traces_app.command("show")
def show_command(
    trace: str = typer.Argument(..., help="The trace: its instance id, or its OpenTelemetry trace id or "
                                          "external identifier.", show_default=False),
    span: Optional[str] = typer.Option(None, "--span", help="Print only this span, whole."),
    messages: bool = typer.Option(True, "--messages/--no-messages", help="Draw LLM spans' messages."),
    expand: bool = typer.Option(False, "--expand", help="Open every folded segment of the messages."),
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print the trace (or the span) as JSON."),
) -> None:
    """Print a trace as a tree: each span's start, duration and status, and the messages of LLM spans."""
    with registry_call(account) as (folio, principal):
        service = folio.traces
        instance_id = service.resolve(principal, trace)
        header = service.header(principal, instance_id)
        if span is not None:
            detail = service.span(principal, instance_id, span)
            if as_json:
                print_json({"trace": header.model_dump(mode="json"), "span": _detail_json(detail)})
            else:
                stdout().print(Safe(_detail(header, detail, expand)))
            return
        if as_json:
            rows: list[dict[str, Any]] = []
            for batch in _batches(service.all_rows(principal, instance_id)):
                found = service.conversations(principal, instance_id, [row.id for row in batch]) if messages else {}
                rows.extend(_row_json(row, found.get(row.id)) for row in batch)
            print_json({"trace": header.model_dump(mode="json"), "spans": rows})
            return
        console = stdout()
        console.print(Safe(_header(header)))
        for batch in _batches(service.all_rows(principal, instance_id)):
            found = service.conversations(principal, instance_id, [row.id for row in batch]) if messages else {}
            for row in batch:
                console.print(Safe(_row_line(header, row)))
                conversation = found.get(row.id)
                if conversation is not None:
                    console.print(Safe(_messages(row, conversation, expand)))


def _batches(rows: Any) -> Any:
    batch: list[SpanRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# --------------------------------------------------------------------------- drawing


def _header(header: TraceHeader) -> RenderableType:
    from rich.text import Text

    from agentfolio.present.durations import duration_label, moment_label

    line = Text()
    line.append(header.agent_name, style="bold")
    line.append(f" · trace {header.external_identifier or header.id}", style="bold")
    line.append(f"  {header.status}", style=_status_style(header.status))
    line.append(f"\ninstance {header.id}", style="dim")
    facts = [f"{header.span_count:,} span{'' if header.span_count == 1 else 's'}", f"{header.failed_count:,} failed",
             f"{header.flagged_count:,} flagged"]
    if header.duration_ms is not None:
        facts.append(duration_label(header.duration_ms * 1000))
    if header.first_us is not None:
        facts.append("started " + moment_label(header.first_us))
    line.append("\n" + " · ".join(facts), style="dim")
    if header.termination_reason:
        line.append(f"\nterminated: {header.termination_reason}", style="red")
    return line


def _status_style(status: str) -> str:
    return {"failed": "bold red", "terminated": "bold red", "complete": "green", "active": "yellow",
            "pending": "yellow"}.get(status, "")


def _row_line(header: TraceHeader, row: SpanRow) -> RenderableType:
    from rich.text import Text

    from agentfolio.present.durations import offset_label, span_duration_label

    first = header.first_us
    start = offset_label(None if row.started_us is None or first is None else row.started_us - first)
    took = span_duration_label(row.started_us, row.finished_us)
    line = Text(f"{start:>10} {took:>10} ", style="dim", no_wrap=True, overflow="ellipsis")
    line.append(f"{one_line(row.status, 10):<10} ", style=_status_style(row.status))
    line.append("  " * min(row.depth, 40) + ("▾ " if row.has_children else "· "), style="dim")
    name = row.summary or row.title
    line.append(one_line(name, 120), style="bold" if row.depth == 0 else "")
    if row.schema_name != name:
        line.append(f"  {one_line(row.schema_name, 80)}", style="dim")
    if row.flagged:
        line.append("  flagged", style="bold red")
    return line


def _messages(row: SpanRow, conversation: SpanConversation, expand: bool) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    from agentfolio.cli.terminal import render_session

    parts: list[RenderableType] = [render_session(conversation.session, title="messages", expand=expand)]
    parts.extend(Text(note, style="dim") for note in conversation.notes)
    return Padding(Group(*parts), (0, 0, 1, 6 + 2 * min(row.depth, 10)))


def _detail(header: TraceHeader, detail: SpanDetail, expand: bool) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from agentfolio.cli.terminal import raw_block, render_session

    row = detail.row
    parts: list[RenderableType] = [_header(header), Text(""), _row_line(header, row),
                                   Text(f"id {row.id}" + (f" · parent {row.parent_id}" if row.parent_id else ""),
                                        style="dim")]
    if detail.risk_level:
        parts.append(Text(f"risk {detail.risk_level} ({detail.risk_score or 0:g})", style="dim"))
    problems = [p for p in detail.validation.get("problems") or () if isinstance(p, dict)]
    parts.append(Text(f"validation: {detail.validation.get('status') or 'unknown'}",
                      style="red" if problems or row.flags else "dim"))
    parts.extend(Text(f"  {flag}", style="red") for flag in row.flags)
    parts.extend(Text(f"  {p.get('part', '')}{p.get('pointer', '')}: {p.get('message', '')}", style="red")
                 for p in problems)
    if detail.conversation is not None:
        parts.append(render_session(detail.conversation, title="messages", expand=expand))
        parts.extend(Text(note, style="dim") for note in detail.conversation_notes)
    if detail.otel is not None:
        otel = detail.otel
        parts.append(Text(f"OpenTelemetry span {otel.get('name')} · kind {otel.get('kind')}", style="bold"))
        parts.append(raw_block("attributes", otel.get("attributes")))
        if otel.get("events"):
            parts.append(raw_block("events", otel.get("events")))
        if otel.get("links"):
            parts.append(raw_block("links", otel.get("links")))
    else:
        parts.append(raw_block("params", detail.payload))
        parts.append(raw_block("result", detail.result_payload))
    return Group(*parts)


def _row_json(row: SpanRow, conversation: SpanConversation | None) -> dict[str, Any]:
    out = row.model_dump(mode="json")
    if conversation is not None:
        out["messages"] = [message.to_json_value() for _, message in conversation.session.messages()]
        if conversation.notes:
            out["message_notes"] = conversation.notes
    return out


def _detail_json(detail: SpanDetail) -> dict[str, Any]:
    out = detail.model_dump(mode="json")
    if detail.conversation is not None:
        out["messages"] = [message.to_json_value() for _, message in detail.conversation.messages()]
    return out
