"""``/api/v1/render``: validate a posted document and convert it, without storing anything."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import create_model
from starlette.concurrency import run_in_threadpool

from agentfolio.api.auth import current_account
from agentfolio.api.body import parse_body
from agentfolio.api.errors import ApiError, SuccessStatus, error_responses, success
from agentfolio.app.accounts import Account
from agentfolio.app.documents import DocumentReport, convert_report, read_document
from agentfolio.formats import registry
from agentfolio.formats.errors import FormatError, Problem

router = APIRouter(prefix="/api/v1", tags=["render"])


def render_details(report: DocumentReport) -> dict[str, Any]:
    """The answer's ``details``: validity, and the converted document with its losses."""
    return {"from": report.format, "version": report.version, "valid": report.valid,
            "problems": [p.to_json() for p in report.problems], "notes": [n.to_json() for n in report.notes],
            "to": report.to, "document": report.document, "losses": [loss.to_json() for loss in report.losses]}


# Spelled as a dict because "from" is a Python keyword; each value is a (type, default) field definition.
_render_detail_fields: dict[str, Any] = {
    "from": (str | None, ...), "version": (str | None, ...), "valid": (bool, ...),
    "problems": (list[dict[str, Any]], ...), "notes": (list[dict[str, Any]], ...),
    "to": (str | None, ...), "document": (Any, None), "losses": (list[dict[str, Any]], ...),
}
RenderDetailsSchema = create_model("RenderDetails", **_render_detail_fields)
RenderEnvelope = create_model("RenderEnvelope", status=(SuccessStatus, ...), details=(RenderDetailsSchema, ...))


@router.post("/render", summary="Validate a document and convert it to another format (nothing stored)",
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"type": ["object", "array"], "description": "A document in any supported format "
                            "(an object, or an array of messages). Not strict, "
                            "one that cannot be read (no known format, no version) is answered as "
                            "invalid with what is wrong; strict, it is refused (400), as is one that breaks "
                            "its format's schema."}}}}},
             responses={200: {"model": RenderEnvelope, "description": "Validity, and the converted document"},
                        **error_responses(400, 401, 413)})
async def render(
    request: Request,
    to: str | None = Query(None, max_length=50, description="Convert to this format: " + ", ".join(registry.FORMATS),
                           json_schema_extra={"enum": registry.names()}),
    source_format: str | None = Query(None, alias="from", max_length=50, json_schema_extra={"enum": registry.names()},
                                      description="Skip detection: read as this format."),
    strict: bool = Query(False, description="Refuse a document that cannot be read or breaks its schema (400) "
                                            "instead of reporting it."),
    account: Account = Depends(current_account),
) -> Response:
    for name in (source_format, to):
        if name is not None:
            registry.get(name)  # an unknown format name is a bad request (400), not a bad document
    document = parse_body(await request.body(), max_depth=request.app.state.settings.max_json_depth)
    if not isinstance(document, (dict, list)):
        raise ApiError(400, "invalid_value", "a document is a JSON object or array", pointer="")
    try:
        report = await run_in_threadpool(convert_report, document, to=to, format_name=source_format, strict=strict)
    except FormatError as error:
        if strict or (to is not None and _readable(document, source_format)):
            raise
        # Not strict: what is wrong with the document is the answer, as for schema problems.
        return success({"from": source_format, "version": None, "valid": False,
                        "problems": [Problem(error.pointer or "", error.message).to_json()], "notes": [],
                        "to": to, "document": None, "losses": []})
    return success(render_details(report))


def _readable(document: Any, format_name: str | None) -> bool:
    """Whether the document itself reads (then a failure was the conversion's, not its)."""
    try:
        read_document(document, strict=False, format_name=format_name)
    except FormatError:
        return False
    return True
