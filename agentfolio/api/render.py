"""``/api/v1/render``: validate a posted document and convert it, without storing anything."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import create_model
from starlette.concurrency import run_in_threadpool

from agentfolio import _json
from agentfolio.api.auth import current_account
from agentfolio.api.body import parse_body
from agentfolio.api.errors import error_responses, success
from agentfolio.formats import registry
from agentfolio.formats.convert import convert
from agentfolio.store import Account

router = APIRouter(prefix="/api/v1", tags=["render"])


def target_formats() -> list[str]:
    return list(registry.FORMATS)


def convert_document(document: Any, *, to: str | None, source_format: str | None = None,
                     strict: bool = False) -> dict[str, Any]:
    """Read ``document`` (its format detected unless named), report its validity and,
    when ``to`` is given, the document converted, with what the conversion could not keep."""
    module = registry.get(source_format) if source_format else registry.detect(document)
    result = module.read(document, strict=strict)
    report: dict[str, Any] = {
        "from": result.format, "version": result.version, "valid": not result.problems,
        "problems": [p.to_json() for p in result.problems], "notes": [n.to_json() for n in result.notes],
        "to": to, "document": None, "losses": [],
    }
    if to is not None:
        # The session already read, with where each record came from, so every loss
        # points into the posted document.
        conversion = convert(result.session, to=to, from_=result.format, origin=result.origin)
        report["document"] = conversion.result
        report["losses"] = [loss.to_json() for loss in conversion.losses]
    return report


def convert_bytes(data: bytes, to: str) -> bytes:
    """A stored durable state (bytes) in another format, as JSON bytes."""
    report = convert_document(_json.loads(data), to=to, source_format="durable-state", strict=False)
    return _json.dumps(report["document"])


RenderDetailsSchema = create_model(
    "RenderDetails", **{
        "from": (str, ...), "version": (str | None, ...), "valid": (bool, ...),
        "problems": (list[dict[str, Any]], ...), "notes": (list[dict[str, Any]], ...),
        "to": (str | None, ...), "document": (Any, None), "losses": (list[dict[str, Any]], ...),
    })
RenderEnvelope = create_model("RenderEnvelope", status=(Literal["success"], ...), details=(RenderDetailsSchema, ...))


@router.post("/render", summary="Validate a document and convert it to another format (nothing stored)",
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"type": "object", "description": "A document in any supported format."}}}}},
             responses={200: {"model": RenderEnvelope, "description": "Validity, and the converted document"},
                        **error_responses(400, 401, 413)})
async def render(
    request: Request,
    to: str | None = Query(None, max_length=50, description="Convert to this format: " + ", ".join(registry.FORMATS)),
    source_format: str | None = Query(None, alias="from", max_length=50,
                                      description="Skip detection: read as this format."),
    strict: bool = Query(False, description="Refuse a document that breaks its schema instead of reporting it."),
    account: Account = Depends(current_account),
) -> Response:
    document = parse_body(await request.body(), max_depth=request.app.state.settings.max_json_depth)
    report = await run_in_threadpool(convert_document, document, to=to, source_format=source_format, strict=strict)
    return success(report)
