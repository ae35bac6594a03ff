"""A conversation as HTML, driven by the shared presentation rules (``present/rules.py``).

This module decides nothing about *what* is folded, paired or summed: it asks the rules
and hands Jinja2 templates (``agentfolio/web/templates``) small view records.  Every text
reaches the page through Jinja's autoescape; markdown is rendered by markdown-it with raw
HTML off and then cleaned by nh3, so nothing a record carries can become markup that runs.

``session_view(session)`` prepares what a whole page needs once (tool pairs, totals, the
tools offered); ``entry_views(view, start, stop)`` builds only the entries a page shows,
so a 10,000-message session is rendered a screen at a time.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any

import nh3
import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from agentfolio import _json
from agentfolio.model import FunctionCallContent, FunctionResultContent, Message, OpaqueEntry, Session
from agentfolio.present import activity, risk, rules

#: Entries rendered per page of a long session (the first screen, then more on scroll).
PAGE_ENTRIES = 40
#: JSON shown in full up to this many characters, the rest behind a count.
JSON_PREVIEW_CHARS = 20_000

# -- text --------------------------------------------------------------------------------

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "th": {"align"}, "td": {"align"},
                       "ol": {"start"}, "code": set()}


def render_markdown(text: str | None) -> Markup:
    """Markdown as sanitized HTML: markdown-it (raw HTML off), then nh3 with an allow-list."""
    if not text:
        return Markup("")
    rendered = _MARKDOWN.render(text)
    return Markup(nh3.clean(rendered, tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                            url_schemes={"http", "https", "mailto", "data"}, link_rel="noopener noreferrer nofollow"))


def render_markdown_inline(text: str | None) -> Markup:
    """A one-paragraph markdown text as sanitized inline HTML (emphasis, code, links)."""
    if not text:
        return Markup("")
    rendered = _MARKDOWN.renderInline(text)
    return Markup(nh3.clean(rendered, tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                            url_schemes={"http", "https", "mailto", "data"}, link_rel="noopener noreferrer nofollow"))


def pretty_json(value: Any, limit: int = JSON_PREVIEW_CHARS) -> tuple[str, int]:
    """``value`` as indented JSON (a string stays a string), and how many characters were cut."""
    if isinstance(value, str):
        text = value
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) < 2_000_000:
            with contextlib.suppress(orjson.JSONDecodeError):
                text = _json.dumps(_json.loads(stripped), option=orjson.OPT_INDENT_2).decode()
    else:
        try:
            text = _json.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            text = repr(value)
    if len(text) > limit:
        return text[:limit], len(text) - limit
    return text, 0


# -- JSON as a tree ------------------------------------------------------------------------

#: Most nodes one tree draws; a bigger value is shown as indented text (cut at JSON_PREVIEW_CHARS).
TREE_NODES = 4000
#: Deeper than this, a value is shown as indented text inside its node.
TREE_DEPTH = 40
#: Objects and arrays open down to this depth; deeper ones start folded.
TREE_OPEN_DEPTH = 2
#: Strings longer than this show their start and a "show" button for the rest.
STRING_SHOWN = 240
#: A string's characters kept in the page at most (the rest is counted, not sent).
STRING_KEPT = 200_000
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-\n")


def _looks_base64(text: str) -> bool:
    sample = text[:400]
    return len(text) >= 120 and " " not in sample and all(ch in _BASE64 for ch in sample)


def _parsed_string(value: Any) -> Any:
    """A string holding a JSON object or array, parsed; anything else as it is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) < 2_000_000:
            try:
                return orjson.loads(stripped)
            except orjson.JSONDecodeError:
                return value
    return value


def _count_nodes(value: Any, budget: int) -> int:
    """Nodes in ``value``, counting stops past ``budget``."""
    count, stack = 0, [value]
    while stack and count <= budget:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def json_tree(value: Any, label: str | None = None) -> Markup | None:
    """``value`` as a collapsible tree (objects and arrays fold, long strings show their
    start with a "show" for the rest, every value has a copy button), or None when it is
    a plain scalar or too big for one (shown as indented text instead).  Every key and
    value is escaped here; nothing reaches the page as markup."""
    value = _parsed_string(value)
    if not isinstance(value, (dict, list)) or _count_nodes(value, TREE_NODES) > TREE_NODES:
        return None
    out: list[str] = ['<div class="json json-tree" role="group"',
                      f' aria-label="{escape(label)}"' if label else "", ">",
                      '<button type="button" class="copy copy-json" aria-label="Copy this JSON" title="Copy this JSON">'
                      "</button>"]
    _tree_node(out, value, None, 0)
    out.append("</div>")
    return Markup("".join(out))


def _tree_key(out: list[str], key: str | int | None) -> None:
    if isinstance(key, int):
        out.append(f'<span class="jt-index">{key}</span>: ')
    elif key is not None:
        out.append(f'<span class="jt-key">{escape(orjson.dumps(key).decode())}</span>: ')


def _tree_node(out: list[str], value: Any, key: str | int | None, depth: int) -> None:
    if isinstance(value, (dict, list)) and value:
        if depth >= TREE_DEPTH:
            out.append('<div class="jt-leaf">')
            _tree_key(out, key)
            out.append(f'<span class="jt-deep" data-type="json">{escape(pretty_json(value)[0])}</span></div>')
            return
        is_dict = isinstance(value, dict)
        size = len(value)
        noun = ("key" if size == 1 else "keys") if is_dict else ("item" if size == 1 else "items")
        out.append(f'<details class="jt-node" data-type="{"object" if is_dict else "array"}"'
                   f'{" open" if depth < TREE_OPEN_DEPTH else ""}><summary>')
        _tree_key(out, key)
        out.append(f'<span class="jt-brace">{"{" if is_dict else "["}</span>'
                   f'<span class="jt-count">{size:,} {noun}</span></summary><div class="jt-children">')
        items: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, dict) else enumerate(value)
        for child_key, child in items:
            _tree_node(out, child, str(child_key) if is_dict else child_key, depth + 1)
        out.append(f'</div><span class="jt-brace jt-close">{"}" if is_dict else "]"}</span></details>')
        return
    out.append('<div class="jt-leaf">')
    _tree_key(out, key)
    if isinstance(value, str):
        out.append('<span class="jt-str" data-type="string">"')
        if len(value) > STRING_SHOWN:
            kept = value[:STRING_KEPT]
            shown = 80 if _looks_base64(value) else STRING_SHOWN
            kind = "base64 " if _looks_base64(value) else ""
            out.append(f'<span class="jt-v">{escape(kept[:shown])}</span>'
                       f'<span class="jt-v jt-rest" hidden>{escape(kept[shown:])}</span>"</span>'
                       f'<button type="button" class="jt-show" aria-expanded="false">show {len(value) - shown:,} more '
                       f'{kind}characters</button>')
            if len(value) > STRING_KEPT:
                out.append(f'<span class="dim jt-cut">… {len(value) - STRING_KEPT:,} characters not sent to the '
                           "page (the export and the API have them)</span>")
        else:
            out.append(f'<span class="jt-v">{escape(value)}</span>"</span>')
    else:
        text = _scalar_text(value)
        kind = "null" if value is None else "bool" if isinstance(value, bool) else \
            "number" if isinstance(value, (int, float)) else "empty"
        out.append(f'<span class="jt-{kind}" data-type="{kind}">{text}</span>')
    out.append('<button type="button" class="copy copy-value" aria-label="Copy this value" title="Copy this value">'
               "</button></div>")


def _scalar_text(value: Any) -> str:
    """A scalar (or empty container) as JSON writes it; integers of any size, as Python's
    JSON reader may hand them over; anything else by its escaped repr."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return orjson.dumps(value).decode()
    if value == {} or value == []:
        return "{}" if value == {} else "[]"
    return str(escape(repr(value)))


def short_time(value: Any) -> str:
    """A timestamp for people: ``2025-11-04 19:33:10 UTC`` from ISO text or epoch ms."""
    moment = parse_moment(value)
    if moment is None:
        return "" if value is None else str(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_moment(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        text = value.strip().replace("Z", "+00:00")
        # Python before 3.11 wanted exactly 3 or 6 fraction digits; be lenient anyway.
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def role_class(role: str | None) -> str:
    """The CSS class for a role: the roles the shared rules style, else ``unknown``."""
    return role if role in rules.ROLE_STYLES else "unknown"


# -- view records ----------------------------------------------------------------------


@dataclass(slots=True)
class SegmentView:
    kind: str
    content: Any
    folded: bool = False
    summary: str = ""
    #: For a tool call: its result (shown beside it); for a result: whether it is shown there.
    result: FunctionResultContent | None = None
    paired: bool = False
    failed: bool = False
    call_name: str | None = None
    anchor: str | None = None
    media: list[rules.Media] = field(default_factory=list)
    #: The content's JSON, for kinds shown raw.
    raw: Any = None
    #: What the content carries beyond what its kind draws.
    more: dict[str, Any] = field(default_factory=dict)
    #: A tool result's exception (of the result beside a call, or of the result itself).
    exception: str | None = None
    #: Where a media or file segment's bytes are, shown whether they load or not.
    source_url: str | None = None
    #: For a tool call: seconds until its result, where both carry a time of their own.
    latency: float | None = None
    #: Its anchor in the page (``e<entry>.m<message>.c<content>``), where it has one.
    place: str | None = None
    #: A text's sources; reasoning the provider hid; a call the provider ran and what it did.
    citations: list[rules.CitationLink] = field(default_factory=list)
    redacted: bool = False
    server: bool = False
    details: Any = None


@dataclass(slots=True)
class MessageView:
    role: str
    role_class: str
    author: str | None
    created_at: str | None
    segments: list[SegmentView]
    #: ``<entry>.<message>``: where the message stands, the same in a window and in the whole.
    index: str
    message_id: str | None = None
    more: dict[str, Any] = field(default_factory=dict)
    #: Its anchor in the page (``e<entry>.m<message>``), None for an outcome's message.
    place: str | None = None
    #: The segments as drawn: each alone, or a run that reads as one paragraph (FlowView).
    blocks: list[SegmentView | FlowView] = field(default_factory=list)


@dataclass(slots=True)
class FlowView:
    """Segments drawn as one paragraph: short texts with the template variables among them."""

    segments: list[SegmentView]
    flow: bool = True


@dataclass(slots=True)
class EntryView:
    index: int
    kind: str
    created_at: str | None
    correlation_id: str | None
    messages: list[MessageView]
    usage: str | None
    #: An entry of a kind we do not know: its JSON, shown as read.
    raw: Any = None
    more: dict[str, Any] = field(default_factory=dict)
    #: A compaction: what its summary replaced.
    replaced: str | None = None
    #: How the requests this entry ends came out (durable state 2.0).
    outcomes: list[OutcomeView] = field(default_factory=list)
    #: On a narrowed page: the entries before this one (since the previous one shown) left out.
    skipped: int = 0
    #: Seconds since the latest request, for an answer (None: not known from this view).
    latency: float | None = None


@dataclass(slots=True)
class OutcomeView:
    outcome: rules.Outcome
    messages: list[MessageView]


@dataclass(slots=True)
class SessionView:
    """What pages of one session share. A *window* (``partial``) holds only entries
    ``offset``.. of ``total``: enough to draw a screen of a long stored session without
    reading the rest; what needs the whole history (token totals, the tools, validation)
    is then ``None`` and is drawn later from the whole view."""

    session: Session
    pairs: rules.ToolPairs
    totals: rules.TokenTotals | None
    tools: list[rules.ToolInfo] | None
    message_offsets: list[int]
    #: Outcomes by the entry they follow (-1: requests not in the history).
    outcome_places: dict[int, list[rules.Outcome]] = field(default_factory=dict)
    model: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    offset: int = 0
    total: int | None = None
    #: Seconds each answer took (by entry position) and each tool call (by ``id(call)``),
    #: where the records' times allow; ``stats``: the whole session's (None for a window).
    latencies: dict[int, float] = field(default_factory=dict)
    tool_latencies: dict[int, float] = field(default_factory=dict)
    stats: SessionStats | None = None

    @property
    def partial(self) -> bool:
        return self.total is not None and (self.offset > 0 or self.offset + len(self.session.entries) < self.total)

    @property
    def entry_count(self) -> int:
        return self.total if self.total is not None else len(self.session.entries)

    @property
    def message_count(self) -> int | None:
        if self.partial:
            return None
        return self.message_offsets[-1] if self.message_offsets else 0


@dataclass(slots=True)
class SessionStats:
    """A whole session's latency and usage, shown in its header."""

    responses: activity.LatencyStats
    tools: activity.LatencyStats
    facts: activity.SessionFacts


def session_view(session: Session, *, offset: int = 0, total: int | None = None) -> SessionView:
    """The view of a whole session, or (``offset``, ``total``) of a window of one."""
    offsets = [0]
    for entry in session.entries:
        offsets.append(offsets[-1] + len(entry.items))
    places = rules.outcome_places(session, rules.outcomes(session))
    pairs = rules.pair_tool_calls(session)
    view = SessionView(session, pairs, None, None, offsets,
                       model=rules.session_model(session), properties=rules.session_properties(session),
                       offset=offset, total=total)
    facts, _, latencies = activity.session_facts(session)
    view.latencies = {offset + index: seconds for index, seconds in enumerate(latencies) if seconds is not None}
    view.tool_latencies = activity.tool_latencies(session, pairs)
    if view.partial:
        # Where an outcome goes is known only within the window; the whole view places the rest.
        view.outcome_places = {index + offset: found for index, found in places.items() if index >= 0}
    else:
        view.outcome_places = places
        view.totals, view.tools = rules.token_totals(session), rules.tools_of(session)
        view.stats = SessionStats(activity.LatencyStats.of(facts.latencies),
                                  activity.LatencyStats.of(list(view.tool_latencies.values())), facts)
    return view


def unplaced_outcomes(view: SessionView) -> list[OutcomeView]:
    """Outcomes of requests the history does not hold, shown after it."""
    return [_outcome_view(outcome, view.pairs) for outcome in view.outcome_places.get(-1, [])]


def _outcome_view(outcome: rules.Outcome, pairs: rules.ToolPairs) -> OutcomeView:
    return OutcomeView(outcome, [_message_view(message, pairs, f"{outcome.correlation_id}.{number}")
                                 for number, message in enumerate(outcome.messages)])


def entry_views(view: SessionView, start: int = 0, stop: int | None = None, *, only: Sequence[int] | None = None,
                 show: str | None = None) -> list[EntryView]:
    """The entries from ``start`` to ``stop`` (those the view holds); ``only``: just these
    positions; ``show``: only the messages and contents a page narrowed to it shows."""
    entries = view.session.entries
    end = view.offset + len(entries)
    stop = end if stop is None else min(stop, end)
    chosen = set(only) if only is not None else None
    result: list[EntryView] = []
    shown_until = max(view.offset, start)
    for index in range(max(view.offset, start), stop):
        if chosen is not None and index not in chosen:
            continue
        entry = entries[index - view.offset]
        skipped, shown_until = index - shown_until, index + 1
        if isinstance(entry, OpaqueEntry):
            result.append(EntryView(index, entry.kind, None, None, [], None, raw=entry.to_json_value(),
                                    skipped=skipped))
            continue
        usage = rules.entry_usage(entry)
        messages = [_message_view(message, view.pairs, f"{index}.{number}", show, view.tool_latencies,
                                  f"e{index}.m{number}")
                    for number, message in enumerate(entry.items) if not show or activity.message_shows(message, show)]
        shown = EntryView(index, entry.kind, entry.created_at, entry.correlation_id, messages,
                          rules.format_usage(usage) if usage is not None else None,
                          more={} if show else rules.more_properties(entry, rules.ENTRY_DRAWN),
                          outcomes=[] if show else [_outcome_view(outcome, view.pairs)
                                                    for outcome in view.outcome_places.get(index, [])],
                          skipped=skipped, latency=view.latencies.get(index))
        if entry.kind == "compaction":
            shown.replaced = rules.compaction_range(view.session, index)
        result.append(shown)
    return result


def _message_view(message: Message, pairs: rules.ToolPairs, index: str, show: str | None = None,
                  latencies: dict[int, float] | None = None, place: str | None = None) -> MessageView:
    role = message.role or "?"
    segments = []
    for number, content in enumerate(message.items):
        if show and not activity.segment_shows(content, show):
            continue
        segment = segment_view(content, pairs, latencies)
        segment.place = f"{place}.c{number}" if place else None
        segments.append(segment)
    view = MessageView(role, role_class(message.role), message.author_name, message.created_at, segments, index,
                       message.message_id, {} if show else rules.more_properties(message, rules.MESSAGE_DRAWN),
                       place=place)
    view.blocks = _blocks(segments)
    return view


def _blocks(segments: list[SegmentView]) -> list[SegmentView | FlowView]:
    runs = rules.inline_runs([(segment.kind, rules.flows_inline(segment.content, segment.kind))
                              for segment in segments])
    if not runs:
        return list(segments)
    blocks: list[SegmentView | FlowView] = []
    at = 0
    for start, stop in runs:
        blocks.extend(segments[at:start])
        blocks.append(FlowView(segments[start:stop]))
        at = stop
    blocks.extend(segments[at:])
    return blocks


def segment_view(content: Any, pairs: rules.ToolPairs | None = None,
                 latencies: dict[int, float] | None = None) -> SegmentView:
    kind = rules.segment_kind(content)
    view = SegmentView(kind, content, folded=rules.is_folded(content, kind),
                       more=rules.more_properties(content, rules.CONTENT_DRAWN) if kind != "raw" else {})
    if view.folded or kind in rules.FOLDED_KINDS:
        view.summary = rules.segment_summary(content, kind)
    view.citations = rules.citations(content)
    view.redacted = rules.is_redacted(content)
    if isinstance(content, FunctionCallContent):
        view.server = rules.is_server_call(content)
        view.details = rules.server_details(content) or None
        view.result = pairs.result_of(content) if pairs else None
        view.latency = latencies.get(id(content)) if latencies else None
        view.failed = rules.call_failed(view.result)
        view.anchor = _anchor(content.call_id)
        view.exception = rules.call_exception(view.result)
        if view.result is not None:
            view.media = rules.find_media(view.result.result)
    elif isinstance(content, FunctionResultContent):
        view.paired = bool(pairs and pairs.is_paired(content))
        view.failed = rules.call_failed(content)
        view.call_name = pairs.call_names.get(content.call_id or "") if pairs else None
        view.anchor = _anchor(content.call_id)
        view.exception = rules.call_exception(content)
        if not view.paired:
            view.media = rules.find_media(content.result)
    elif kind == "media":
        media = rules.content_media(content)
        view.media = [media] if media else []
        view.source_url = rules.media_source(content)
    elif kind in ("raw", "error", "part", "file"):
        view.raw = content.to_json_value()
        view.media = rules.find_media(view.raw)
        view.source_url = rules.media_source(content)
    return view


def _anchor(call_id: str | None) -> str | None:
    if not call_id:
        return None
    return "call-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in call_id)[:80]


# -- validation pointers ---------------------------------------------------------------

_HISTORY_POINTER = re.compile(r"/data/conversationHistory/(\d+)(?:/messages/(\d+)(?:/contents/(\d+))?)?(?:/|$)")


def pointer_target(pointer: str | None, page_url: str | None, prefix: str = "", first_screen: int = 0) -> str | None:
    """Where a validation problem's JSON pointer leads on the session page: the entry (and
    message and content) it names, as a link that opens the page on it; None when the
    pointer names no entry of the history.  ``first_screen``: entries before it are on the
    page's first screen, so a link to them needs no ``start``."""
    found = _HISTORY_POINTER.match(pointer or "")
    if found is None or page_url is None:
        return None
    entry, message, content = (int(part) if part is not None else None for part in found.groups())
    assert entry is not None
    anchor = f"{prefix}e{entry}" + (f".m{message}" if message is not None else "") + \
        (f".c{content}" if content is not None else "")
    query = f"?start={entry}" if entry >= first_screen else ""
    return f"{page_url}{query}#{anchor}"


# -- templates -------------------------------------------------------------------------


def _json_filter(value: Any) -> str:
    return pretty_json(value)[0]


def _json_cut(value: Any) -> int:
    return pretty_json(value)[1]


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the viewer: autoescape on for every template."""
    env = Environment(loader=PackageLoader("agentfolio.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(markdown=render_markdown, markdown_inline=render_markdown_inline, json=_json_filter,
                       json_cut=_json_cut, size=rules.human_size,
                       usage=lambda usage: rules.format_usage(usage) if usage is not None else "tokens: not reported",
                       time=short_time, one_line=rules.one_line, url=rules.shown_url,
                       duration=rules.human_duration, risk_label=risk.risk_label)
    env.globals.update(json_tree=json_tree, show_labels=activity.SHOW_LABELS, pointer_target=pointer_target,
                       json_limit=JSON_PREVIEW_CHARS, long_text_chars=rules.LONG_TEXT_CHARS,
                       body_media=lambda part: rules.find_media(part.to_dict(), limit=1), risk_legend=risk.scale_legend)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def static_text(name: str) -> str:
    return resources.files("agentfolio.web").joinpath("static", name).read_text(encoding="utf-8")


def export_html(session: Session, *, title: str, problems: Sequence[Any] = (),
                subtitle: str | None = None) -> str:
    """One HTML file showing the whole session, with its styles and script inside it.

    Opens from disk with no server and no network.  Its own Content-Security-Policy
    lets exactly its one inline script run (by SHA-256) and its one inline style apply,
    and loads nothing from elsewhere but the media the session itself carries.
    """
    view = session_view(session)
    script = static_text("viewer.js").replace("</", "<\\/")
    css = static_text("viewer.css")
    return render("export.html", title=title, subtitle=subtitle, view=view, entries=entry_views(view),
                  tail=unplaced_outcomes(view),
                  problems=list(problems), css=Markup(css), script=Markup(script),
                  script_hash=_sha256(script), style_hash=_sha256(css))


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
