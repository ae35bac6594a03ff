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
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

import nh3
import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from agentfolio import _json
from agentfolio.model import FunctionCallContent, FunctionResultContent, Message, OpaqueEntry, Session
from agentfolio.present import rules

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


def pretty_json(value: Any, limit: int = JSON_PREVIEW_CHARS) -> tuple[str, int]:
    """``value`` as indented JSON (a string stays a string), and how many characters were cut."""
    if isinstance(value, str):
        text = value
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) < 2_000_000:
            try:
                text = _json.dumps(_json.loads(stripped), option=orjson.OPT_INDENT_2).decode()
            except orjson.JSONDecodeError:
                pass
    else:
        try:
            text = _json.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            text = repr(value)
    if len(text) > limit:
        return text[:limit], len(text) - limit
    return text, 0


def short_time(value: Any) -> str:
    """A timestamp for people: ``2025-11-04 19:33:10 UTC`` from ISO text or epoch ms."""
    moment = parse_moment(value)
    if moment is None:
        return "" if value is None else str(value)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_moment(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        text = value.strip().replace("Z", "+00:00")
        # Python before 3.11 wanted exactly 3 or 6 fraction digits; be lenient anyway.
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
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
    index: int


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


@dataclass(slots=True)
class SessionView:
    session: Session
    pairs: rules.ToolPairs
    totals: rules.TokenTotals
    tools: list[rules.ToolInfo]
    message_offsets: list[int]

    @property
    def entry_count(self) -> int:
        return len(self.session.entries)

    @property
    def message_count(self) -> int:
        return self.message_offsets[-1] if self.message_offsets else 0


def session_view(session: Session) -> SessionView:
    offsets = [0]
    for entry in session.entries:
        offsets.append(offsets[-1] + len(entry.items))
    return SessionView(session, rules.pair_tool_calls(session), rules.token_totals(session),
                       rules.tools_of(session), offsets)


def entry_views(view: SessionView, start: int = 0, stop: int | None = None) -> list[EntryView]:
    entries = view.session.entries
    stop = len(entries) if stop is None else min(stop, len(entries))
    result = []
    for index in range(max(0, start), stop):
        entry = entries[index]
        if isinstance(entry, OpaqueEntry):
            result.append(EntryView(index, entry.kind, None, None, [], None, raw=entry.to_json_value()))
            continue
        usage = rules.entry_usage(entry)
        messages = [_message_view(message, view.pairs, view.message_offsets[index] + number)
                    for number, message in enumerate(entry.items)]
        result.append(EntryView(index, entry.kind, entry.created_at, entry.correlation_id, messages,
                                rules.format_usage(usage) if usage is not None else None))
    return result


def _message_view(message: Message, pairs: rules.ToolPairs, index: int) -> MessageView:
    role = message.role or "?"
    return MessageView(role, role_class(message.role), message.author_name, message.created_at,
                       [segment_view(content, pairs) for content in message.items], index)


def segment_view(content: Any, pairs: rules.ToolPairs | None = None) -> SegmentView:
    kind = rules.segment_kind(content)
    view = SegmentView(kind, content, folded=rules.is_folded(content, kind))
    if view.folded or kind in rules.FOLDED_KINDS:
        view.summary = rules.segment_summary(content, kind)
    view.citations = rules.citations(content)
    view.redacted = rules.is_redacted(content)
    if isinstance(content, FunctionCallContent):
        view.server = rules.is_server_call(content)
        view.details = rules.server_details(content) or None
        view.result = pairs.result_of(content) if pairs else None
        view.failed = rules.call_failed(view.result)
        view.anchor = _anchor(content.call_id)
        if view.result is not None:
            view.media = rules.find_media(view.result.result)
    elif isinstance(content, FunctionResultContent):
        view.paired = bool(pairs and pairs.is_paired(content))
        view.failed = rules.call_failed(content)
        view.call_name = pairs.call_names.get(content.call_id or "") if pairs else None
        view.anchor = _anchor(content.call_id)
        if not view.paired:
            view.media = rules.find_media(content.result)
    elif kind == "media":
        media = rules.content_media(content)
        view.media = [media] if media else []
    elif kind in ("raw", "error", "part", "file"):
        view.raw = content.to_json_value()
        view.media = rules.find_media(view.raw)
    return view


def _anchor(call_id: str | None) -> str | None:
    if not call_id:
        return None
    return "call-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in call_id)[:80]


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
    env.filters.update(markdown=render_markdown, json=_json_filter, json_cut=_json_cut, size=rules.human_size,
                       usage=lambda usage: rules.format_usage(usage) if usage is not None else "tokens: not reported",
                       time=short_time, one_line=rules.one_line)
    env.globals.update(json_limit=JSON_PREVIEW_CHARS, long_text_chars=rules.LONG_TEXT_CHARS,
                       body_media=lambda part: rules.find_media(part.to_dict(), limit=1))
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
                  problems=list(problems), css=Markup(css), script=Markup(script),
                  script_hash=_sha256(script), style_hash=_sha256(css))


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
