"""Any session lowered onto what GenAI attributes hold, every loss reported."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote_to_bytes

from agentfolio.formats import tools as tool_spellings
from agentfolio.formats.losses import ConvertOptions, Lowered, Origin, Recorder, entry_pointer, with_extras
from agentfolio.formats.otel_genai.document import catalog_of, own_form
from agentfolio.formats.otel_genai.spec import (
    DEFAULT_FINISH,
    INPUT,
    KEYS,
    NAME,
    OUTPUT,
    OUTPUT_FORM,
    ROLES,
    SYSTEM,
    SYSTEM_FORM,
    TOOLS,
)
from agentfolio.formats.provider import FORM_KEY, Target, build, data_url, form, lower_messages
from agentfolio.formats.shared import data_url_payload, group_by_role
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    ReasoningContent,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    ToolCatalogContent,
    ToolDescription,
    UriContent,
    Usage,
)

__all__ = ["lower"]


_MEDIA_EXTRAS = frozenset({"modality"})
_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text"}), frozenset()),
    ReasoningContent: (frozenset({"text"}), frozenset()),
    FunctionCallContent: (frozenset({"callId", "name", "arguments", "informationalOnly"}), frozenset()),
    FunctionResultContent: (frozenset({"callId", "result"}), frozenset({"type"})),
    DataContent: (frozenset({"uri", "mediaType"}), _MEDIA_EXTRAS),
    UriContent: (frozenset({"uri", "mediaType"}), _MEDIA_EXTRAS),
    HostedFileContent: (frozenset({"fileId", "mediaType"}), _MEDIA_EXTRAS),
    ToolCatalogContent: (frozenset({"items"}), frozenset()),
}


def _fix(rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
    if isinstance(content, FunctionCallContent):
        update: dict[str, Any] = {}
        if content.name is None:
            update["name"] = ""
            rec.approximate(source, pointer, "name", "name", "a GenAI tool call needs a name: written as ''")
        if content.informational_only and not (isinstance(content.arguments, dict) and isinstance(
                content.arguments.get("type"), str)):
            arguments = content.arguments if isinstance(content.arguments, dict) else {"arguments": content.arguments}
            update["arguments"] = {"type": content.name or "server_tool", **arguments}
            rec.approximate(source, pointer, "arguments", "arguments",
                            "a GenAI server tool call is an object with a type: the tool's name was added as it")
        return content.model_copy(update=update) if update else content
    if isinstance(content, FunctionResultContent) and content.extra.get("type") not in (
            None, "server_tool_call_response"):
        rec.drop(source, pointer, "type", f"property 'type' ({content.extra['type']!r})", "not a GenAI part type")
        copied = content.model_copy()
        object.__setattr__(copied, "__pydantic_extra__", {k: v for k, v in content.extra.items() if k != "type"})
        return copied
    if isinstance(content, TextContent) and content.text is None:
        return content.model_copy(update={"text": ""})
    if isinstance(content, ReasoningContent) and content.text is None:
        rec.drop(source, pointer, None, "reasoning content", "redacted reasoning (no text) has no GenAI form")
        return None
    if isinstance(content, DataContent):
        return _fix_data(rec, source, content, pointer)
    if isinstance(content, UriContent) and content.uri is None:
        rec.drop(source, pointer, None, "uri content", "it has no URI")
        return None
    if isinstance(content, HostedFileContent) and content.file_id is None:
        rec.drop(source, pointer, None, "hostedFile content", "it has no file id")
        return None
    return content


def _fix_data(rec: Recorder, source: Any, content: DataContent, pointer: str) -> Any:
    uri = content.uri or ""
    if uri.startswith("data:") and ";base64," in uri.split(",", 1)[0] + ",":
        return content
    if uri.startswith("data:") and "," in uri:
        header, _, payload = uri[5:].partition(",")
        media = header.split(";", 1)[0] or "text/plain"
        rec.approximate(source, pointer, "uri", "uri", "a GenAI blob is base64: the data URL was re-encoded")
        return content.model_copy(update={"uri": data_url(media, base64.b64encode(unquote_to_bytes(payload))
                                                          .decode())})
    size, _ = data_url_payload(uri)
    rec.drop(source, pointer, None, "data content", "it is not a data: URL" if size is None else "unreadable data")
    return None


def _nearest_role(role: str | None, in_request: bool) -> str:
    return "user" if in_request else "assistant"


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Any session as the GenAI attributes of one model call: a leading system message
    and every tool catalog (and a provider's ``tools``) become the system instructions and
    tool definitions, the trailing run of answers the output (with the last response
    entry's usage), the rest the input.  A session read from GenAI attributes (through
    another format and back) keeps the layout its markers say."""
    rec = Recorder(origin)
    roles = tuple(dict.fromkeys([*ROLES, *(m.role for _, m in session.messages() if m.role is not None)]))
    target = Target(NAME, "GenAI", roles, _nearest_role, _CONTENT_FIELDS,
                    message_fields=frozenset({"authorName"}), message_extras=frozenset({"finish_reason"}),
                    session_extras=frozenset({"tools"}), keeps_extras=_keeps, fix=_fix, citations=False)
    own = own_form(session)
    marked_output = next((entry for entry in session.entries if form(entry) == OUTPUT_FORM), None)
    output_ids = {id(message) for message in marked_output.items} if marked_output is not None else set()
    lowered = lower_messages(session, rec, target)
    opening: list[Any] = []
    catalogs: list[ToolDescription] = []
    messages: list[tuple[Message, bool, int]] = []
    for position, (message, in_request) in enumerate(lowered.messages):
        source = lowered.sources[position][0]
        contents = [content for content in message.items if not isinstance(content, ToolCatalogContent)]
        for content in message.items:
            if isinstance(content, ToolCatalogContent):
                catalogs.extend(content.items)
                for item in content.items:
                    if item.parameters is not None:
                        lowered.drop(rec, position, None, f"tool {item.name!r} parameters line",
                                     "a GenAI tool definition has a parameters schema, not a line of text")
        if form(source) == SYSTEM_FORM or (own is None and position == 0 and message.role == "system"):
            opening.extend(contents)
            continue
        output = id(source) in output_ids if marked_output is not None else not in_request
        if len(contents) == len(message.items):
            messages.append((message, output, position))
        elif contents:
            messages.append((message.model_copy(update={"contents": tuple(contents)}), output, position))
    provider_tools = lowered.session_extras.pop("tools", None)
    if provider_tools is not None:
        written = tool_spellings.lower_tools(rec, session, "tools", "", provider_tools,
                                             tool_spellings.SPELLINGS[NAME])
        for index, item in enumerate(written or ()):
            described = catalog_of([item])
            if described is None:  # a GenAI definition needs a type and a name
                rec.drop(session, "", "tools", f"tools item {index}", "a GenAI tool definition has a type and a name")
            else:
                catalogs.extend(described)
    keys = {key for key in (own or {}).get("keys", ()) if key in KEYS}
    system: list[Any] = list(opening)
    if opening:
        keys.add(SYSTEM)
    if catalogs:
        system.append(ToolCatalogContent(items=tuple(catalogs)))
        keys.add(TOOLS)
    split = len(messages)
    while split > 0 and messages[split - 1][1]:
        split -= 1
    head = [message for message, _, _ in messages[:split]]
    if system or SYSTEM in keys:
        head.insert(0, with_extras(Message(role="system", contents=tuple(system)), {FORM_KEY: SYSTEM_FORM}))
    entries: list[Any] = group_by_role(head, roles, frozenset({"system", "user"}))
    keys.add(INPUT)
    tail = [_finished(rec, lowered, message, position) for message, _, position in messages[split:]]
    if tail or marked_output is not None:
        usage = _output_usage(rec, session, marked_output)
        entries.append(build(ResponseEntry, {FORM_KEY: OUTPUT_FORM}, messages=tuple(tail),
                             **({"usage": usage} if usage is not None else {})))
        keys.add(OUTPUT)
    extras = {k: v for k, v in lowered.session_extras.items() if k != FORM_KEY}
    extras[FORM_KEY] = {NAME: {**(own or {}), "keys": [key for key in KEYS if key in keys]}}
    result = Session(data=SessionData(conversation_history=tuple(entries)))
    return Lowered(with_extras(result, extras), rec.losses)


def _keeps(cls: type, key: str) -> bool:
    """GenAI attributes ride on the session as read (a session that went through another
    format and back keeps them)."""
    return cls is Session and key.startswith("gen_ai.")


def _finished(rec: Recorder, lowered: Any, message: Message, position: int) -> Message:
    if "finish_reason" in message.extra:
        return message
    lowered.approximate(rec, position, "finish_reason", "finish_reason",
                        f"a GenAI output message needs a finish reason: written as {DEFAULT_FINISH!r}")
    return with_extras(message.model_copy(), {"finish_reason": DEFAULT_FINISH})


def _output_usage(rec: Recorder, session: Session, marked: Any) -> Usage | None:
    """The usage of the output entry (the one marked, else the last entry if it is a
    response); its report as dropped (entries have no place in GenAI attributes) is taken
    back."""
    entries = session.entries
    entry = marked if marked is not None else (entries[-1] if entries else None)
    if not isinstance(entry, ResponseEntry) or entry.usage is None:
        return None
    index = next(i for i, candidate in enumerate(entries) if candidate is entry)
    usage = entry.usage
    pointer = rec.at(entry, entry_pointer(index), "usage")
    rec.losses[:] = [loss for loss in rec.losses if not (loss.pointer == pointer and loss.what == "usage")]
    where = entry_pointer(index) + "/usage"
    kept: dict[str, Any] = {}
    if usage.input_token_count is not None:
        kept["input_token_count"] = usage.input_token_count
    if usage.output_token_count is not None:
        kept["output_token_count"] = usage.output_token_count
    if usage.total_token_count is not None:
        rec.drop(usage, where, "totalTokenCount", "totalTokenCount", "GenAI attributes count input and output "
                 "tokens only")
    for key in usage.extra:
        rec.drop(usage, where, key, f"usage property {key!r}", "GenAI attributes count input and output tokens only")
    return Usage(**kept) if kept else None
