"""Schema versions as a person reads them: span types, their schemas and checks, data risk.

Everything is computed by the registry domain (``normalise_schema_version``,
``load_span_types``, ``risk.score_span_type``, ``risk.rollup``) and by
``agentfolio.body.is_compatible``; this module only arranges the results for templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

from agentfolio import _json
from agentfolio.errors import AgentfolioError
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.risk import (
    ACTIONS,
    CATEGORIES,
    RiskProfile,
    RiskRollup,
    SpanTypeScore,
    rollup,
    score_span_type,
)
from agentfolio.registry.schema_versions import SpanTypeSchema, load_span_types, normalise_schema_version
from agentfolio.registry.spans import CompiledSchemaVersion


@dataclass
class Badge:
    label: str
    value: str
    #: CSS tone: danger, warn, ok, neutral.
    tone: str
    title: str = ""


@dataclass
class SpanTypeView:
    schema: SpanTypeSchema
    score: SpanTypeScore
    badges: list[Badge]

    @property
    def checks(self) -> list[tuple[str, Any]]:
        return [("params schema", self.schema.params_schema_validation),
                ("result schema", self.schema.result_schema_validation),
                ("template", self.schema.template_validation)]

    @property
    def valid(self) -> bool:
        return all(check.ok for _, check in self.checks)


@dataclass
class SchemaVersionView:
    id: str | None
    agent_id: str | None
    external_identifier: str | None
    span_types: list[SpanTypeView]
    rollup: RiskRollup | None
    rollup_badges: list[Badge]
    problems: list[str] = field(default_factory=list)

    @property
    def compiled(self) -> CompiledSchemaVersion:
        return CompiledSchemaVersion(self.id, {view.schema.name: view.schema for view in self.span_types})


def span_types_of(document: Mapping[str, Any]) -> tuple[dict[str, SpanTypeSchema], list[str], dict[str, Any]]:
    """Span types of a schema version in either shape: the API's answer (a map by name,
    already folded) or a create request (a list, plus ``span_schemas`` maps)."""
    declared = document.get("span_type_schemas")
    meta = {key: document.get(key) for key in ("id", "agent_id", "external_identifier")}
    if isinstance(declared, Mapping):
        try:
            return load_span_types(declared), [], meta
        except (KeyError, TypeError, ValueError, RegistryError) as error:
            return {}, [f"span_type_schemas: {error}"], meta
    try:
        draft = normalise_schema_version(document)
    except RegistryError as error:
        return {}, [str(problem) for problem in error.problems], meta
    return dict(draft.span_types), [], meta


def risk_badges(risk: Any) -> list[Badge]:
    """Badges for a declaration (a DataRisk) or a roll-up: allowed actions, included
    categories, classification, and what is still unknown."""
    if isinstance(risk, RiskRollup):
        actions, categories, classification = risk.action_profile, risk.data_categories, risk.classification
    elif isinstance(risk, Mapping):  # a roll-up as the registry reports it (JSON)
        actions = risk.get("action_profile") or {}
        categories = risk.get("data_categories") or {}
        classification = risk.get("classification") or "unknown"
    else:
        actions = {name: getattr(risk.action_profile, name) for name in ACTIONS}
        params, result = risk.params_data_categories, risk.result_data_categories
        categories = {}
        for name in CATEGORIES:
            values = {getattr(params, name), getattr(result, name)}
            categories[name] = "included" if "included" in values else "unknown" if "unknown" in values else "excluded"
        classification = risk.classification()
    badges = []
    for name, value in actions.items():
        if value == "allowed":
            tone = "danger" if name in ("destroy_data", "financial_transactions", "external_communication") else "warn"
            badges.append(Badge(ACTIONS[name], "allowed", tone, f"action {name}: allowed"))
    for name, value in categories.items():
        if name in CATEGORIES and value == "included":
            badges.append(Badge(CATEGORIES[name], "included", "warn", f"data category {name}: included"))
    tone = {"restricted": "danger", "secret": "danger", "confidential": "warn", "unknown": "neutral"}.get(
        classification, "ok")
    badges.append(Badge("classification", classification, tone, "highest data classification"))
    unknown_actions = [name for name, value in actions.items() if value == "unknown"]
    if unknown_actions:
        badges.append(Badge("actions undeclared", str(len(unknown_actions)), "neutral",
                            "actions neither allowed nor disallowed: " + ", ".join(unknown_actions)))
    return badges


def schema_version_view(document: Mapping[str, Any], *, profile: RiskProfile | None = None) -> SchemaVersionView:
    """``profile``: the account's risk profile (default: the registry's default profile)."""
    span_types, problems, meta = span_types_of(document)
    views = []
    for name, schema in span_types.items():
        score = score_span_type(name, schema.data_risk, profile) if profile else score_span_type(name, schema.data_risk)
        views.append(SpanTypeView(schema, score, risk_badges(schema.data_risk)))
    rolled = rollup((name, schema.data_risk) for name, schema in span_types.items()) if span_types else None
    return SchemaVersionView(_text(meta.get("id")), _text(meta.get("agent_id")), _text(meta.get("external_identifier")),
                             views, rolled, risk_badges(rolled) if rolled else [], problems)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- MessageBody compatibility ----------------------------------------------------------


@dataclass
class CompatView:
    compatible: bool | None
    reason: str
    problems: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: The HTTP status the answer goes out with: 422 for input that cannot be checked
    #: (malformed, or too complex to check in time), 503 when the server is stopping.
    status: int = 200


#: Status of each refusal code; anything else about the input is a 422.
_STATUS_FOR_CODE = {"service_unavailable": 503, "internal_error": 500}


def check_compatibility(output_text: str, input_text: str, *, timeout: float = 10.0) -> CompatView:
    """Is every body valid under the output schema also valid under the input schema?
    Decided in a child process stopped after ``timeout`` seconds ("too complex")."""
    from agentfolio.body import BodyError, MessageBodySchema
    from agentfolio.body.compat import check_compatibility as check_under_deadline

    schemas = []
    for label, text in (("output schema", output_text), ("input schema", input_text)):
        try:
            schemas.append(MessageBodySchema.parse(_json.loads(text)))
        except orjson.JSONDecodeError as error:
            return CompatView(None, "", error=f"{label}: not JSON: {error}", status=422)
        except (BodyError, ValueError) as error:
            return CompatView(None, "", error=f"{label}: {error}", status=422)
    try:
        result = check_under_deadline(schemas[0], schemas[1], timeout=timeout)
    except AgentfolioError as error:
        return CompatView(None, "", error=str(error), status=_STATUS_FOR_CODE.get(error.code, 422))
    problems = [{"kind": p.kind, "reason": p.reason, "counterexample": p.counterexample.to_dict()}
                for p in result.problems]
    return CompatView(result.compatible, result.reason, problems)
