"""Tool definitions — the tools a model was offered — in every spelling agentfolio reads.

One canonical form, :class:`~agentfolio.model.ToolDescription` (name, description, the
parameters' JSON Schema), and one :class:`Spelling` per provider:

==================  ======================================================================
spelling            one function tool
==================  ======================================================================
``openai-chat``     ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}``
``openai-responses``  ``{"type": "function", "name", "description", "parameters", "strict"}``
``anthropic``       ``{"name", "description", "input_schema", "cache_control"}`` (``type`` ``custom``)
``gemini``          a Tool ``{"functionDeclarations": [{"name", "description", "parameters" |
                    "parametersJsonSchema"}]}`` (or snake_case) holds several
``otel-genai``      ``{"type": "function", "name", "description", "parameters"}``
==================  ======================================================================

A tool that is not a function (OpenAI's ``web_search``, Anthropic's server tools,
Gemini's ``googleSearch`` / ``codeExecution``, GenAI's generic definitions) has no
canonical form: it is carried to its own spelling as read and reported as dropped
elsewhere.  :func:`lower_tools` is the one conversion every target uses: tools already in
the target's spelling are kept as they are; others are read into the canonical form and
written in the target's, each property the target has no place for reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentfolio.formats.losses import FORM_KEY, Loss, Recorder, with_extras
from agentfolio.formats.provider import build
from agentfolio.model import ToolDescription

__all__ = ["SPELLINGS", "Spelling", "description_of", "forms", "function_tools", "lower_tools", "read_any",
           "spelling_of"]

#: Forms a tool description remembers (see agentfolio.formats.provider.FORM_KEY): read with
#: no description of its own (written back without one); parameters read from Gemini's
#: OpenAPI schema (written elsewhere as JSON Schema, approximated).
NO_DESCRIPTION = "no-description"
NULL_DESCRIPTION = "null-description"
OPENAPI_SCHEMA = "openapi-schema"


@dataclass(frozen=True)
class Spelling:
    """How one provider spells a list of tool definitions."""

    name: str
    title: str
    #: Whether one item of a ``tools`` list is in this spelling.
    recognises: Callable[[Any], bool]
    #: The function tools of one item (None: the item is not a function tool).
    read: Callable[[dict[str, Any]], list[ToolDescription] | None]
    #: One canonical tool as an item of this spelling.
    write: Callable[[ToolDescription], dict[str, Any]]
    #: Properties of a tool this spelling keeps beside name, description and schema.
    extras: frozenset[str]
    #: Whether a tool needs a parameters schema (written as an empty object schema if none).
    needs_schema: bool = False
    #: Properties a tool of this spelling must have, with the value written when the source
    #: has none (the provider's own default).
    required: Mapping[str, Any] = field(default_factory=dict)


def _described(name: str, description: Any, schema: Any, has_schema: bool, extras: Mapping[str, Any],
               *forms: str, has_description: bool = True) -> ToolDescription | None:
    """A canonical tool, or None when a property is named like one of its own fields."""
    known: dict[str, Any] = {"name": name, "description": description if isinstance(description, str) else ""}
    if has_schema:
        known["json_schema"] = schema
    extra = dict(extras)
    given = [*forms, *(() if isinstance(description, str) else (
        NULL_DESCRIPTION if description is None and has_description else NO_DESCRIPTION,))]
    if given:
        extra[FORM_KEY] = " ".join(given)
    return build(ToolDescription, extra, **known)


def forms(tool: ToolDescription) -> set[str]:
    value = tool.extra.get(FORM_KEY)
    return set(value.split()) if isinstance(value, str) else set()


def _one(tool: ToolDescription | None) -> list[ToolDescription] | None:
    return None if tool is None else [tool]


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _without(item: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in keys}


def description_of(tool: ToolDescription) -> dict[str, Any]:
    """The description as a tool of any spelling writes it: absent, null, or the text."""
    given = forms(tool)
    if NO_DESCRIPTION in given:
        return {}
    return {"description": None if NULL_DESCRIPTION in given else tool.description}


def _schema(tool: ToolDescription, key: str) -> dict[str, Any]:
    return {key: tool.json_schema} if "json_schema" in tool.model_fields_set else {}


def _extras(tool: ToolDescription) -> dict[str, Any]:
    return {k: v for k, v in tool.extra.items() if k != FORM_KEY}


# -- OpenAI Chat Completions ---------------------------------------------------------------

def _chat_recognises(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("function"), dict) and item.get("type", "function") in (
        "function",)


def _chat_read(item: dict[str, Any]) -> list[ToolDescription] | None:
    function = item.get("function")
    if not isinstance(function, dict) or not _text(function.get("name")):
        return None
    return _one(_described(function["name"], function.get("description"), function.get("parameters"),
                           "parameters" in function, _without(function, "name", "description", "parameters"),
                           has_description="description" in function))


def _chat_write(tool: ToolDescription) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name, **description_of(tool),
                                             **_schema(tool, "parameters"), **_extras(tool)}}


# -- OpenAI Responses ---------------------------------------------------------------------

def _flat_function(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "function" and _text(item.get("name")) and (
        "function" not in item)


def _flat_read(item: dict[str, Any]) -> list[ToolDescription] | None:
    if not _flat_function(item):
        return None
    return _one(_described(item["name"], item.get("description"), item.get("parameters"), "parameters" in item,
                           _without(item, "type", "name", "description", "parameters"),
                           has_description="description" in item))


def _flat_write(tool: ToolDescription) -> dict[str, Any]:
    return {"type": "function", "name": tool.name, **description_of(tool), **_schema(tool, "parameters"),
            **_extras(tool)}


def _responses_write(tool: ToolDescription) -> dict[str, Any]:
    # The Responses API names a function tool's parameters even when there are none (null).
    return {"type": "function", "name": tool.name, **description_of(tool),
            "parameters": tool.json_schema if "json_schema" in tool.model_fields_set else None, **_extras(tool)}


def _responses_recognises(item: Any) -> bool:
    # Function tools, and OpenAI's built-in tools (``{"type": "web_search"}``...): a type, no name.
    return _flat_function(item) or (isinstance(item, dict) and _text(item.get("type")) and "name" not in item
                                    and "function" not in item and "input_schema" not in item)


# -- Anthropic ------------------------------------------------------------------------------

# Anthropic's server and client tools are versioned types (web_search_20250305, bash_20250124).
_VERSIONED = re.compile(r"[a-z_]+_\d{8}")


def _anthropic_recognises(item: Any) -> bool:
    if not isinstance(item, dict) or not _text(item.get("name")) or "function" in item:
        return False
    kind = item.get("type")
    return "input_schema" in item or kind == "custom" or (isinstance(kind, str) and bool(_VERSIONED.fullmatch(kind)))


def _anthropic_read(item: dict[str, Any]) -> list[ToolDescription] | None:
    if "input_schema" not in item or item.get("type", "custom") != "custom":
        return None
    return _one(_described(item["name"], item.get("description"), item.get("input_schema"), True,
                           _without(item, "name", "description", "input_schema"),
                           has_description="description" in item))


def _anthropic_write(tool: ToolDescription) -> dict[str, Any]:
    return {"name": tool.name, **description_of(tool), "input_schema": tool.json_schema, **_extras(tool)}


# -- Gemini ---------------------------------------------------------------------------------

_DECLARATIONS = ("functionDeclarations", "function_declarations")


def _gemini_recognises(item: Any) -> bool:
    return isinstance(item, dict) and "type" not in item and "name" not in item and bool(item) and all(
        isinstance(key, str) and key[:1].islower() for key in item)


def _gemini_read(item: dict[str, Any]) -> list[ToolDescription] | None:
    declarations = next((item[key] for key in _DECLARATIONS if isinstance(item.get(key), list)), None)
    if declarations is None or len(item) != 1:
        return None
    found = []
    for declaration in declarations:
        if not isinstance(declaration, dict) or not _text(declaration.get("name")):
            return None
        schema_key = next((k for k in ("parametersJsonSchema", "parameters_json_schema") if k in declaration), None)
        if schema_key is not None:
            tool = _described(declaration["name"], declaration.get("description"), declaration[schema_key], True,
                              _without(declaration, "name", "description", schema_key),
                              has_description="description" in declaration)
        else:
            tool = _described(declaration["name"], declaration.get("description"),
                              json_schema_of_openapi(declaration.get("parameters")), "parameters" in declaration,
                              _without(declaration, "name", "description", "parameters"),
                              *((OPENAPI_SCHEMA,) if "parameters" in declaration else ()),
                              has_description="description" in declaration)
        if tool is None:
            return None
        found.append(tool)
    return found


def _gemini_write(tool: ToolDescription) -> dict[str, Any]:
    # One declaration; lower_tools gathers a list's declarations into one Tool.
    return {"name": tool.name, **description_of(tool), **_schema(tool, "parametersJsonSchema"), **_extras(tool)}


def json_schema_of_openapi(schema: Any) -> Any:
    """Gemini's OpenAPI-subset schema as JSON Schema: its upper-case type names
    (``OBJECT``, ``STRING``) lower-cased, at every level."""
    if isinstance(schema, dict):
        out = {k: json_schema_of_openapi(v) for k, v in schema.items()}
        if isinstance(schema.get("type"), str):
            out["type"] = schema["type"].lower()
        return out
    if isinstance(schema, list):
        return [json_schema_of_openapi(v) for v in schema]
    return schema


# -- OpenTelemetry GenAI ----------------------------------------------------------------------

def _otel_recognises(item: Any) -> bool:
    return isinstance(item, dict) and _text(item.get("type")) and _text(item.get("name")) and "function" not in item \
        and "input_schema" not in item


def _otel_read(item: dict[str, Any]) -> list[ToolDescription] | None:
    if item.get("type") != "function" or not _text(item.get("name")):
        return None
    return _one(_described(item["name"], item.get("description"), item.get("parameters"), "parameters" in item,
                           _without(item, "type", "name", "description", "parameters"),
                           has_description="description" in item))


SPELLINGS: dict[str, Spelling] = {spelling.name: spelling for spelling in (
    Spelling("openai-chat", "OpenAI Chat Completions", _chat_recognises, _chat_read, _chat_write,
             frozenset({"strict"})),
    Spelling("openai-responses", "OpenAI Responses", _responses_recognises, _flat_read, _responses_write,
             frozenset({"strict"}), required={"strict": None}),
    Spelling("anthropic", "Anthropic Messages", _anthropic_recognises, _anthropic_read, _anthropic_write,
             frozenset({"cache_control", "type"}), needs_schema=True),
    Spelling("gemini", "Gemini", _gemini_recognises, _gemini_read, _gemini_write, frozenset({"response"})),
    Spelling("otel-genai", "OpenTelemetry GenAI", _otel_recognises, _otel_read, _flat_write, frozenset()),
)}


def spelling_of(item: Any) -> Spelling | None:
    """The spelling one tools-list item is in (None: none we know)."""
    return next((spelling for spelling in SPELLINGS.values() if spelling.recognises(item)), None)


def read_any(item: Any) -> list[ToolDescription] | None:
    """The function tools of one item in any spelling (None: not a function tool we know)."""
    spelling = spelling_of(item)
    return spelling.read(item) if spelling is not None else None


def function_tools(items: Iterable[Any]) -> list[ToolDescription]:
    """Every function tool in a list of items of any spelling; other items are skipped."""
    found: list[ToolDescription] = []
    for item in items:
        found.extend(read_any(item) or ())
    return found


def lower_tools(rec: Recorder, record: Any, key: str, pointer: str, items: Any, target: Spelling,
                catalog: Iterable[tuple[ToolDescription, Any, str]] = ()) -> list[Any] | None:
    """``items`` (a ``tools`` list of any spelling, found at ``record``'s ``key``) and the
    tools of ``catalog`` (canonical descriptions, each with the record and pointer it came
    from) as one list in ``target``'s spelling; what it cannot carry is reported."""
    written: list[Any] = []
    declarations: list[dict[str, Any]] = []
    catalog = list(catalog)
    if isinstance(items, list):
        if all(spelling_of(item) is target for item in items) and not catalog:
            return items  # already the target's own: kept as read
        base = rec.at(record, pointer, key)
        for index, item in enumerate(items):
            where = f"{base}/{index}"
            spelling = spelling_of(item)
            if spelling is target:
                written.append(item)
                continue
            tools = spelling.read(item) if spelling is not None else None
            if tools is None:
                what = (item.get("type") or item.get("name") or next(iter(item), None)) if isinstance(
                    item, dict) else None
                rec.losses.append(Loss(where, f"tool {what!r}" if isinstance(what, str) else "tool",
                                       f"a built-in or unknown tool has no {target.title} form"))
                continue
            for tool in tools:
                _write_one(rec, _At(where), tool, target, written, declarations)
    elif items is not None:
        rec.drop(record, pointer, key, "tools", "expected a list of tool definitions")
    for tool, source, source_pointer in catalog:
        at = _At(rec.at(source, source_pointer))
        kind = tool.extra.get("type")
        if kind not in (None, "function", "custom"):
            at.loss(rec, None, f"tool {tool.name!r}", f"a {kind!r} tool has no {target.title} form",
                    approximated=False)
            continue
        _write_one(rec, at, tool, target, written, declarations)
    if declarations:
        written.append({"functionDeclarations": declarations})
    return written or None


@dataclass(frozen=True)
class _At:
    """Where in the source a tool stood, for its losses."""

    pointer: str

    def loss(self, rec: Recorder, key: str | None, what: str, why: str, *, approximated: bool) -> None:
        rec.losses.append(Loss(self.pointer + (f"/{key}" if key else ""), what, why, approximated))


def _write_one(rec: Recorder, at: _At, tool: ToolDescription, target: Spelling, written: list[Any],
               declarations: list[dict[str, Any]]) -> None:
    kept: dict[str, Any] = {}
    for name, value in tool.extra.items():
        if name == FORM_KEY:
            description = forms(tool) & {NO_DESCRIPTION, NULL_DESCRIPTION}
            if description:
                kept[name] = " ".join(description)
        elif name in target.extras:
            kept[name] = value
        elif name == "type" and value in ("function", "custom"):
            continue  # what every spelling's function tool is
        else:
            at.loss(rec, name.replace("~", "~0").replace("/", "~1"), f"tool property {name!r}",
                    f"a {target.title} tool has no such property", approximated=False)
    schema: dict[str, Any] = {"json_schema": tool.json_schema} if "json_schema" in tool.model_fields_set else {}
    if schema.get("json_schema") is None and target.needs_schema:  # absent, or null as Responses may write it
        schema = {"json_schema": {"type": "object"}}
        at.loss(rec, None, f"tool {tool.name!r} parameters", f"a {target.title} tool needs a parameters schema: "
                "written as an empty object schema", approximated=True)
    if tool.parameters is not None and "json_schema" not in tool.model_fields_set:
        at.loss(rec, None, f"tool {tool.name!r} parameters line", f"a {target.title} tool has a parameters "
                "schema, not a line of text", approximated=False)
    for name, default in target.required.items():
        if name not in kept:
            kept[name] = default
            at.loss(rec, None, f"tool {tool.name!r} {name}", f"a {target.title} tool states it: written as "
                    f"{default!r}, the provider's default", approximated=True)
    if OPENAPI_SCHEMA in forms(tool) and target.name != "gemini":
        at.loss(rec, None, f"tool {tool.name!r} parameters", "Gemini's OpenAPI schema is written as JSON Schema "
                "(type names lower-cased)", approximated=True)
    one = target.write(with_extras(ToolDescription(name=tool.name, description=tool.description, **schema), kept))
    (declarations if target.name == "gemini" else written).append(one)
