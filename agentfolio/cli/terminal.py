"""A conversation in the terminal, with Rich: roles styled, calls beside their results.

Every segment kind has its own look, decided by :mod:`agentfolio.present.rules` (the
same rules the web viewer uses): folded segments are one summary line with counts
(``expand=True`` opens them), tool catalogs are tables, memory and skills lists,
documents cards with size and snippet, media their type, URL and alt text, template
variables ``{{name}}`` with value and description, tool results green or red by success.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from agentfolio import _json
from agentfolio.cli.output import Safe
from agentfolio.model import (
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    Session,
    TextContent,
    UnknownContent,
    UriContent,
    UsageContent,
)
from agentfolio.present import rules
from agentfolio.present.rules import (
    ROLE_STYLES,
    UNKNOWN_ROLE_STYLE,
    ToolPairs,
    entry_usage,
    format_usage,
    pair_tool_calls,
    token_totals,
)

# Rich styles for the rules' intents.
_OK, _FAILED = "green", "red"
_KIND_STYLES = {"system_prompt": "magenta", "long_text": "white", "static_var": "cyan", "memory": "blue",
                "skills": "blue", "tool_overview": "blue", "document": "bright_blue", "media": "bright_blue",
                "reasoning": "dim italic"}

_RESULT_PREVIEW = 2000


def render_session(session: Session, *, title: str | None = None, expand: bool = False) -> Group:
    """The session for a terminal; ``expand`` opens every folded segment."""
    pairs = pair_tool_calls(session)
    parts: list[RenderableType] = []
    header = Text(title or "session", style="bold")
    if session.schema_version:
        header.append(f"  durable state {session.schema_version}", style="dim")
    model = rules.session_model(session)
    if model:
        header.append(f"  model {model}", style="dim")
    header.append(f"  {len(session.entries)} entries", style="dim")
    parts.append(header)
    properties = rules.session_properties(session)
    if properties:
        parts.append(raw_block("session properties", properties))
    places = rules.outcome_places(session, rules.outcomes(session))
    for index, entry in enumerate(session.entries):
        parts.append(_entry_rule(index, entry))
        if isinstance(entry, OpaqueEntry):
            parts.append(raw_block(f"entry of unknown kind {entry.kind!r}, kept as read", entry.to_json_value()))
            continue
        if entry.kind == "compaction":
            parts.append(Text("compaction: " + rules.compaction_range(session, index), style="bold blue"))
        parts.extend(_message(message, pairs, expand) for message in entry.items)
        usage = entry_usage(entry)
        if usage is not None:
            parts.append(Padding(Text(format_usage(usage), style="dim"), (0, 0, 0, 2)))
        more = rules.more_properties(entry, rules.ENTRY_DRAWN)
        if more:
            parts.append(Padding(raw_block("entry properties", more), (0, 0, 0, 2)))
        parts.extend(_outcome(outcome, pairs, expand) for outcome in places.get(index, []))
    if places.get(-1):
        parts.append(Rule(Text("outcomes of requests not in the history", style="dim"), align="left", style="dim"))
        parts.extend(_outcome(outcome, pairs, expand) for outcome in places[-1])
    totals = token_totals(session)
    parts.append(Rule(style="dim"))
    parts.append(Text(f"{totals.responses} response(s) with usage · total tokens: in {totals.input:,} · "
                      f"out {totals.output:,} · total {totals.total:,}", style="bold"))
    return Group(*parts)


def print_session(session: Session, *, console: Console | None = None, title: str | None = None,
                  expand: bool = False) -> None:
    # Everything in a session was written by someone else: no escape sequence reaches the terminal.
    (console or Console()).print(Safe(render_session(session, title=title, expand=expand)))


def _outcome(outcome: rules.Outcome, pairs: ToolPairs, expand: bool) -> RenderableType:
    """How a request ended (2.0 terminal result and receipt): the line, the answer, the rest."""
    parts: list[RenderableType] = [Text(f"outcome of {outcome.correlation_id}: {outcome.line()}",
                                        style=f"bold {_FAILED if outcome.failed else _OK}")]
    if outcome.usage is None:
        parts.append(Text("no usage recorded", style="dim"))
    if outcome.error is not None:
        parts.append(raw_block("error", outcome.error))
    parts.extend(_message(message, pairs, expand) for message in outcome.messages)
    parts.extend(raw_block("answer message", raw) for raw in outcome.raw_messages)
    if outcome.has_value:
        parts.append(raw_block("value", outcome.value))
    if outcome.more:
        parts.append(raw_block("more about this outcome", outcome.more))
    return Padding(Group(*parts), (0, 0, 0, 2))


def _entry_rule(index: int, entry: Any) -> Rule:
    label = f"#{index} {entry.kind}"
    created = getattr(entry, "created_at", None)
    if created:
        label += f" · {created}"
    correlation = getattr(entry, "correlation_id", None)
    if correlation:
        label += f" · {correlation[:12]}"
    return Rule(Text(label, style="dim"), align="left", style="dim")


def _message(message: Message, pairs: ToolPairs, expand: bool = False) -> RenderableType:
    role = message.role or "?"
    head = Text(role, style=ROLE_STYLES.get(role, UNKNOWN_ROLE_STYLE))
    if message.author_name:
        head.append(f" ({message.author_name})", style="italic")
    if message.created_at:
        head.append(f"  {message.created_at}", style="dim")
    if message.message_id:
        head.append(f"  id {message.message_id}", style="dim")
    body = [Padding(block, (0, 0, 0, 2)) for block in _contents(message.items, pairs, expand)]
    more = rules.more_properties(message, rules.MESSAGE_DRAWN)
    if more:
        body.append(Padding(raw_block("message properties", more), (0, 0, 0, 2)))
    return Group(head, *body)


def _contents(contents: Iterable[Any], pairs: ToolPairs, expand: bool = False) -> Iterable[RenderableType]:
    for content in contents:
        yield from _content(content, pairs, expand)
        more = rules.more_properties(content, rules.CONTENT_DRAWN) if rules.segment_kind(content) != "raw" else {}
        if more:
            yield raw_block("more properties", more)


def _content(content: Any, pairs: ToolPairs, expand: bool) -> Iterable[RenderableType]:
    kind = rules.segment_kind(content)
    paired = kind == "tool_call_result" and pairs.is_paired(content)  # shown with its call
    if kind in _SEGMENTS and not expand and not paired and rules.is_folded(content, kind):
        yield _folded(content, kind, pairs)
        return
    render = _SEGMENTS.get(kind)
    if render is not None:
        yield render(content, pairs)
    elif isinstance(content, ErrorContent):
        code = f" [{content.error_code}]" if content.error_code else ""
        yield Text(f"error{code}: {content.message or ''}", style="bold red")
    elif isinstance(content, (DataContent, UriContent)):
        uri = content.uri or ""
        shown = rules.shown_url(uri, 80)
        yield Text(f"[{content.media_type or 'file'}] {shown}", style="blue")
    elif isinstance(content, HostedFileContent):
        yield Text(f"[hosted file] {content.file_id}", style="blue")
    elif isinstance(content, HostedVectorStoreContent):
        yield Text(f"[vector store] {content.vector_store_id}", style="blue")
    elif isinstance(content, UsageContent):
        if content.usage is not None:
            yield Text(format_usage(content.usage), style="dim")
    elif isinstance(content, UnknownContent):
        yield raw_block("framework content durable state has no type for", content.content)
    elif isinstance(content, OpaqueContent):
        yield raw_block(f"content of unknown kind {content.kind!r}, kept as read", content.to_json_value())
    else:
        yield raw_block(f"{content.kind}", content.to_json_value())


def _folded(content: Any, kind: str, pairs: ToolPairs) -> RenderableType:
    """One line: ▸ label · summary with counts (``--expand`` opens it)."""
    line = Text("▸ ", style="dim")
    style = _KIND_STYLES.get(kind, "bold")
    if kind == "tool_call_result" or (kind == "tool_call_request" and pairs.result_of(content) is not None):
        result = content if kind == "tool_call_result" else pairs.result_of(content)
        style = _FAILED if rules.call_failed(result) else _OK
    label = "redacted thinking" if rules.is_redacted(content) else rules.KIND_LABELS.get(kind, kind)
    line.append(("server " + label) if rules.is_server_call(content) else label, style=f"bold {style}")
    line.append(" · " + rules.segment_summary(content, kind), style="dim")
    return line


def _label(kind: str, extra: str = "") -> Text:
    label = Text(rules.KIND_LABELS.get(kind, kind), style=f"bold {_KIND_STYLES.get(kind, '')}".strip())
    if extra:
        label.append(f" · {extra}", style="dim")
    return label


def _text(content: TextContent, pairs: ToolPairs) -> RenderableType:
    links = rules.citations(content)
    if not links:
        return Text(content.text or "")
    lines: list[RenderableType] = [Text(content.text or "")]
    for link in links:
        line = Text(f"  [{link.number}] ", style="dim")
        line.append(link.title, style="italic")
        if link.url:
            line.append(f" — {link.url}", style="underline bright_blue")
        if link.snippet:
            line.append(f'  "{rules.one_line(link.snippet, 80)}"', style="dim")
        lines.append(line)
    return Group(*lines)


def _system_prompt(content: TextContent, pairs: ToolPairs) -> RenderableType:
    return Panel(Text(content.text or ""), title=_label("system_prompt"), title_align="left",
                 border_style=_KIND_STYLES["system_prompt"])


def _long_text(content: TextContent, pairs: ToolPairs) -> RenderableType:
    return Group(_label("long_text", f"{rules.char_count(content):,} chars"), Text(content.text or ""))


def _reasoning(content: Any, pairs: ToolPairs) -> RenderableType:
    if rules.is_redacted(content):
        return Text(f"redacted thinking ({len(content.protected_data):,} chars kept for the provider)",
                    style="dim italic")
    return Text("thinking: " + (content.text or ""), style="dim italic")


def _static_var(content: Any, pairs: ToolPairs) -> RenderableType:
    line = Text(rules.variable_label(content), style="bold cyan")
    line.append(" = ")
    line.append(content.value)
    if content.description:
        line.append(f"  — {content.description}", style="dim italic")
    return line


def _bullets(kind: str, description: str | None, rows: Iterable[tuple[str, str]]) -> RenderableType:
    lines: list[RenderableType] = [_label(kind, description or "")]
    for name, text in rows:
        line = Text("  • ")
        line.append(name, style="bold")
        line.append(f": {text}")
        lines.append(line)
    return Group(*lines)


def _memory(content: Any, pairs: ToolPairs) -> RenderableType:
    return _bullets("memory", content.description, ((item.title, item.content) for item in content.items))


def _skills(content: Any, pairs: ToolPairs) -> RenderableType:
    return _bullets("skills", content.description, ((item.name, item.description) for item in content.items))


def _tool_overview(content: Any, pairs: ToolPairs) -> RenderableType:
    table = Table(title=_label("tool_overview", f"{len(content.items)} tools"), title_justify="left",
                  show_lines=False, border_style="blue")
    table.add_column("tool", style="bold")
    table.add_column("description")
    table.add_column("parameters", style="dim")
    for item in content.items:
        table.add_row(item.name, item.description, item.parameters or "")
    return table


def _document(content: Any, pairs: ToolPairs) -> RenderableType:
    body = Text(content.snippet or "", style="italic") if content.snippet else Text("(no snippet)", style="dim")
    subtitle = f"{content.media_type} · {rules.human_size(content.size_bytes)}"
    return Panel(body, title=Text(f"📄 {content.file_name}", style="bold"), title_align="left",
                 subtitle=subtitle, subtitle_align="right", border_style=_KIND_STYLES["document"], expand=False)


def _media(content: Any, pairs: ToolPairs) -> RenderableType:
    media = rules.content_media(content)
    uri = getattr(content, "uri", None) or getattr(content, "url", None) or ""
    line = Text(f"[{media.media if media else 'media'}] ", style="bold bright_blue")
    line.append(uri if len(uri) <= 100 else uri[:99] + "…", style="underline bright_blue")
    alt = media.alt if media else None
    if alt:
        line.append(f'  "{alt}"', style="italic")
    return line


def _tool_call(content: FunctionCallContent, pairs: ToolPairs) -> RenderableType:
    return _call(content, pairs.result_of(content))


def _tool_result(content: FunctionResultContent, pairs: ToolPairs) -> RenderableType:
    if pairs.is_paired(content):
        return Text(f"↳ result of {content.call_id or 'the call before'} (shown with its call)", style="dim")
    name = content.extra.get("toolName") or pairs.call_names.get(content.call_id or "", "unmatched call")
    style = _FAILED if rules.call_failed(content) else _OK
    mark = "✗ failed" if rules.call_failed(content) else "✓"
    return Group(Text(f"← result of {name} [{content.call_id}] {mark}", style=style), *_exception(content),
                 _value(content.result))


def _exception(result: FunctionResultContent | None) -> list[RenderableType]:
    exception = rules.call_exception(result)
    return [Text(f"exception: {exception}", style="bold red")] if exception else []


_SEGMENTS = {
    "text": _text, "system_prompt": _system_prompt, "long_text": _long_text, "reasoning": _reasoning,
    "static_var": _static_var, "memory": _memory, "skills": _skills, "tool_overview": _tool_overview,
    "document": _document, "media": _media, "tool_call_request": _tool_call, "tool_call_result": _tool_result,
}


def _call(call: FunctionCallContent, result: FunctionResultContent | None) -> RenderableType:
    head = Text("→ server call " if rules.is_server_call(call) else "→ call ", style="bold yellow")
    head.append(call.name or "?", style="bold")
    if call.call_id is not None:
        head.append(f" [{call.call_id}]", style="dim")
    parts: list[RenderableType] = [head]
    if call.arguments not in (None, {}):
        parts.append(Padding(_value(call.arguments), (0, 0, 0, 2)))
    details = rules.server_details(call)
    if details:
        parts.append(Padding(_value(details), (0, 0, 0, 2)))
    if result is None and details:
        return Group(*parts)  # a built-in call item carries what it did itself
    if result is None:
        parts.append(Padding(Text("no result recorded", style="dim red"), (0, 0, 0, 2)))
    else:
        failed = rules.call_failed(result)
        head = Text(f"← result {'✗ failed' if failed else '✓'}", style=_FAILED if failed else _OK)
        parts.append(Padding(Group(head, *_exception(result), _value(result.result)), (0, 0, 0, 2)))
    return Group(*parts)


def _value(value: Any) -> RenderableType:
    if isinstance(value, str):
        return Text(value if len(value) <= _RESULT_PREVIEW else value[:_RESULT_PREVIEW] + "…")
    return JSON(_json.dumps(value).decode())


def raw_block(label: str, value: Any) -> RenderableType:
    return Group(Text(label, style="dim magenta"), JSON(_json.dumps(value).decode()))
