"""Agent schema versions: normalising a create request and shaping the response.

A schema version arrives in two places with the same body: ``POST
/api/v1/agent_schema_version`` (``{"details": {…}}``) and inline as
``agent_schema_version`` in ``POST /api/v1/agent_instance/register``.  It declares span
types in any mix of three forms (the SDK's ``SchemaRegistry`` emits whichever it holds):

* ``span_type_schemas``: a list of ``{name, params_schema, result_schema?, title?,
  description?, template?, data_risk?}``;
* ``span_schemas``: the older map of span type name → params schema;
* ``span_result_schemas``: the older map of span type name → result schema.

:func:`normalise_schema_version` folds them into one map of :class:`SpanTypeSchema`:
list entries first, in order; a ``span_schemas`` entry adds a span type the list does
not define (the list wins a clash); a ``span_result_schemas`` entry supplies the result
schema of a span type that has none yet, and creates a span type with an empty
(permissive) params schema when no form declared one.  ``result_schema`` defaults to
``{}`` and ``title`` to the name.

Structural mistakes (a span type without a name, a params schema that is not an
object, a data-risk value outside its enumeration) refuse the request with a
:class:`RegistryError` naming the field.  A schema that is an object but not a valid
JSON Schema does *not*: it is accepted and reported as
``params_schema_validation``/``result_schema_validation`` ``{"status": "error",
"message": …}``, as the API documents, and spans of that type are stored unvalidated.
A template that does not compile is likewise accepted and reported in
``template_validation`` (an addition to the documented shape; clients ignore extra
fields), because refusing a registration would make the SDK drop all telemetry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from agentfolio.registry.errors import FieldProblem, RegistryError, invalid, join_field, required
from agentfolio.registry.ids import describe_invalid
from agentfolio.registry.jsonschemas import SchemaCheck, canonical_bytes, check_schema, json_type
from agentfolio.registry.risk import DataRisk, data_risk_problems, parse_data_risk
from agentfolio.registry.templates import TemplateCheck, check_template
from agentfolio.registry.timestamps import format_timestamp

MAX_SPAN_TYPES = 1_000
MAX_NAME_CHARS = 255
MAX_TEXT_CHARS = 10_000


@dataclass(frozen=True)
class SpanTypeSchema:
    """One span type of a schema version, with its checks."""

    name: str
    title: str
    description: str | None
    template: str | None
    data_risk: DataRisk
    params_schema: dict[str, Any]
    result_schema: dict[str, Any]
    params_schema_validation: SchemaCheck
    result_schema_validation: SchemaCheck
    template_validation: TemplateCheck

    def to_json(self) -> dict[str, Any]:
        """The entry under ``span_type_schemas[name]`` in the API response."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "template": self.template,
            "data_risk": self.data_risk.to_json(),
            "params_schema": self.params_schema,
            "params_schema_validation": self.params_schema_validation.to_json(),
            "result_schema": self.result_schema,
            "result_schema_validation": self.result_schema_validation.to_json(),
            "template_validation": self.template_validation.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpanTypeSchema:
        """Rebuild from a stored ``to_json`` entry (re-checking schemas and template)."""
        params = data.get("params_schema") or {}
        result = data.get("result_schema") or {}
        return cls(
            name=data["name"],
            title=data.get("title") or data["name"],
            description=data.get("description"),
            template=data.get("template"),
            data_risk=parse_data_risk(data.get("data_risk")),
            params_schema=params,
            result_schema=result,
            params_schema_validation=check_schema(params),
            result_schema_validation=check_schema(result),
            template_validation=check_template(data.get("template")),
        )


@dataclass(frozen=True)
class QualitySchema:
    """A named quality schema (``quality_schemas``), recorded per instance by ``record_quality``."""

    name: str
    title: str
    description: str | None
    template: str | None
    data_risk: DataRisk
    schema: dict[str, Any]
    schema_validation: SchemaCheck
    template_validation: TemplateCheck

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "template": self.template,
            "data_risk": self.data_risk.to_json(),
            "schema": self.schema,
            "schema_validation": self.schema_validation.to_json(),
            "template_validation": self.template_validation.to_json(),
        }


@dataclass(frozen=True)
class SchemaVersionDraft:
    """A normalised create request: what the store persists for a schema version."""

    id: str | None
    agent_id: str | None
    external_identifier: str | None
    span_types: dict[str, SpanTypeSchema]
    quality_schemas: dict[str, QualitySchema] = field(default_factory=dict)

    @property
    def invalid_span_types(self) -> list[str]:
        return [name for name, span_type in self.span_types.items()
                if not (span_type.params_schema_validation.ok and span_type.result_schema_validation.ok
                        and span_type.template_validation.ok)]

    def span_type_schemas_json(self) -> dict[str, Any]:
        return {name: span_type.to_json() for name, span_type in self.span_types.items()}

    def quality_schemas_json(self) -> dict[str, Any]:
        return {name: quality.to_json() for name, quality in self.quality_schemas.items()}

    def fingerprint(self) -> str:
        """Hash of the declared content (not id/agent/external identifier): equal
        fingerprints mean a re-registration declared exactly the same span types."""
        content = {
            "span_types": {name: {k: v for k, v in entry.items() if not k.endswith("_validation")}
                           for name, entry in self.span_type_schemas_json().items()},
            "quality_schemas": {name: {k: v for k, v in entry.items() if not k.endswith("_validation")}
                                for name, entry in self.quality_schemas_json().items()},
        }
        return hashlib.sha256(canonical_bytes(content)).hexdigest()


def normalise_schema_version(details: object, field_path: str = "details") -> SchemaVersionDraft:
    """Fold a create request into a :class:`SchemaVersionDraft`; :class:`RegistryError`
    (every structural problem, each naming its field) when it cannot be accepted."""
    if not isinstance(details, Mapping):
        raise RegistryError(invalid(field_path, f"must be an object, found {json_type(details)}"))
    problems: list[FieldProblem] = []

    version_id = details.get("id")
    if version_id is not None and describe_invalid(version_id):
        problems.append(invalid(join_field(field_path, "id"), describe_invalid(version_id) or ""))
    agent_id = details.get("agent_id")
    if agent_id is not None and describe_invalid(agent_id):
        problems.append(invalid(join_field(field_path, "agent_id"), describe_invalid(agent_id) or ""))
    external_identifier = _optional_text(details, "external_identifier", field_path, problems, MAX_NAME_CHARS)

    entries: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}

    listed = details.get("span_type_schemas")
    list_path = join_field(field_path, "span_type_schemas")
    if listed is not None and not isinstance(listed, list):
        problems.append(invalid(list_path, f"must be an array of span types, found {json_type(listed)}"))
        listed = None
    for index, raw in enumerate(listed or ()):
        path = join_field(list_path, index)
        entry = _span_type_entry(raw, path, problems)
        if entry is None:
            continue
        name = entry["name"]
        if name in entries:
            problems.append(invalid(join_field(path, "name"), f"duplicate span type {name!r} "
                                                             f"(first declared at {origin[name]})"))
            continue
        entries[name] = entry
        origin[name] = path

    for key in ("span_schemas", "span_result_schemas"):
        mapping = details.get(key)
        map_path = join_field(field_path, key)
        if mapping is None:
            continue
        if not isinstance(mapping, Mapping):
            problems.append(invalid(map_path, f"must be an object mapping span type names to JSON Schemas, "
                                              f"found {json_type(mapping)}"))
            continue
        for name, schema in mapping.items():
            path = join_field(map_path, str(name))
            if not _valid_name(name, path, problems):
                continue
            if not isinstance(schema, dict):
                problems.append(invalid(path, f"must be a JSON Schema object, found {json_type(schema)}"))
                continue
            if key == "span_schemas":
                if name not in entries:
                    entries[name] = {"name": name, "params_schema": schema}
                    origin[name] = path
            else:
                entry = entries.setdefault(name, {"name": name, "params_schema": {}})
                origin.setdefault(name, path)
                if entry.get("result_schema") is None:
                    entry["result_schema"] = schema

    if len(entries) > MAX_SPAN_TYPES:
        problems.append(invalid(field_path, f"declares {len(entries):,} span types, over the "
                                            f"{MAX_SPAN_TYPES:,} limit"))

    quality = _quality_schemas(details.get("quality_schemas"), join_field(field_path, "quality_schemas"), problems)

    if problems:
        raise RegistryError(problems)
    span_types = {name: _build_span_type(entry) for name, entry in entries.items()}
    return SchemaVersionDraft(version_id, agent_id, external_identifier, span_types, quality)


def _span_type_entry(raw: object, path: str, problems: list[FieldProblem]) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        problems.append(invalid(path, f"must be an object, found {json_type(raw)}"))
        return None
    before = len(problems)
    name = raw.get("name")
    name_ok = _valid_name(name, join_field(path, "name"), problems)
    params = raw.get("params_schema")
    if params is None:
        problems.append(required(join_field(path, "params_schema"), "is required (a JSON Schema object; "
                                                                    "use {} to accept any payload)"))
    elif not isinstance(params, dict):
        problems.append(invalid(join_field(path, "params_schema"),
                                f"must be a JSON Schema object, found {json_type(params)}"))
    result = raw.get("result_schema")
    if result is not None and not isinstance(result, dict):
        problems.append(invalid(join_field(path, "result_schema"),
                                f"must be a JSON Schema object or null, found {json_type(result)}"))
    entry: dict[str, Any] = {"name": name, "params_schema": params, "result_schema": result}
    for key, limit in (("title", MAX_NAME_CHARS), ("description", MAX_TEXT_CHARS), ("template", MAX_TEXT_CHARS)):
        entry[key] = _optional_text(raw, key, path, problems, limit)
    problems.extend(data_risk_problems(raw.get("data_risk"), join_field(path, "data_risk")))
    entry["data_risk"] = raw.get("data_risk")
    if len(problems) > before or not name_ok:
        return None
    return entry


def _build_span_type(entry: Mapping[str, Any]) -> SpanTypeSchema:
    params = entry.get("params_schema")
    params = {} if params is None else params
    result = entry.get("result_schema")
    result = {} if result is None else result
    template = entry.get("template")
    return SpanTypeSchema(
        name=entry["name"],
        title=entry.get("title") or entry["name"],
        description=entry.get("description"),
        template=template,
        data_risk=parse_data_risk(entry.get("data_risk")),
        params_schema=params,
        result_schema=result,
        params_schema_validation=check_schema(params),
        result_schema_validation=check_schema(result),
        template_validation=check_template(template),
    )


def _quality_schemas(raw: object, path: str, problems: list[FieldProblem]) -> dict[str, QualitySchema]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.append(invalid(path, f"must be an array of quality schemas, found {json_type(raw)}"))
        return {}
    out: dict[str, QualitySchema] = {}
    for index, item in enumerate(raw):
        item_path = join_field(path, index)
        if not isinstance(item, Mapping):
            problems.append(invalid(item_path, f"must be an object, found {json_type(item)}"))
            continue
        before = len(problems)
        name = item.get("name")
        _valid_name(name, join_field(item_path, "name"), problems)
        schema = item.get("schema")
        if schema is None:
            problems.append(required(join_field(item_path, "schema"), "is required (a JSON Schema object)"))
        elif not isinstance(schema, dict):
            problems.append(invalid(join_field(item_path, "schema"),
                                    f"must be a JSON Schema object, found {json_type(schema)}"))
        title = _optional_text(item, "title", item_path, problems, MAX_NAME_CHARS)
        description = _optional_text(item, "description", item_path, problems, MAX_TEXT_CHARS)
        template = _optional_text(item, "template", item_path, problems, MAX_TEXT_CHARS)
        problems.extend(data_risk_problems(item.get("data_risk"), join_field(item_path, "data_risk")))
        if len(problems) > before:
            continue
        # No new problem: _valid_name saw a non-empty string and the check above a dict.
        name, schema = cast(str, name), cast(dict[str, Any], schema)
        if name in out:
            problems.append(invalid(join_field(item_path, "name"), f"duplicate quality schema {name!r}"))
            continue
        out[name] = QualitySchema(name, title or name, description, template, parse_data_risk(item.get("data_risk")),
                                  schema, check_schema(schema), check_template(template))
    return out


def _valid_name(name: object, path: str, problems: list[FieldProblem]) -> bool:
    if name is None:
        problems.append(required(path))
        return False
    if not isinstance(name, str) or not name.strip():
        problems.append(invalid(path, f"must be a non-empty string, found {json_type(name)}"))
        return False
    if "\x00" in name:  # no span's schema_name can ever name it
        problems.append(invalid(path, "must not contain NUL characters"))
        return False
    if len(name) > MAX_NAME_CHARS:
        problems.append(invalid(path, f"is {len(name)} characters, over the {MAX_NAME_CHARS}-character limit"))
        return False
    return True


def _optional_text(raw: Mapping[str, Any], key: str, path: str, problems: list[FieldProblem],
                   limit: int) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    key_path = join_field(path, key) if path else key
    if not isinstance(value, str):
        problems.append(invalid(key_path, f"must be a string or null, found {json_type(value)}"))
        return None
    if len(value) > limit:
        problems.append(invalid(key_path, f"is {len(value):,} characters, over the {limit:,}-character limit"))
        return None
    return value


def schema_version_details(
    draft: SchemaVersionDraft,
    *,
    id: str,
    account_id: str,
    agent_id: str,
    inserted_at: datetime,
    updated_at: datetime | None = None,
    external_identifier_repeats: int = 1,
    current_agent_deployment_refs: Iterable[str] = (),
) -> dict[str, Any]:
    """The ``details`` object of an ``AgentSchemaVersion`` response (Prefactor's agent schema versions), plus
    ``quality_schemas``.  ``external_identifier_repeats`` is how many stored rows of
    the agent share this ``external_identifier``, this one included."""
    return {
        "type": "agent_schema_version",
        "id": id,
        "account_id": account_id,
        "agent_id": agent_id,
        "external_identifier": draft.external_identifier,
        "external_identifier_repeats": external_identifier_repeats,
        "current_agent_deployment_refs": list(current_agent_deployment_refs),
        "span_type_schemas": draft.span_type_schemas_json(),
        "quality_schemas": draft.quality_schemas_json(),
        "inserted_at": format_timestamp(inserted_at),
        "updated_at": format_timestamp(updated_at or inserted_at),
    }


def load_span_types(span_type_schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, SpanTypeSchema]:
    """Span types back from a stored ``span_type_schemas`` map (the response shape)."""
    return {name: SpanTypeSchema.from_json({**entry, "name": entry.get("name") or name})
            for name, entry in span_type_schemas.items()}


def count_external_identifier_repeats(external_identifier: str | None, existing: Iterable[str | None]) -> int:
    """Rows sharing ``external_identifier`` among ``existing`` (the agent's stored
    versions, including the new one); 0 when the version has none."""
    if external_identifier is None:
        return 0
    return sum(1 for value in existing if value == external_identifier)


