"""JSON Schema validation with jsonschema-rs, reported as Problems at JSON pointers.

Schemas are compiled once per process.  A ``oneOf`` over tagged variants (durable
state's contents on ``$type``, envelope segments on ``kind``) fails with a useless
"not valid under any of the schemas"; we name the variant the tag picked and report
that variant's own errors, or say that the tag is unknown and which tags exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from agentfolio import _json
from agentfolio.formats.errors import Problem, json_pointer

TAG_KEYS = ("$type", "kind")


@cache
def bundled_schema(file_name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``agentfolio/formats/schemas``."""
    schema = _json.loads(resources.files("agentfolio.formats").joinpath("schemas", file_name).read_bytes())
    if not isinstance(schema, dict):
        raise TypeError(f"bundled schema {file_name} is not a JSON object")
    return schema


# Bundled schemas another bundled schema refers to by ``$id``: validation never fetches.
_REFERENCED: dict[str, tuple[str, ...]] = {"otel-genai-tool-definitions.json": ("json-schema-draft-07.json",)}


def validator_of(file_name: str, schema: Any) -> Any:
    """A validator of ``schema`` (a bundled schema, or a part of it), with the bundled
    schemas that bundled file refers to resolvable."""
    referenced = _REFERENCED.get(file_name, ())
    if not referenced:
        return jsonschema_rs.validator_for(schema)
    registry = jsonschema_rs.Registry([(bundled_schema(name)["$id"], bundled_schema(name)) for name in referenced])
    return jsonschema_rs.validator_for(schema, registry=registry)


@cache
def compiled_validator(file_name: str) -> Any:
    return validator_of(file_name, bundled_schema(file_name))


def check(file_name: str, document: Any, *, limit: int = 1000) -> list[Problem]:
    """Every violation of a bundled schema, at most ``limit`` of them, in document order."""
    validator = compiled_validator(file_name)
    if validator.is_valid(document):
        return []
    problems: list[Problem] = []
    schema = bundled_schema(file_name)
    for error in validator.iter_errors(document):
        problems.extend(_explain(schema, error, list(error.instance_path)))
        if len(problems) >= limit:
            break
    return problems[:limit]


def _explain(schema: dict[str, Any], error: Any, path: list[str | int]) -> Iterator[Problem]:
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.OneOfNotValid):
        yield from _explain_tagged_union(schema, error, path)
        return
    yield Problem(json_pointer(path), _message(error))


def _explain_tagged_union(schema: dict[str, Any], error: Any, path: list[str | int]) -> Iterator[Problem]:
    instance = error.instance
    pointer = json_pointer(path)
    variants = _tagged_variants(schema, tuple(error.schema_path))
    if not variants:
        yield Problem(pointer, error.message)
        return
    tag_key = next(iter(variants.values()))[0]
    expected = ", ".join(sorted(variants))
    if not isinstance(instance, dict):
        yield Problem(pointer, f"expected an object, found {_type_name(instance)}")
        return
    if tag_key not in instance:
        yield Problem(pointer, f'missing "{tag_key}": expected one of {expected}')
        return
    tag = instance[tag_key]
    if not isinstance(tag, str) or tag not in variants:
        yield Problem(json_pointer([*path, tag_key]), f"unknown {tag_key} {_short(tag)}: expected one of {expected}")
        return
    for sub_error in error.kind.context[variants[tag][1]]:
        yield from _explain(schema, sub_error, list(sub_error.instance_path))


def _tagged_variants(schema: dict[str, Any], schema_path: tuple[str | int, ...]) -> dict[str, tuple[str, int]]:
    """For the oneOf at ``schema_path``: tag value → (tag key, branch index), when every
    branch is an object variant with a constant tag property; else empty."""
    node: Any = schema
    for step in schema_path:
        node = node[step]
    variants: dict[str, tuple[str, int]] = {}
    for index, branch in enumerate(node):
        properties = _resolve(schema, branch).get("properties", {})
        tag = next(((key, properties[key]["const"]) for key in TAG_KEYS
                    if isinstance(properties.get(key), dict) and isinstance(properties[key].get("const"), str)), None)
        if tag is None:
            return {}
        variants[tag[1]] = (tag[0], index)
    return variants


def _resolve(schema: dict[str, Any], node: Any) -> dict[str, Any]:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = schema
        for step in node["$ref"][2:].split("/"):
            target = target[step.replace("~1", "/").replace("~0", "~")]
        node = target
    return node if isinstance(node, dict) else {}


def _message(error: Any) -> str:
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        return f"missing required property {_short(kind.property)}"
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Type):
        expected = " or ".join(str(t) for t in kind.types) if hasattr(kind, "types") else "another type"
        return f"expected {expected}, found {_type_name(error.instance)}"
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
        return f"{_short(error.instance)} is not one of {', '.join(_short(v) for v in kind.options)}"
    return str(error.message)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _short(value: Any, limit: int = 60) -> str:
    text = _json.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"
