"""Checking and compiling the JSON Schemas span types declare, with jsonschema-rs.

A span type's ``params_schema`` / ``result_schema`` is reported valid when it

1. is an object (or a boolean schema),
2. names no ``$schema`` other than a draft jsonschema-rs ships (4, 6, 7, 2019-09,
   2020-12), since an unknown meta-schema would otherwise be fetched over the network,
3. passes its draft's meta-schema (``jsonschema_rs.meta``), and
4. compiles: every ``$ref`` resolves locally and every ``pattern`` is a regex.  Remote
   references are never fetched (``offline=True``); they are reported instead.

Compiled validators are cached by the schema's canonical JSON, so a schema version's
validators are built once however many spans are checked against it, and identical
schemas shared between versions compile once too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema_rs
import orjson

from agentfolio import _json

KNOWN_META_SCHEMAS = frozenset({
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
})
MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """The API's ``SchemaValidationResult``: ``{"status": "success"|"error", "message"}``."""

    status: Literal["success", "error"]
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message}


def canonical_bytes(value: Any) -> bytes:
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def _normalise_meta_uri(uri: str) -> str:
    uri = uri.strip()
    if uri.endswith("#"):
        uri = uri[:-1]
    if uri.startswith("https://json-schema.org/draft-0"):
        uri = "http://" + uri[len("https://"):]
    return uri


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), text.strip())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


def _location(path: Any) -> str:
    steps = list(path or ())
    if not steps:
        return ""
    pointer = "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)
    return f" at {pointer}"


def check_schema(schema: object) -> SchemaCheck:
    """Whether ``schema`` is a usable JSON Schema, with the reason when it is not."""
    if isinstance(schema, bool):
        return SchemaCheck("success")
    if not isinstance(schema, dict):
        return SchemaCheck("error", f"a JSON Schema must be an object, found {json_type(schema)}")
    declared = schema.get("$schema")
    if declared is not None:
        if not isinstance(declared, str):
            return SchemaCheck("error", f"$schema must be a string, found {json_type(declared)}")
        if _normalise_meta_uri(declared) not in KNOWN_META_SCHEMAS:
            return SchemaCheck("error", f"unsupported $schema {declared!r}: use draft 4, 6, 7, 2019-09 or 2020-12 "
                                        "(remote meta-schemas are not fetched)")
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as error:
        return SchemaCheck("error", f"not a valid JSON Schema{_location(error.instance_path)}: "
                                    f"{_explain_meta_error(error)}")
    except jsonschema_rs.ReferencingError as error:
        return SchemaCheck("error", f"not a valid JSON Schema: {_first_line(str(error))}")
    try:
        compile_schema(schema)
    except SchemaCompileError as error:
        return SchemaCheck("error", str(error))
    return SchemaCheck("success")


JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


def _explain_meta_error(error: Any) -> str:
    path = list(error.instance_path or ())
    value = error.instance
    if path and path[-1] == "type" and isinstance(value, str) and value not in JSON_TYPES:
        return f"{value!r} is not a JSON type (expected one of {', '.join(JSON_TYPES)})"
    return _first_line(error.message)


class SchemaCompileError(ValueError):
    pass


class _ValidatorCache:
    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[bytes, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, schema: Any) -> Any:
        key = canonical_bytes(schema)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        validator = _compile_uncached(schema)
        with self._lock:
            self._items[key] = validator
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return validator

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _compile_uncached(schema: Any) -> Any:
    try:
        return jsonschema_rs.validator_for(schema, offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError) as error:
        raise SchemaCompileError(f"schema does not compile: {_first_line(str(error))}") from None
    except (ValueError, TypeError) as error:
        raise SchemaCompileError(f"schema does not compile: {_first_line(str(error))}") from None


VALIDATORS = _ValidatorCache(size=8192)


def compile_schema(schema: Any) -> Any:
    """A compiled jsonschema-rs validator (cached); :class:`SchemaCompileError` if it cannot be built."""
    return VALIDATORS.get(schema)


def json_type(value: object) -> str:
    """A JSON value's type for messages: ``null``, ``a boolean``, ``an object``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
