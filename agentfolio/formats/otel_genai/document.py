"""The attributes document: validated against the published schemas, read into a session
and written back, JSON text in the spelling it came in."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

import jsonschema_rs
import orjson

from agentfolio import _json
from agentfolio.formats import tools as tool_spellings
from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, Problem, json_pointer, validated
from agentfolio.formats.losses import ConvertOptions, Origin, entry_pointer, with_extras
from agentfolio.formats.otel_genai.parts import read_messages, read_parts, write_message, write_parts
from agentfolio.formats.otel_genai.spec import (
    INPUT,
    INPUT_TOKENS,
    KEYS,
    NAME,
    OUTPUT,
    OUTPUT_FORM,
    OUTPUT_TOKENS,
    ROLES,
    SCHEMAS,
    SYSTEM,
    SYSTEM_FORM,
    TEXT_SPELLINGS,
    TOOLS,
)
from agentfolio.formats.provider import FORM_KEY, build, extras_without_form, form, rest
from agentfolio.formats.schema_check import bundled_schema, check, validator_of
from agentfolio.formats.shared import group_by_role
from agentfolio.model import (
    Content,
    Message,
    ResponseEntry,
    Session,
    SessionData,
    ToolCatalogContent,
    ToolDescription,
    Usage,
)

__all__ = ["catalog_of", "looks_like", "own_form", "read", "validate", "write"]


def looks_like(document: Any) -> bool:
    return isinstance(document, dict) and any(key in document for key in (SYSTEM, INPUT, OUTPUT))


# -- validation ---------------------------------------------------------------------------

def _value(document: dict[str, Any], key: str, problems: list[Problem] | None = None) -> Any:
    """An attribute's value, parsed when it is JSON text (None with a problem if it is not JSON)."""
    value = document[key]
    if isinstance(value, str):
        try:
            return _json.loads(value)
        except orjson.JSONDecodeError as error:
            if problems is not None:
                problems.append(Problem(f"/{key}", f"not JSON text: {error}"))
            return None
    return value


def validate(document: Any) -> list[Problem]:
    """Each GenAI attribute against its published JSON Schema, and each part or tool
    definition of a known ``type`` against that type's own definition: the schemas also let
    any item through as a generic one, so a ``text`` part without text would otherwise
    pass, and a broken one would only be "not valid under any of the schemas"."""
    if not isinstance(document, dict):
        return [Problem("", "expected an object of OpenTelemetry GenAI attributes")]
    problems: list[Problem] = []
    for key in document:
        if key in (INPUT_TOKENS, OUTPUT_TOKENS) and (not isinstance(document[key], int) or isinstance(
                document[key], bool)):
            problems.append(Problem(f"/{key}", "expected an integer"))
        if key not in SCHEMAS:
            continue
        value = _value(document, key, problems)
        if value is None and isinstance(document[key], str):
            continue
        specific = _typed_item_problems(key, value) if isinstance(value, list) else []
        explained = {problem.pointer.rsplit("/", 1)[0] for problem in specific} | {
            problem.pointer for problem in specific}
        for problem in check(SCHEMAS[key], value):
            pointer = f"/{key}{problem.pointer}"
            if not (pointer in explained and "anyOf" in problem.message):
                problems.append(Problem(pointer, problem.message))
        problems.extend(specific)
    return problems


def _typed_item_problems(key: str, value: list[Any]) -> list[Problem]:
    validators = _part_validators(SCHEMAS[key])
    groups: Iterable[tuple[str, Any]] = ((f"/{key}", value),) if key in (SYSTEM, TOOLS) else (
        (f"/{key}/{index}/parts", message.get("parts")) for index, message in enumerate(value)
        if isinstance(message, dict))
    what = "tool definition" if key == TOOLS else "part"
    problems: list[Problem] = []
    for base, items in groups:
        for index, item in enumerate(items if isinstance(items, list) else ()):
            kind = item.get("type") if isinstance(item, dict) else None
            validator = validators.get(kind) if isinstance(kind, str) else None
            if validator is not None:
                problems.extend(Problem(base + json_pointer([index, *error.instance_path]),
                                        f"a {kind!r} {what}: {_error_message(error)}")
                                for error in validator.iter_errors(item))
    return problems


def _error_message(error: Any) -> str:
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        return f"missing required property {kind.property!r}"
    return str(error.message)


@cache
def _part_validators(file_name: str) -> dict[str, Any]:
    """``type`` → a validator of that part's own definition, from the schema itself."""
    schema = bundled_schema(file_name)
    validators = {}
    for name, definition in schema.get("$defs", {}).items():
        constant = definition.get("properties", {}).get("type", {}).get("const")
        if isinstance(constant, str):
            validators[constant] = validator_of(file_name, {"$defs": schema["$defs"], "$ref": f"#/$defs/{name}"})
    return validators


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    if not isinstance(document, dict):
        raise FormatError("expected an object of OpenTelemetry GenAI attributes", source=source, pointer="")
    origin = Origin()
    notes: list[Problem] = []
    texts: dict[str, str] = {}
    orders: dict[str, dict[str, list[str]]] = {}
    values: dict[str, Any] = {}
    extras = {key: value for key, value in document.items() if key not in KEYS}
    for key in (key for key in KEYS if key in document):
        value = _value(document, key)
        raw = document[key]
        if isinstance(raw, str) and value is not None:
            texts[key] = _text_spelling(raw, value)
            orders[key] = _key_orders(value)
        if not isinstance(value, list) or (key == TOOLS and catalog_of(value) is None):
            extras[key] = raw  # not readable as what the conventions say it is: kept as read
            texts.pop(key, None)
            orders.pop(key, None)
        else:
            values[key] = value
    system: list[Content] = []
    if SYSTEM in values:
        system.extend(read_parts(values[SYSTEM], f"/{SYSTEM}", origin))
    if TOOLS in values:
        catalog = ToolCatalogContent(items=tuple(catalog_of(values[TOOLS]) or ()))
        origin.add(catalog, f"/{TOOLS}", {"items": ()})
        system.append(catalog)
    messages: list[Message] = []
    if SYSTEM in values or TOOLS in values:
        opening = with_extras(Message(role="system", contents=tuple(system)), {FORM_KEY: SYSTEM_FORM})
        origin.add(opening, f"/{SYSTEM}" if SYSTEM in values else f"/{TOOLS}")
        messages.append(opening)
    messages.extend(read_messages(values.get(INPUT, ()), f"/{INPUT}", origin))
    entries: list[Any] = group_by_role(messages, ROLES, frozenset({"system", "user"}))
    if OUTPUT in values:
        usage = _usage(extras)
        output = build(ResponseEntry, {FORM_KEY: OUTPUT_FORM},
                       messages=tuple(read_messages(values[OUTPUT], f"/{OUTPUT}", origin)),
                       **({"usage": usage} if usage is not None else {}))
        assert output is not None
        origin.add(output, f"/{OUTPUT}")
        if usage is not None:
            origin.add(usage, "", {"inputTokenCount": (INPUT_TOKENS,), "outputTokenCount": (OUTPUT_TOKENS,)})
        entries.append(output)
    extras[FORM_KEY] = {NAME: {"keys": list(values), **({"text": texts, "order": orders} if texts else {})}}
    session = with_extras(Session(data=SessionData(conversation_history=tuple(entries))), extras)
    origin.add(session, "")
    if texts:
        written = write(session)
        notes.extend(Problem(f"/{key}", "JSON text that agentfolio writes back spelled differently (key order or "
                             "spacing), with the same value") for key in texts if written.get(key) != document[key])
    return ReadResult(session=session, format=NAME, version=None, problems=problems, notes=notes, origin=origin)


def _key_orders(value: list[Any]) -> dict[str, list[str]]:
    """The order an emitter wrote the keys of messages and of each part type in, so JSON
    text is written back as read (instrumentations disagree: OpenTelemetry's util-genai
    writes a part's ``type`` last, Agent Framework first)."""
    orders: dict[str, list[str]] = {}
    for item in value:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("parts"), list):
            _merge_order(orders.setdefault("message", []), list(item))
            parts: list[Any] = item["parts"]
        else:
            parts = [item]
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("type"), str):
                _merge_order(orders.setdefault(part["type"], []), list(part))
    return orders


def _merge_order(order: list[str], keys: list[str]) -> None:
    """Add the keys first seen in ``keys`` to ``order``, each after the key it follows
    there (an emitter that leaves optional keys out still has one order)."""
    for position, key in enumerate(keys):
        if key not in order:
            before = keys[position - 1] if position else None
            order.insert(order.index(before) + 1 if before in order else 0, key)


def _reordered(value: Any, orders: dict[str, list[str]]) -> Any:
    """``value`` with each message's and part's keys in the order ``orders`` remembers."""
    if not orders or not isinstance(value, list):
        return value

    def ordered(item: Any, kind: Any) -> Any:
        template = orders.get(kind) if isinstance(kind, str) else None
        if not isinstance(item, dict) or not template:
            return item
        return {**{key: item[key] for key in template if key in item}, **item}

    out = []
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("parts"), list):
            item = {**item, "parts": [ordered(part, part.get("type")) if isinstance(part, dict) else part
                                      for part in item["parts"]]}
            out.append(ordered(item, "message"))
        else:
            out.append(ordered(item, item.get("type") if isinstance(item, dict) else None))
    return out


def _text_spelling(raw: str, value: Any) -> str:
    for name, spell in TEXT_SPELLINGS.items():
        try:
            if spell(value) == raw:
                return name
        except (TypeError, ValueError):
            break
    return "json"


def _usage(extras: dict[str, Any]) -> Usage | None:
    counts = {key: extras[key] for key in (INPUT_TOKENS, OUTPUT_TOKENS)
              if isinstance(extras.get(key), int) and not isinstance(extras[key], bool)}
    if not counts:
        return None
    for key in counts:
        del extras[key]
    return Usage(**({"input_token_count": counts[INPUT_TOKENS]} if INPUT_TOKENS in counts else {}),
                 **({"output_token_count": counts[OUTPUT_TOKENS]} if OUTPUT_TOKENS in counts else {}))


def catalog_of(value: list[Any]) -> list[ToolDescription] | None:
    """Tool definitions as canonical tools; None when one has no name (kept as read instead)."""
    found = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(
                item.get("type"), str):
            return None
        if item["type"] == "function":
            read_tools = tool_spellings.SPELLINGS[NAME].read(item)
            if read_tools is None:
                return None
            found.extend(read_tools)
        else:  # a generic definition: its type and the rest ride along
            description = item.get("description")
            form_value = {} if isinstance(description, str) else {FORM_KEY: tool_spellings.NO_DESCRIPTION} if (
                "description" not in item) else {FORM_KEY: tool_spellings.NULL_DESCRIPTION} if description is None \
                else None
            tool = build(ToolDescription, {**rest(item, "name", "description"), **form_value},
                         name=item["name"], description=description if isinstance(description, str) else "") \
                if form_value is not None else None
            if tool is None:
                return None
            found.append(tool)
    return found


# -- writing ------------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session as GenAI attributes (FormatError for a content with no GenAI form:
    convert the session, which reports what it drops)."""
    own = own_form(session)
    layout = _layout(session, marked=own is not None)
    keys = list(own.get("keys", [])) if isinstance(own, dict) else []
    texts = own.get("text", {}) if isinstance(own, dict) else {}
    orders = own.get("order", {}) if isinstance(own, dict) else {}
    document: dict[str, Any] = {}
    values: dict[str, Any] = {}
    if layout.system or SYSTEM in keys:
        values[SYSTEM] = write_parts(layout.system, f"/{SYSTEM}")
    if layout.tools is not None:
        values[TOOLS] = layout.tools
    values[INPUT] = [write_message(message, f"/{INPUT}/{index}", output=False)
                     for index, message in enumerate(layout.input)]
    if layout.output is not None:
        values[OUTPUT] = [write_message(message, f"/{OUTPUT}/{index}", output=True)
                          for index, message in enumerate(layout.output.items)]
    if keys and INPUT not in keys and not layout.input:
        del values[INPUT]
    for key in KEYS:
        if key in values:
            spelling = texts.get(key) if isinstance(texts, dict) else None
            if isinstance(spelling, str):
                order = orders.get(key) if isinstance(orders, dict) else None
                document[key] = _spell(_reordered(values[key], order if isinstance(order, dict) else {}), spelling)
            else:
                document[key] = values[key]
    usage = layout.output.usage if layout.output is not None else None
    if usage is not None:
        if usage.input_token_count is not None:
            document[INPUT_TOKENS] = usage.input_token_count
        if usage.output_token_count is not None:
            document[OUTPUT_TOKENS] = usage.output_token_count
    for key, value in session.extra.items():
        if key != FORM_KEY:
            document.setdefault(key, value)
    return document


def _spell(value: Any, spelling: str) -> str:
    return TEXT_SPELLINGS.get(spelling, TEXT_SPELLINGS["compact"])(value)


class _Layout:
    """Where each message of a session goes: system instructions and tool definitions,
    input messages, and the output entry."""

    def __init__(self) -> None:
        self.system: list[Any] = []
        self.tools: list[Any] | None = None
        self.input: list[Message] = []
        self.output: Any = None


def _layout(session: Session, *, marked: bool) -> _Layout:
    """``marked``: the session says which entry is the output (one read from GenAI
    attributes, or lowered to them); else the last entry is, if it is a response."""
    layout = _Layout()
    entries = session.entries
    marked = marked or any(form(entry) == OUTPUT_FORM for entry in entries)
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        if not hasattr(entry, "messages"):
            raise FormatError(f"an entry of kind {entry.kind!r} has no OpenTelemetry GenAI form; convert the session",
                              pointer=entry_pointer(index))
        is_output = form(entry) == OUTPUT_FORM if marked else (index == last and isinstance(entry, ResponseEntry))
        if is_output and layout.output is None:
            layout.output = entry
            continue
        for message in entry.items:
            if form(message) == SYSTEM_FORM:
                for content in message.items:
                    if isinstance(content, ToolCatalogContent):
                        layout.tools = (layout.tools or []) + [_write_tool(item) for item in content.items]
                    else:
                        layout.system.append(content)
            else:
                layout.input.append(message)
    return layout


def _write_tool(tool: ToolDescription) -> dict[str, Any]:
    extra = extras_without_form(tool)
    if extra.get("type", "function") == "function":
        return tool_spellings.SPELLINGS[NAME].write(tool)
    return {"type": extra.pop("type"), "name": tool.name, **tool_spellings.description_of(tool), **extra}


def own_form(session: Session) -> dict[str, Any] | None:
    """What a session read from GenAI attributes remembers of how they were spelled."""
    value = session.extra.get(FORM_KEY)
    own = value.get(NAME) if isinstance(value, dict) else None
    return own if isinstance(own, dict) else None
