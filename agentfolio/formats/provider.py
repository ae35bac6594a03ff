"""What the provider transcript formats (Anthropic, OpenAI Responses, Gemini, LangChain,
A2A) share: building records that keep every unknown property, keeping a block we do not
understand whole, and one lowering driven by what each target declares it can hold.

Reading a provider block maps the properties the model has a place for onto it and keeps
the rest in the record's ``extra`` under the provider's own names, so writing it back
gives the same JSON value.  A block the reader cannot map exactly (an unknown type, a
known type of the wrong shape, an unknown property named like one of the record's own
fields) is kept whole as ``{"$type": "<format>.<type>", "value": block}``: shown as JSON,
written back as read, and recognised as that format's own by its lowering.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

import orjson
from pydantic import ValidationError

from agentfolio import _json
from agentfolio.formats.errors import Problem
from agentfolio.formats.losses import FORM_KEY as LOSSES_FORM_KEY
from agentfolio.formats.losses import (
    Recorder,
    content_pointer,
    drop_entry_fields,
    entry_pointer,
    error_text,
    listing_text,
    message_pointer,
    set_fields,
    with_extras,
)
from agentfolio.model import (
    Citation,
    ErrorContent,
    FunctionCallContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    ReasoningContent,
    Record,
    Session,
    TextContent,
    ToolCatalogContent,
    UnknownContent,
)

#: A property of ours, not the source's, saying how the source spelled something the model
#: holds one way (a one-text content array vs a string, snake_case keys...).  Readers set
#: it only where the spelling is ambiguous; provider lowerings carry it without a loss (it
#: is not data, and each writer only reads the values it set), so a document that went
#: through durable state comes back spelled as it was.
FORM_KEY = LOSSES_FORM_KEY


def rest(value: Mapping[str, Any], *known: str) -> dict[str, Any]:
    """The properties of ``value`` other than ``known``, in order."""
    return {k: v for k, v in value.items() if k not in known}


def _wire_names(cls: type[Record]) -> frozenset[str]:
    return frozenset(info.alias or name for name, info in cls.model_fields.items())


_WIRE_NAMES: dict[type, frozenset[str]] = {}
_R = TypeVar("_R", bound=Record)


def build(cls: type[_R], extras: Mapping[str, Any], **known: Any) -> _R | None:
    """``cls(**known)`` carrying ``extras`` as unknown properties, or None when an extra
    is named like one of the record's own fields (it could not be written back apart)."""
    owned = _WIRE_NAMES.get(cls)
    if owned is None:
        owned = _WIRE_NAMES[cls] = _wire_names(cls)
    if extras and any(key in owned for key in extras):
        return None
    # Validated from wire names in one pydantic-core call (a Python __init__ per record
    # costs several times more on a long history); a content writes its $type.
    names = cls._wire_names
    data = {names.get(key, key): value for key, value in known.items()}
    kind = _KINDS.get(cls)
    if kind is None:
        field = cls.model_fields.get("kind")
        kind = _KINDS[cls] = field.default if field is not None and isinstance(field.default, str) else ""
    if kind:
        data["$type"] = kind
    if extras:
        data.update(extras)
    try:
        return cls.model_validate(data)
    except ValidationError:
        return None  # a value of the wrong type: the caller keeps the block whole


_KINDS: dict[type, str] = {}


def kept_whole(fmt: str, block: Any, kind: str | None = None) -> OpaqueContent:
    """A block kept exactly as read, tagged with the format it belongs to."""
    tag = kind if kind is not None else (block.get("type") if isinstance(block, dict) else None)
    return with_extras(OpaqueContent(), {"$type": f"{fmt}.{tag if isinstance(tag, str) else 'value'}",
                                         "value": block})


def is_kept_whole(fmt: str, content: Any) -> TypeGuard[OpaqueContent]:
    if type(content) is not OpaqueContent:
        return False
    extra = content.__pydantic_extra__ or {}
    tag = extra.get("$type")
    return isinstance(tag, str) and tag.startswith(fmt) and tag[len(fmt):len(fmt) + 1] == "." and "value" in extra


def kept_value(content: Record) -> Any:
    return (content.__pydantic_extra__ or {}).get("value")


# The helpers below read ``__pydantic_extra__`` itself rather than the read-only
# ``extra`` view: writers call them once per block of a long history.
def form(record: Any) -> Any:
    extra = record.__pydantic_extra__
    return extra.get(FORM_KEY) if extra else None


# -- reasoning signatures ------------------------------------------------------------------
#
# Anthropic's thinking signatures, Gemini's thought signatures and OpenAI's encrypted
# reasoning are each accepted only by the provider that made them.  A reader marks the
# reasoning it reads with its format (in the content's $form: not data, never reported),
# so a target can tell its own from another provider's.

_SIGNED_BY = "signed-by:"


def signed_by(fmt: str) -> dict[str, str]:
    """The extras marking reasoning whose protected data ``fmt`` made."""
    return {FORM_KEY: _SIGNED_BY + fmt}


def signer(content: Any) -> str | None:
    """The format whose reader marked this reasoning's protected data (None: unknown)."""
    value = content.extra.get(FORM_KEY)
    tokens = value.split() if isinstance(value, str) else ()
    return next((token[len(_SIGNED_BY):] for token in tokens if token.startswith(_SIGNED_BY)), None)


def flag_foreign_signature(rec: Recorder, source: Any, content: Any, pointer: str, target: str, title: str) -> None:
    """Report reasoning carried into ``target`` with protected data another provider (or an
    unknown one) made: the target refuses a signature it did not make."""
    if not isinstance(content, ReasoningContent) or content.protected_data is None:
        return
    made_by = signer(content)
    if made_by == target:
        return
    rec.approximate(source, pointer, "protectedData", "reasoning signature",
                    f"made by {made_by or 'an unknown producer'}, not {title}: {title} refuses a signature it did "
                    "not make, so drop this reasoning before sending the conversation back")


def extras_without_form(record: Any) -> dict[str, Any]:
    """A new dict of the record's unknown properties, our ``$form`` left out."""
    extra: dict[str, Any] | None = record.__pydantic_extra__
    if not extra:
        return {}
    if FORM_KEY in extra:
        return {k: v for k, v in extra.items() if k != FORM_KEY}
    return extra.copy()


def add_extras(block: dict[str, Any], record: Any) -> dict[str, Any]:
    """``block`` with the record's unknown properties (``$form`` left out) added after its own."""
    if record.__pydantic_extra__:
        block.update(extras_without_form(record))
    return block


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def split_data_url(uri: str | None, media_type: str | None) -> str | None:
    """The base64 payload of a ``data:<media_type>;base64,`` URL (None if it is not one)."""
    if not isinstance(uri, str) or media_type is None:
        return None
    prefix = f"data:{media_type};base64,"
    return uri[len(prefix):] if uri.startswith(prefix) else None


def json_arguments(arguments: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as the object providers want, and why that is an approximation (None: exact)."""
    if isinstance(arguments, dict):
        return arguments, None
    if arguments is None:
        return {}, "a tool call needs arguments: written as {}"
    if isinstance(arguments, str):
        try:
            parsed = _json.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed, "the argument string was parsed into an object"
        return {"_raw": arguments}, 'arguments that are not a JSON object are kept as {"_raw": ...}'
    return {"_raw": arguments}, 'arguments that are not a JSON object are kept as {"_raw": ...}'


def string_arguments(arguments: Any) -> tuple[str, str | None]:
    if isinstance(arguments, str):
        return arguments, None
    return _json.dumps(arguments if arguments is not None else {}).decode(), (
        "a tool call needs arguments: written as {}" if arguments is None else None)


def check_type(problems: list[Problem], pointer: str, value: Any, expected: type | tuple[type, ...],
               what: str) -> bool:
    """Append a problem when ``value`` is not of ``expected``; True when it is."""
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return True
    problems.append(Problem(pointer, f"expected {what}"))
    return False


# -- Lowering ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """What a provider format's writer holds, for the shared lowering.

    ``contents`` maps each canonical content class the writer holds to the declared fields
    (wire names, besides ``$type``) and unknown properties it keeps; everything else on
    the record is dropped and reported.  ``fix`` repairs a kept content the way the
    target requires (a generated call id, arguments as an object), reporting what it
    approximates; it may return None to drop it (having reported why).
    """

    name: str
    title: str
    roles: tuple[str, ...]
    nearest_role: Callable[[str | None, bool], str]
    contents: Mapping[type, tuple[frozenset[str], frozenset[str]]]
    message_fields: frozenset[str] = frozenset()
    message_extras: frozenset[str] = frozenset()
    session_extras: frozenset[str] = frozenset()
    fix: Callable[[Recorder, Any, Any, str], Any] | None = None
    # Prefix of unknown property names kept anywhere (provider-namespaced metadata).
    keeps_extras: Callable[[type, str], bool] | None = None
    citations: bool = True
    # The spelling (agentfolio.formats.tools) of the target's ``tools``: tool definitions in
    # another spelling are rewritten in it, and tool catalogs in messages move there.
    tools: str | None = None


@dataclass
class LoweredMessages:
    """Messages of a lowered session, each with whether it stood in a request entry."""

    messages: list[tuple[Message, bool]] = field(default_factory=list)
    session_extras: dict[str, Any] = field(default_factory=dict)
    # Each lowered message's source message and its model pointer, for later losses.
    sources: list[tuple[Message, str]] = field(default_factory=list)
    # Tool descriptions of catalogs taken out of messages (target.tools), with their
    # content and pointer.
    catalog: list[tuple[Any, Any, str]] = field(default_factory=list)

    def approximate(self, rec: Recorder, index: int, key: str | None, what: str, why: str) -> None:
        source, pointer = self.sources[index]
        rec.approximate(source, pointer, key, what, why)

    def drop(self, rec: Recorder, index: int, key: str | None, what: str, why: str) -> None:
        source, pointer = self.sources[index]
        rec.drop(source, pointer, key, what, why)


def lower_messages(session: Session, rec: Recorder, target: Target) -> LoweredMessages:
    """Every message of ``session`` reduced to what ``target`` holds, losses reported."""
    out = LoweredMessages()
    for key, value in session.extra.items():
        if key in target.session_extras or key == FORM_KEY or (
                target.keeps_extras and target.keeps_extras(Session, key)):
            out.session_extras[key] = value
        else:
            rec.drop(session, "", key, f"property {key!r}", f"{target.title} documents have no such property")
    if session.schema_version is not None:
        rec.drop(session, "", "schemaVersion", "schemaVersion", f"{target.title} documents have no version")
    if session.data is not None:
        for key in session.data.extra:
            rec.drop(session.data, "/data", key, f"data property {key!r}", f"{target.title} has no session state")
    for entry_index, entry in enumerate(session.entries):
        pointer = entry_pointer(entry_index)
        if isinstance(entry, OpaqueEntry):
            rec.drop(entry, pointer, None, f"entry of unknown kind {entry.kind!r}", f"{target.title} has no entries")
            continue
        if rec.origin.locates(entry):
            drop_entry_fields(rec, entry, pointer, f"{target.title} has no entries, only messages")
        for index, message in enumerate(entry.items):
            if target.tools and _only_catalogs(rec, message, entry_index, index, out):
                continue
            lowered = _lower_message(rec, target, message, entry_index, index, entry.kind == "request", out)
            if lowered is not None:
                out.messages.append((lowered, entry.kind == "request"))
                out.sources.append((message, message_pointer(entry_index, index)))
    if target.tools:
        from agentfolio.formats.tools import SPELLINGS, lower_tools

        written = lower_tools(rec, session, "tools", "", out.session_extras.get("tools"), SPELLINGS[target.tools],
                              out.catalog)
        if written is None:
            out.session_extras.pop("tools", None)
        else:
            out.session_extras["tools"] = written
    return out


def _only_catalogs(rec: Recorder, message: Message, entry_index: int, index: int, out: LoweredMessages) -> bool:
    """A message that holds only tool catalogs becomes the target's tools, not a message."""
    if not message.items or not all(isinstance(content, ToolCatalogContent) for content in message.items):
        return False
    for position, content in enumerate(message.items):
        assert isinstance(content, ToolCatalogContent)
        where = rec.at(content, content_pointer(entry_index, index, position))
        out.catalog.extend((item, content, where) for item in content.items)
    rec.approximate(message, message_pointer(entry_index, index), None, "message",
                    "it holds only tool definitions: written as the request's tools")
    return True


def _lower_message(rec: Recorder, target: Target, message: Message, entry_index: int, index: int,
                   in_request: bool, out: LoweredMessages) -> Message | None:
    pointer = message_pointer(entry_index, index)
    role = message.role
    if role not in target.roles:
        role = target.nearest_role(role, in_request)
        rec.approximate(message, pointer, "role", f"role {message.role!r}", f"{target.title} roles are "
                        f"{', '.join(target.roles)}: written as {role!r}")
    kept_fields: dict[str, Any] = {}
    for key in set_fields(message, skip=("role", "contents")):
        if key in target.message_fields:
            kept_fields[key] = getattr(message, _attribute(Message, key))
        else:
            rec.drop(message, pointer, key, key, f"a {target.title} message has no such field")
    extras: dict[str, Any] = {}
    for key, value in message.extra.items():
        if key in target.message_extras or key == FORM_KEY or (
                target.keeps_extras and target.keeps_extras(Message, key)):
            extras[key] = value
        else:
            rec.drop(message, pointer, key, f"message property {key!r}", f"a {target.title} message has no such "
                     "property")
    contents = []
    for position, content in enumerate(message.items):
        where = content_pointer(entry_index, index, position)
        if target.tools and isinstance(content, ToolCatalogContent):
            out.catalog.extend((item, content, rec.at(content, where)) for item in content.items)
            rec.approximate(content, where, None, "tool catalog", "written as the request's tools")
            continue
        lowered = lower_content(rec, target, content, where)
        if lowered is not None:
            contents.append(lowered)
    if message.items and not contents:
        rec.drop(message, pointer, None, "message", f"nothing in it has a {target.title} form")
        return None
    built = Message(role=role, contents=tuple(contents),
                    **{_attribute(Message, key): value for key, value in kept_fields.items()})
    return with_extras(built, extras)


def _attribute(cls: type[Record], wire: str) -> str:
    return next(name for name, info in cls.model_fields.items() if (info.alias or name) == wire)


def lower_content(rec: Recorder, target: Target, content: Any, pointer: str) -> Any:
    """One content reduced to a kind ``target`` holds (None: dropped, reported)."""
    if isinstance(content, UnknownContent) and isinstance(content.content, dict) and is_kept_whole(
            target.name, OpaqueContent.model_validate(content.content)):
        return OpaqueContent.model_validate(content.content)  # our own block, back from durable state's unknown
    if isinstance(content, OpaqueContent):
        if is_kept_whole(target.name, content):
            return content
        rec.drop(content, pointer, None, f"content of kind {content.kind!r}", f"{target.title} has no form for it")
        return None
    holds = target.contents.get(type(content))
    if holds is None:
        text = listing_text(content)
        if isinstance(content, ErrorContent):
            text = error_text(content)
        elif isinstance(content, PartContent) and content.encoding in (None, "plain") and content.content is not None:
            text = content.content
        if text is not None and TextContent in target.contents:
            rec.approximate(content, pointer, None, f"{content.kind} content",
                            f"{target.title} has no such kind: written as text")
            return TextContent(text=text)
        rec.drop(content, pointer, None, f"{content.kind} content", f"{target.title} has no place for it")
        return None
    fields, allowed_extras = holds
    data: dict[str, Any] = {}
    for key in set_fields(content, skip=("$type",)):
        if key == "presentation":
            for sub in set_fields(content.presentation):
                rec.drop(content, pointer, f"presentation/{sub}", f"presentation {sub}",
                         f"{target.title} does not record how a content is shown")
        elif key in fields:
            data[_attribute(type(content), key)] = getattr(content, _attribute(type(content), key))
        else:
            rec.drop(content, pointer, key, key, f"a {target.title} {content.kind} content has no such field")
    if "annotations" in data:
        data["annotations"] = _lower_annotations(rec, target, content, pointer, data["annotations"])
        if data["annotations"] is None:
            del data["annotations"]
    extras: dict[str, Any] = {}
    for key, value in content.extra.items():
        if key in allowed_extras or key == FORM_KEY or (
                target.keeps_extras and target.keeps_extras(type(content), key)):
            extras[key] = value
        else:
            rec.drop(content, pointer, key, f"property {key!r}",
                     f"{target.title} has no such property on a {content.kind} content")
    lowered = build(type(content), extras, **data)
    if target.fix is not None:
        lowered = target.fix(rec, content, lowered, pointer)
    return lowered


def _lower_annotations(rec: Recorder, target: Target, content: Any, pointer: str,
                       annotations: Iterable[Any] | None) -> tuple[Any, ...] | None:
    if annotations is None:
        return None
    if not target.citations:
        rec.drop(content, pointer, "annotations", "citations", f"{target.title} text has no citations")
        return None
    kept = []
    for index, annotation in enumerate(annotations):
        if isinstance(annotation, Citation):
            kept.append(annotation)
        else:
            rec.drop(content, pointer, f"annotations/{index}", f"annotation of kind {annotation.kind!r}",
                     f"{target.title} keeps citations only")
    return tuple(kept)


def call_names(session: Session) -> dict[str, str]:
    """Tool names by call id, for targets whose results name their tool."""
    names: dict[str, str] = {}
    for _, message in session.messages():
        for content in message.items:
            if isinstance(content, FunctionCallContent) and content.call_id and content.name:
                names.setdefault(content.call_id, content.name)
    return names
