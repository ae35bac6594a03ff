"""The span type an OTel operation becomes in its agent's schema version."""

from __future__ import annotations

from agentfolio.registry.schema_versions import SpanTypeSchema

DESCRIPTION = "Seen in OpenTelemetry spans; its data risk is undeclared until someone declares it."


def otel_span_type(name: str) -> SpanTypeSchema:
    """A span type declared on first sight: permissive schemas (OTel spans carry their own
    attributes, not a payload someone designed), no template, data risk undeclared, so
    risk roll-ups count it as unknown until a user declares it."""
    return SpanTypeSchema.from_json({"name": name, "title": name, "description": DESCRIPTION,
                                     "params_schema": {}, "result_schema": {}})
