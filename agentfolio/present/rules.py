"""Presentation rules shared by every renderer (terminal now, HTML later).

What belongs together, what is folded, what is summed: decided once here, from the
canonical model, so the terminal and the web viewer never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentfolio.formats.losses import FORM_KEY
from agentfolio.model import (
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Session,
    Usage,
    UsageContent,
)

# LONG_TEXT_CHARS and call_failed are re-exported: front ends read every presentation rule from here.
from agentfolio.model.analysis import LONG_TEXT_CHARS as LONG_TEXT_CHARS
from agentfolio.model.analysis import MEDIA_CLASSES, media_class
from agentfolio.model.analysis import call_failed as call_failed
from agentfolio.model.base import Record

# The counts read from JSON are re-exported: front ends read every presentation rule from here.
from agentfolio.present.counts import ANSWER_KINDS as ANSWER_KINDS
from agentfolio.present.counts import SUMMARY_CHARS as SUMMARY_CHARS
from agentfolio.present.counts import TokenTotals as TokenTotals
from agentfolio.present.counts import UsageCounts as UsageCounts
from agentfolio.present.counts import entry_json as entry_json
from agentfolio.present.counts import entry_usage_counts as entry_usage_counts
from agentfolio.present.counts import history_tokens as history_tokens
from agentfolio.present.counts import map_members
from agentfolio.present.counts import one_line as one_line
from agentfolio.present.counts import outcome_tokens as outcome_tokens
from agentfolio.present.counts import usage_counts as usage_counts
from agentfolio.present.counts import usage_total as usage_total

ROLE_STYLES: dict[str, str] = {
    "user": "bold cyan",
    "assistant": "bold green",
    "system": "bold magenta",
    "developer": "bold magenta",
    "tool": "bold yellow",
}
UNKNOWN_ROLE_STYLE = "bold white"


@dataclass(slots=True)
class ToolPairs:
    """Function calls matched to their results by call id, across the whole session."""

    result_for_call: dict[int, FunctionResultContent] = field(default_factory=dict)
    # Results shown beside their call: where they stand, a renderer only points back.
    paired_results: set[int] = field(default_factory=set)
    call_names: dict[str, str] = field(default_factory=dict)

    def result_of(self, call: FunctionCallContent) -> FunctionResultContent | None:
        return self.result_for_call.get(id(call))

    def is_paired(self, result: FunctionResultContent) -> bool:
        return id(result) in self.paired_results


def pair_tool_calls(session: Session) -> ToolPairs:
    """Match each call with the first later result carrying its call id; a result with no
    id (Gemini's code execution) goes with the latest call before it that has none."""
    pairs = ToolPairs()
    waiting: dict[str, FunctionCallContent] = {}
    unnamed: list[FunctionCallContent] = []
    for _, message in session.messages():
        for content in message.items:
            if isinstance(content, FunctionCallContent) and content.call_id is not None:
                waiting.setdefault(content.call_id, content)
                if content.name:
                    pairs.call_names[content.call_id] = content.name
            elif isinstance(content, FunctionCallContent):
                unnamed.append(content)
            elif isinstance(content, FunctionResultContent) and (content.call_id in waiting or (
                    content.call_id is None and unnamed)):
                call = waiting.pop(content.call_id) if content.call_id is not None else unnamed.pop()
                pairs.result_for_call[id(call)] = content
                pairs.paired_results.add(id(content))
    return pairs


# -- Provider facts: redacted reasoning, server-run calls, citations ----------------------

def is_redacted(content: object) -> bool:
    """Reasoning the provider hid: nothing to read, only data to send back."""
    from agentfolio.model import ReasoningContent

    return isinstance(content, ReasoningContent) and content.text is None and content.protected_data is not None


def is_server_call(content: object) -> bool:
    """A call the provider ran itself (web search, code execution, MCP...)."""
    return isinstance(content, FunctionCallContent) and bool(content.informational_only)


#: Properties of a server-run call that are bookkeeping, not what it did.
_CALL_BOOKKEEPING = frozenset({"type", "id", "status", FORM_KEY})


def server_details(call: FunctionCallContent) -> dict[str, object]:
    """What a server-run call carries beside its name and arguments (its action, queries,
    results, outputs...), shown with it."""
    if not is_server_call(call):
        return {}
    return {key: value for key, value in call.extra.items() if key not in _CALL_BOOKKEEPING}


@dataclass(frozen=True, slots=True)
class CitationLink:
    """One source a text cites, ready to show: a link only when its URL is http(s)."""

    number: int
    title: str
    url: str | None
    snippet: str | None


def citations(content: object) -> list[CitationLink]:
    from agentfolio.model import Citation, TextContent

    if not isinstance(content, TextContent) or not content.annotations:
        return []
    links = []
    for number, annotation in enumerate(content.annotations, 1):
        if not isinstance(annotation, Citation):
            continue
        url = annotation.url if isinstance(annotation.url, str) and annotation.url.lower().startswith(
            ("https:", "http:")) else None
        title = annotation.title or annotation.url or (f"file {annotation.file_id}" if annotation.file_id else "source")
        links.append(CitationLink(number, title, url, annotation.snippet))
    return links


def entry_usage(entry: object) -> Usage | None:
    """A response's usage record, to show: its own, or else the sum of usage contents in its messages."""
    usage: Usage | None = getattr(entry, "usage", None)
    if usage is not None:
        return usage
    found = [c.usage for message in getattr(entry, "items", []) for c in message.items
             if isinstance(c, UsageContent) and c.usage is not None]
    if not found:
        return None
    return Usage(
        input_token_count=sum(u.input_token_count or 0 for u in found),
        output_token_count=sum(u.output_token_count or 0 for u in found),
        total_token_count=sum(u.total_token_count or 0 for u in found),
    )


def token_totals(session: Session) -> TokenTotals:
    """Usage summed over responses, and over the outcomes (2.0 ``terminalResults``) of
    requests whose response is not in the history (see :func:`history_tokens`)."""
    return history_tokens([entry_json(entry) for entry in session.entries],
                          session.data.extra if session.data is not None else {})


def format_usage(usage: Usage) -> str:
    parts = []
    for label, value in (("in", usage.input_token_count), ("out", usage.output_token_count),
                         ("total", usage.total_token_count)):
        if value is not None:
            parts.append(f"{label} {value:,}")
    return "tokens: " + " · ".join(parts) if parts else "tokens: not reported"


# -- Segments: how each kind of content is presented ---------------------------------
#
# Named after the Prompt Envelope segment kinds, since that format is the one that says
# how each kind should look.  Every renderer asks these instead of deciding itself.


#: Segment kinds folded unless the record says otherwise (envelope ``collapsed``).
FOLDED_KINDS = frozenset({"system_prompt", "memory", "skills", "tool_overview", "long_text", "reasoning"})


def segment_kind(content: object) -> str:
    """The envelope segment kind a canonical content is shown as.

    ``text``, ``system_prompt``, ``long_text``, ``static_var``, ``memory``, ``skills``,
    ``tool_overview``, ``tool_call_request``, ``tool_call_result``, ``document``,
    ``media``, plus what envelopes lack: ``reasoning``, ``error``, ``usage``,
    ``hosted``, ``part`` and ``raw`` (a kind we do not know, shown as its JSON).
    """
    from agentfolio.model import (
        DataContent,
        DocumentContent,
        ErrorContent,
        HostedFileContent,
        HostedVectorStoreContent,
        MemoryContent,
        PartContent,
        ReasoningContent,
        SkillsContent,
        TemplateVariableContent,
        TextContent,
        ToolCatalogContent,
        UriContent,
    )

    if isinstance(content, TextContent):
        style = content.presentation.style if content.presentation else None
        if style in ("system_prompt", "long_text"):
            return style
        return "long_text" if len(content.text or "") > LONG_TEXT_CHARS else "text"
    simple: dict[type, str] = {ReasoningContent: "reasoning", FunctionCallContent: "tool_call_request",
              FunctionResultContent: "tool_call_result", TemplateVariableContent: "static_var",
              MemoryContent: "memory", SkillsContent: "skills", ToolCatalogContent: "tool_overview",
              DocumentContent: "document", ErrorContent: "error", UsageContent: "usage",
              HostedFileContent: "hosted", HostedVectorStoreContent: "hosted"}
    kind = simple.get(type(content))
    if kind is not None:
        return kind
    if isinstance(content, (DataContent, UriContent)):
        return "media" if media_class(content.media_type, content.uri) else "file"
    if isinstance(content, PartContent):
        return "media" if media_class(content.content_type, content.url) else "part"
    return "raw"


def flows_inline(content: object, kind: str) -> bool:
    """Whether a segment reads as part of the sentence around it: a template variable
    always, a text when it is one short paragraph.  A run of such segments with a variable
    in it is drawn as one paragraph, each variable in its place in the text."""
    if kind == "static_var":
        return True
    if kind != "text":
        return False
    text = getattr(content, "text", None) or ""
    return len(text) <= 1000 and "\n\n" not in text.strip() and not text.lstrip().startswith(_BLOCK_STARTS)


#: How markdown that is more than a paragraph starts (a heading, a list, a quote, a table, code).
_BLOCK_STARTS = ("#", "-", "*", ">", "|", "```", "1.")


def inline_runs(kinds_and_flows: list[tuple[str, bool]]) -> list[tuple[int, int]]:
    """The ``(start, stop)`` runs of segments drawn as one paragraph: consecutive segments
    that flow inline, at least one a variable and one not."""
    runs: list[tuple[int, int]] = []
    start = 0
    while start < len(kinds_and_flows):
        stop = start
        while stop < len(kinds_and_flows) and kinds_and_flows[stop][1]:
            stop += 1
        kinds = {kind for kind, _ in kinds_and_flows[start:stop]}
        if "static_var" in kinds and len(kinds) > 1:
            runs.append((start, stop))
        start = stop + 1
    return runs


def is_folded(content: object, kind: str | None = None) -> bool:
    """Whether a segment starts folded: what the record asked for, else the kind's default."""
    presentation = getattr(content, "presentation", None)
    if presentation is not None and presentation.collapsed is not None:
        return bool(presentation.collapsed)
    return (kind or segment_kind(content)) in FOLDED_KINDS


#: The label a segment kind is introduced by, in every renderer.
KIND_LABELS: dict[str, str] = {
    "text": "text", "system_prompt": "system prompt", "long_text": "long text", "static_var": "variable",
    "memory": "memory", "skills": "skills", "tool_overview": "tools", "tool_call_request": "call",
    "tool_call_result": "result", "document": "document", "media": "media", "reasoning": "reasoning",
    "error": "error", "usage": "usage", "hosted": "hosted", "file": "file", "part": "part", "raw": "raw",
}


def char_count(content: object) -> int | float:
    """A text's length: the count the record declares (envelope ``charCount``), else its own."""
    presentation = getattr(content, "presentation", None)
    declared = presentation.char_count if presentation is not None else None
    return declared if declared is not None else len(getattr(content, "text", None) or "")


def segment_summary(content: object, kind: str | None = None) -> str:
    """The one line shown for a segment while it is folded, after the kind's own label."""
    kind = kind or segment_kind(content)
    # The item lists of memory, skills and tool-catalog contents, read by duck typing like the rest.
    items: Any = getattr(content, "items", None)
    if kind in ("system_prompt", "long_text"):
        return f"{char_count(content):,} chars · {one_line(content.text, 80)}"  # type: ignore[attr-defined]
    if kind == "reasoning":
        protected = getattr(content, "protected_data", None)
        if is_redacted(content):
            return f"redacted · {len(protected or ''):,} chars kept for the provider"
        return f"{len(content.text or ''):,} chars" + (" · signed" if protected else "")  # type: ignore[attr-defined]
    if kind == "memory":
        return f"{_count(items, 'item')}: " + ", ".join(item.title for item in items[:4])
    if kind == "skills":
        return f"{_count(items, 'skill')}: " + ", ".join(item.name for item in items[:6])
    if kind == "tool_overview":
        return f"{_count(items, 'tool')}: " + ", ".join(item.name for item in items[:6])
    if kind == "tool_call_request":
        arguments = getattr(content, "arguments", None)
        count = len(arguments) if isinstance(arguments, dict) else (1 if arguments else 0)
        return f"{getattr(content, 'name', None) or '?'} · {count} argument{'' if count == 1 else 's'}"
    if kind == "tool_call_result":
        result = getattr(content, "result", None)
        size = len(result) if isinstance(result, str) else len(_json_text(result))
        return f"{'failed' if call_failed(content) else 'ok'} · {size:,} chars"  # type: ignore[arg-type]
    if kind == "static_var":
        return f"{variable_label(content)} = {one_line(getattr(content, 'value', ''), 60)}"
    if kind == "document":
        return f"{getattr(content, 'file_name', '?')} · {human_size(getattr(content, 'size_bytes', None))}"
    if kind == "media":
        media = content_media(content)
        return f"{media.media if media else '?'} · {getattr(content, 'uri', None) or getattr(content, 'url', '')}"
    return kind


def variable_label(content: object) -> str:
    """How a template variable is named on screen: ``{{name}}``."""
    return "{{" + str(getattr(content, "name", "?")) + "}}"


def human_size(size: float | None) -> str:
    """``48,213 bytes``, ``47.1 KB``...; ``size unknown`` for None."""
    if size is None:
        return "size unknown"
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value):,} bytes" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"  # pragma: no cover


def human_duration(seconds: float | None) -> str:
    """A duration for people: ``850 ms``, ``12.5 s``, ``4 min 05 s``, ``3 h 02 min``, ``2 d 4 h``."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    if seconds > 1e12:
        return "over 30,000 years"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24:,} d {hours % 24} h"


def _json_text(value: object) -> str:
    from agentfolio import _json

    try:
        return _json.dumps(value).decode()
    except TypeError:
        return str(value)


def _count(items: object, noun: str) -> str:
    number = len(items) if isinstance(items, tuple) else 0
    return f"{number} {noun}{'' if number == 1 else 's'}"


# -- Media: images, audio and video wherever they sit -----------------------------------

@dataclass(frozen=True, slots=True)
class Media:
    """An image, audio or video clip found in a record, ready to show inline."""

    media: str  # image | audio | video
    src: str
    media_type: str | None = None
    alt: str | None = None


#: URI schemes a viewer may load media from: nothing that runs code.
SAFE_MEDIA_SCHEMES = ("https:", "http:", "data:")


def safe_media_src(src: str | None) -> str | None:
    """``src`` if it is a URL a browser may load as media (http(s) or a media ``data:``)."""
    if not isinstance(src, str):
        return None
    lowered = src.strip().lower()
    if lowered.startswith("data:"):
        kind = lowered[5:].split(";", 1)[0].split(",", 1)[0]
        return src.strip() if kind.split("/", 1)[0] in MEDIA_CLASSES and kind != "image/svg+xml" else None
    return src.strip() if lowered.startswith(("https:", "http:")) else None


def find_media(value: object, *, limit: int = 20, depth: int = 12) -> list[Media]:
    """Media carried by any JSON value, whatever its shape.

    Knows the shapes producers use: ``data:`` URIs and media URLs in strings; objects with
    ``image_url`` (OpenAI), ``source: {type: base64, media_type, data}`` (Anthropic),
    ``inlineData``/``inline_data: {mimeType, data}`` (Gemini), ``{type: image, data,
    mimeType}`` (MCP), and any object with a media ``mediaType``/``mimeType`` beside a
    ``uri``/``url``/``data``.
    """
    found: list[Media] = []
    seen: set[str] = set()

    def add(media: Media | None) -> None:
        if media is not None and media.src not in seen and len(found) < limit:
            seen.add(media.src)
            found.append(media)

    def walk(node: object, level: int) -> None:
        if len(found) >= limit or level > depth:
            return
        if isinstance(node, str):
            add(_media_from_string(node))
        elif isinstance(node, dict):
            media = _media_from_object(node)
            if media is not None:
                add(media)
                return
            for child in node.values():
                walk(child, level + 1)
        elif isinstance(node, (list, tuple)):
            for child in node:
                walk(child, level + 1)

    walk(value, 0)
    return found


def _media_from_string(text: str) -> Media | None:
    if len(text) < 12 or text.lstrip()[:5].lower() not in ("data:", "http:", "https"):
        return None
    candidate = text.strip()
    if " " in candidate or "\n" in candidate:
        return None
    kind = media_class(None, candidate)
    src = safe_media_src(candidate)
    if kind is None or src is None:
        return None
    return Media(kind, src, None)


def _media_from_object(node: dict[str, Any]) -> Media | None:
    alt = next((node[key] for key in ("alt", "altText", "alt_text", "caption", "name", "title")
                if isinstance(node.get(key), str)), None)
    image_url = node.get("image_url")
    if isinstance(image_url, dict):
        image_url = image_url.get("url")
    if isinstance(image_url, str):
        src = safe_media_src(image_url)
        return Media("image", src, None, alt) if src else None
    for inline_key in ("inlineData", "inline_data", "source"):
        inline = node.get(inline_key)
        if isinstance(inline, dict) and isinstance(inline.get("data"), str):
            media_type = inline.get("mimeType") or inline.get("mime_type") or inline.get("media_type")
            kind = media_class(media_type if isinstance(media_type, str) else None)
            if kind:
                src = safe_media_src(f"data:{media_type};base64,{inline['data']}")
                return Media(kind, src, media_type, alt) if src else None
        if isinstance(inline, dict) and isinstance(inline.get("url"), str):
            kind = media_class(inline.get("media_type"), inline["url"]) or (
                "image" if node.get("type") == "image" else None)
            src = safe_media_src(inline["url"])
            return Media(kind, src, None, alt) if kind and src else None
    media_type = next((node[key] for key in ("mediaType", "mimeType", "mime_type", "media_type", "contentType",
                                             "content_type") if isinstance(node.get(key), str)), None)
    declared = node.get("type") if node.get("type") in MEDIA_CLASSES else None
    kind = media_class(media_type) or declared
    if kind is None:
        return None
    for key in ("uri", "url", "src", "content_url"):
        if isinstance(node.get(key), str):
            src = safe_media_src(node[key])
            if src:
                return Media(kind, src, media_type, alt)
    data = node.get("data") if isinstance(node.get("data"), str) else None
    if data is None and node.get("content_encoding") == "base64" and isinstance(node.get("content"), str):
        data = node["content"]
    if data is not None and media_type:
        src = safe_media_src(data if data.startswith("data:") else f"data:{media_type};base64,{data}")
        return Media(kind, src, media_type, alt) if src else None
    return None


def content_media(content: object) -> Media | None:
    """The media a ``media`` segment shows (data, uri or part content)."""
    from agentfolio.model import DataContent, PartContent, UriContent

    alt = None
    extra = getattr(content, "extra", {}) or {}
    for key in ("altText", "alt", "name", "title"):
        if isinstance(extra.get(key), str):
            alt = extra[key]
            break
    if isinstance(content, (DataContent, UriContent)):
        kind = media_class(content.media_type, content.uri)
        src = safe_media_src(content.uri)
        return Media(kind, src, content.media_type, alt) if kind and src else None
    if isinstance(content, PartContent):
        kind = media_class(content.content_type, content.url)
        if content.url:
            src = safe_media_src(content.url)
        elif content.content is not None and content.encoding == "base64" and content.content_type:
            src = safe_media_src(f"data:{content.content_type};base64,{content.content}")
        else:
            src = None
        return Media(kind, src, content.content_type, alt or content.name) if kind and src else None
    return None


# -- The tools a model had ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str | None = None
    parameters: str | None = None
    calls: int = 0
    offered: bool = False


def tools_of(session: Session) -> list[ToolInfo]:
    """Tools the model was offered (tool catalogs), then any it called without an offer."""
    from agentfolio.model import ToolCatalogContent

    offered: dict[str, ToolInfo] = {}
    calls: dict[str, int] = {}
    for _, message in session.messages():
        for content in message.items:
            if isinstance(content, ToolCatalogContent):
                for item in content.items:
                    offered.setdefault(item.name, ToolInfo(item.name, item.description, item.parameters,
                                                           offered=True))
            elif isinstance(content, FunctionCallContent) and content.name:
                calls[content.name] = calls.get(content.name, 0) + 1
    tools = [ToolInfo(t.name, t.description, t.parameters, calls.get(t.name, 0), True) for t in offered.values()]
    tools.extend(ToolInfo(name, calls=count) for name, count in calls.items() if name not in offered)
    return tools


# -- What a record holds beyond what a renderer draws ------------------------------------
#
# Nothing a record carries is hidden: whatever has no look of its own is shown as its
# JSON ("more properties"), in every renderer.

#: Unknown properties a renderer already draws in its own way, and the note of how a
#: source spelled something (``$form``: bookkeeping, not data).
DRAWN_EXTRAS = frozenset({"success", "toolName", "altText", "exception", FORM_KEY})
#: Data-level properties drawn in their own way (outcomes of 2.0 states, in the shared
#: spelling and in Microsoft's Python prototype's).
DRAWN_DATA = frozenset({"terminalResults", "completionReceipts", "responseMailbox", "completedCorrelations"})


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json_value()
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def more_properties(record: object, drawn: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """The properties of ``record`` no renderer draws otherwise, by wire name: modelled
    fields that were given and are not in ``drawn`` (Python names), then unknown ones."""
    if not isinstance(record, Record):
        return {}
    found: dict[str, Any] = {}
    fields = type(record).model_fields
    for name in record.model_fields_set:
        if name in drawn or name not in fields:
            continue
        value = getattr(record, name)
        if value is not None:
            found[fields[name].alias or name] = _plain(value)
    found.update((key, value) for key, value in record.extra.items() if key not in DRAWN_EXTRAS)
    return found


#: Entry and message fields every renderer draws in its header or body.
ENTRY_DRAWN = frozenset({"kind", "correlation_id", "created_at", "messages", "usage"})
MESSAGE_DRAWN = frozenset({"role", "author_name", "created_at", "contents", "message_id"})
#: Content fields the segment kinds draw (everything else is "more properties").
CONTENT_DRAWN = frozenset({"kind", "presentation", "text", "uri", "media_type", "message", "error_code", "details",
                           "call_id", "name", "arguments", "result", "file_id", "vector_store_id", "usage", "content",
                           "value", "description", "items", "file_name", "snippet", "size_bytes", "parsed_content",
                           "content_type", "encoding", "url", "metadata"})


def session_properties(session: Session) -> dict[str, Any]:
    """Session- and data-level properties not drawn elsewhere (``session``, ``truncation``...)."""
    found = {key: value for key, value in session.extra.items() if key not in ("model", FORM_KEY)}
    if session.data is not None:
        found.update((key, value) for key, value in session.data.extra.items() if key not in DRAWN_DATA)
    return found


def session_model(session: Session) -> str | None:
    """The model a record names at its top (the Prompt Envelope's ``model``)."""
    model = session.extra.get("model")
    return model if isinstance(model, str) else None


def call_exception(result: FunctionResultContent | None) -> str | None:
    """The exception a tool result reports (durable state's ``exception`` property), as text."""
    if result is None:
        return None
    exception = result.extra.get("exception")
    if exception in (None, "", False):
        return None
    if isinstance(exception, str):
        return exception
    return _json_text(exception)


def media_source(content: object) -> str | None:
    """Where a media or file segment says its bytes are (shown whether or not they load)."""
    for attribute in ("uri", "url"):
        value = getattr(content, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def shown_url(url: str | None, limit: int = 160) -> str:
    """A URL as shown in text: ``data:`` URLs by their header and size, others cut to ``limit``."""
    if not url:
        return ""
    if url[:5].lower() == "data:":
        head = url.split(",", 1)[0]
        return f"{head[:60]}, {len(url):,} characters inline"
    return url if len(url) <= limit else url[: limit - 1] + "…"


# -- 1.2 compactions and 2.0 outcomes -------------------------------------------------------


def compaction_range(session: Session, index: int) -> str:
    """What a compaction at ``index`` stands for: the history before it and, when the state
    says messages were evicted (``truncation``), how many and when."""
    replaced = "the history before it" if index <= 0 else (
        "entry #0" if index == 1 else f"entries #0–#{index - 1}")
    text = f"summary replacing {replaced}"
    truncation = session.data.extra.get("truncation") if session.data is not None else None
    if isinstance(truncation, dict):
        count = truncation.get("evictedMessageCount")
        first, last = truncation.get("firstEvictedAt"), truncation.get("lastEvictedAt")
        evicted = f"{count:,} message(s) evicted" if isinstance(count, int) else "messages evicted"
        if first or last:
            evicted += f" from {first or '?'} to {last or '?'}"
        text += f"; {evicted}"
    return text


@dataclass(slots=True)
class Outcome:
    """How a request ended (durable state 2.0): its terminal result and completion receipt."""

    correlation_id: str
    outcome: str | None = None
    completed_at: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    #: The answer: the terminal response's messages (unreadable ones kept as JSON in ``raw_messages``).
    messages: list[Message] = field(default_factory=list)
    raw_messages: list[Any] = field(default_factory=list)
    has_value: bool = False
    value: Any = None
    error: Any = None
    result_state: str | None = None
    expires_at: str | None = None
    unavailable_at: str | None = None
    #: Everything else the result and receipt carry (ids, continuation token, extensions...).
    more: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    def line(self) -> str:
        """``succeeded · finish stop · completed … · result available``."""
        parts = [self.outcome or "outcome not recorded"]
        if self.finish_reason:
            parts.append(f"finish {self.finish_reason}")
        if self.completed_at:
            parts.append(f"completed {self.completed_at}")
        if self.result_state:
            parts.append(f"result {self.result_state}")
        if self.usage is not None:
            parts.append(format_usage(self.usage))
        return " · ".join(parts)


_RESULT_DRAWN = {"correlationId", "outcome", "completedAt", "resultExpiresAt", "expiresAt", "response", "error"}
_RESPONSE_DRAWN = {"messages", "value", "usage", "finishReason"}
_RECEIPT_DRAWN = {"correlationId", "outcome", "completedAt", "resultState", "resultExpiresAt",
                  "resultUnavailableAt"}


def outcomes(session: Session) -> dict[str, Outcome]:
    """Every request's outcome a state records (``terminalResults``, ``completionReceipts``;
    Microsoft's Python prototype names them ``responseMailbox``, ``completedCorrelations``),
    by correlation id; empty for states before 2.0."""
    extra = session.data.extra if session.data is not None else {}
    found: dict[str, Outcome] = {}
    for key, result in map_members(extra, "terminalResults", "responseMailbox"):
        found.setdefault(key, _outcome_of_result(key, result))
    for key, receipt in map_members(extra, "completionReceipts", "completedCorrelations"):
        outcome = found.setdefault(str(key), Outcome(str(key)))
        outcome.outcome = outcome.outcome or _text(receipt.get("outcome"))
        outcome.completed_at = outcome.completed_at or _text(receipt.get("completedAt"))
        outcome.result_state = _text(receipt.get("resultState"))
        outcome.expires_at = outcome.expires_at or _text(receipt.get("resultExpiresAt"))
        outcome.unavailable_at = _text(receipt.get("resultUnavailableAt"))
        rest = {k: v for k, v in receipt.items() if k not in _RECEIPT_DRAWN}
        if rest:
            outcome.more["receipt"] = rest
    return found


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _outcome_of_result(key: str, result: dict[str, Any]) -> Outcome:
    from pydantic import ValidationError

    outcome = Outcome(key, outcome=_text(result.get("outcome")), completed_at=_text(result.get("completedAt")),
                      expires_at=_text(result.get("resultExpiresAt", result.get("expiresAt"))),
                      error=result.get("error"))
    response = result.get("response")
    if isinstance(response, dict):
        outcome.finish_reason = _text(response.get("finishReason"))
        if isinstance(response.get("usage"), dict):
            try:
                outcome.usage = Usage.model_validate(response["usage"])
            except ValidationError:
                outcome.more["usage"] = response["usage"]
        for raw in response.get("messages") or []:
            try:
                outcome.messages.append(Message.model_validate(raw))
            except ValidationError:
                outcome.raw_messages.append(raw)
        if "value" in response:
            outcome.has_value, outcome.value = True, response["value"]
        rest = {k: v for k, v in response.items() if k not in _RESPONSE_DRAWN}
        if rest:
            outcome.more["response"] = rest
    rest = {k: v for k, v in result.items() if k not in _RESULT_DRAWN}
    if rest:
        outcome.more["result"] = rest
    return outcome


def outcome_places(session: Session, found: dict[str, Outcome]) -> dict[int, list[Outcome]]:
    """Where each outcome is shown: after the last entry carrying its correlation id, or
    (key ``-1``) after the history when no entry does."""
    last: dict[str, int] = {}
    for index, entry in enumerate(session.entries):
        correlation = getattr(entry, "correlation_id", None)
        if correlation in found:
            last[correlation] = index
    places: dict[int, list[Outcome]] = {}
    for key, outcome in found.items():
        places.setdefault(last.get(key, -1), []).append(outcome)
    return places
