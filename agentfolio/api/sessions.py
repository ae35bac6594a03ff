"""``/api/v1/sessions``: durable agent sessions, one account's own, appended with If-Match.

A session's ETag is its version (``"3"``).  Appending needs ``If-Match`` with the version
the client read; a stale one is refused with 412 ``version_conflict`` and the current
version in the ETag header, so clients re-read and retry instead of overwriting.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field, create_model
from starlette.concurrency import run_in_threadpool

from agentfolio.api.auth import current_account, get_folio
from agentfolio.api.body import parse_body
from agentfolio.api.errors import ApiError, ErrorEnvelope, SuccessStatus, error_responses, success
from agentfolio.app.accounts import Account
from agentfolio.app.sessions import SESSION_ID, SessionInfo
from agentfolio.formats import registry

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])

SessionId = Path(..., description="The session's id.", pattern="^" + SESSION_ID.pattern + "$", max_length=200)
Strict = Query(True, description="Refuse documents that break their schema (false: store them and list "
                                 "the problems).")


class SessionSummary(BaseModel):
    id: str
    agent: str | None
    schemaVersion: str | None
    version: int = Field(description="Increases on every write; send it back in If-Match.")
    entryCount: int
    createdAt: str
    updatedAt: str
    firstActivityAt: str | None = Field(description="The earliest entry createdAt in the history.")
    lastActivityAt: str | None
    expiresAt: str | None = Field(description="When the session expires if not written again.")


class ProblemOut(BaseModel):
    pointer: str
    message: str


class CreatedDetails(BaseModel):
    session: SessionSummary
    problems: list[ProblemOut]


class AppendedDetails(BaseModel):
    session: SessionSummary
    position: int = Field(description="Where the (first) entry was put in the history (0-based).")
    problems: list[ProblemOut]


class SessionDetails(BaseModel):
    session: SessionSummary


class ListDetails(BaseModel):
    sessions: list[SessionSummary]
    nextOffset: int | None = Field(description="Pass as offset for the next page; null on the last page.")


class DeletedDetails(BaseModel):
    id: str
    deleted: Literal[True]


def _envelope(name: str, details: type[BaseModel]) -> type[BaseModel]:
    return create_model(name, status=(SuccessStatus, ...), details=(details, ...))


CreatedEnvelope = _envelope("CreatedEnvelope", CreatedDetails)
AppendedEnvelope = _envelope("AppendedEnvelope", AppendedDetails)
SessionEnvelope = _envelope("SessionEnvelope", SessionDetails)
ListEnvelope = _envelope("ListEnvelope", ListDetails)
DeletedEnvelope = _envelope("DeletedEnvelope", DeletedDetails)

DOCUMENT_SCHEMA = {
    "type": "object",
    "description": "Durable agent state (schemaVersion 1.x or 2.0).",
    "required": ["schemaVersion", "data"],
    "properties": {
        # The majors this release reads (an unknown major is refused, not guessed at).
        "schemaVersion": {"type": "string", "pattern": r"^(1\.[0-9]{1,6}|2\.0)\.[0-9]{1,6}$", "example": "1.2.0"},
        "data": {"type": "object", "properties": {"conversationHistory": {"type": "array",
                                                                           "items": {"type": "object"}}}},
    },
    "additionalProperties": True,
}
ONE_ENTRY_SCHEMA = {
    "type": "object",
    "description": "One durable-state history entry (request, response, errorResponse, compaction).",
    "properties": {"$type": {"type": "string"}, "messages": {"type": "array", "items": {"type": "object"}},
                   "createdAt": {"type": "string"}, "correlationId": {"type": "string"}},
    "additionalProperties": True,
}
# A turn (a request and its response) is appended as one write, so that no other
# writer's entry can land between them.
MAX_ENTRIES_PER_APPEND = 1000
ENTRY_SCHEMA = {
    "description": "One entry, or an array of entries appended together as one write (one new version).",
    "oneOf": [ONE_ENTRY_SCHEMA, {"type": "array", "items": ONE_ENTRY_SCHEMA, "minItems": 1,
                                 "maxItems": MAX_ENTRIES_PER_APPEND}],
}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _etag(version: int) -> dict[str, str]:
    return {"ETag": f'"{version}"'}


_IF_MATCH = re.compile(r'\s*(?:W/)?"?(\d{1,18})"?\s*')


def parse_if_match(value: str | None, *, required: bool) -> int | None:
    """The version an If-Match names; None for ``*`` or (when allowed) no header."""
    if value is None:
        if required:
            raise ApiError(428, "required_value", "appending needs If-Match with the session's current version "
                                                  '(its ETag, e.g. If-Match: "3"), or If-Match: *')
        return None
    if value.strip() == "*":
        return None
    match = _IF_MATCH.fullmatch(value) if len(value) <= 100 else None
    if match is None:
        raise ApiError(400, "invalid_value", f'If-Match {value!r} is not a session version such as "3"')
    return int(match.group(1))


#: What the server takes, for the OpenAPI document (the parsers above and below decide).
IF_MATCH_SCHEMA = {"pattern": r'^\s*(\*|(W/)?"?[0-9]{1,18}"?)\s*$'}
TIME_SCHEMA = {"pattern": r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
                          r"(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?$"}


def _parse_time(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, "invalid_value", f"{name} {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


async def _read_json(request: Request) -> Any:
    body = await request.body()
    return parse_body(body, max_depth=request.app.state.settings.max_json_depth)


def _summary(info: SessionInfo) -> dict[str, Any]:
    return info.to_json()


@router.post("", status_code=201, summary="Store a durable state as a new session",
             openapi_extra=_json_body(DOCUMENT_SCHEMA),
             responses={201: {"model": CreatedEnvelope, "description": "Stored"},
                        **error_responses(400, 401, 409, 413)})
async def create_session(
    request: Request,
    session_id: str | None = Query(None, alias="id", pattern="^" + SESSION_ID.pattern + "$", max_length=200,
                                   description="The new session's id (default: a random one)."),
    agent: str | None = Query(None, min_length=1, max_length=200, description="The agent the session belongs to."),
    strict: bool = Strict,
    account: Account = Depends(current_account),
) -> Response:
    document = await _read_json(request)
    if not isinstance(document, dict):
        raise ApiError(400, "invalid_value", "expected a durable state: a JSON object with schemaVersion and data",
                       pointer="")
    folio = get_folio(request)
    created = await run_in_threadpool(folio.sessions.create, account, document, session_id=session_id,
                                      agent=agent, strict=strict)
    info = created.session
    headers = {**_etag(info.version), "Location": f"/api/v1/sessions/{info.id}"}
    return success({"session": _summary(info), "problems": [p.to_json() for p in created.problems]}, 201, headers)


@router.get("", summary="List and search sessions",
            responses={200: {"model": ListEnvelope, "description": "Sessions, newest-written first"},
                       **error_responses(400, 401)})
async def list_sessions(
    request: Request,
    agent: str | None = Query(None, max_length=200, description="Only this agent's sessions."),
    since: str | None = Query(None, max_length=64, description="Only sessions active at or after this time.",
                              json_schema_extra=TIME_SCHEMA),
    until: str | None = Query(None, max_length=64, description="Only sessions active at or before this time.",
                              json_schema_extra=TIME_SCHEMA),
    q: str | None = Query(None, min_length=1, max_length=500, description="Text in any message (any case)."),
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=10_000_000),
    account: Account = Depends(current_account),
) -> Response:
    folio = get_folio(request)
    found = await run_in_threadpool(folio.sessions.list, account, agent=agent, since=_parse_time(since, "since"),
                                    until=_parse_time(until, "until"), text=q, limit=limit + 1, offset=offset)
    more = len(found) > limit
    return success({"sessions": [_summary(info) for info in found[:limit]],
                    "nextOffset": offset + limit if more else None})


# Every format the registry can write, so the API offers what the CLI and viewer offer. The members are
# only known at import time, which mypy cannot see.
DocumentFormat = Enum(  # type: ignore[misc]
    "DocumentFormat", {name.replace("-", "_"): name for name in registry.names()}, type=str
)


@router.get("/{session_id}", summary="Get a session's document (durable state by default)",
            responses={200: {"description": "The document itself (not wrapped); ETag is the version",
                             "content": {"application/json": {"schema": {"type": ["object", "array"]}}},
                             "headers": {"ETag": {"schema": {"type": "string"}}}},
                       **error_responses(400, 401, 404),
                       409: {"model": ErrorEnvelope, "description": "not_representable: the session's content "
                             "does not fit the format now (an empty history as a Prompt Envelope, which needs "
                             "a message)"}})
async def get_session(
    request: Request,
    session_id: str = SessionId,
    format: DocumentFormat = Query(DocumentFormat("durable-state"),
                                   description="The format to answer in; what it cannot hold is counted in "
                                               "X-Agentfolio-Losses."),
    account: Account = Depends(current_account),
) -> Response:
    exported = await run_in_threadpool(get_folio(request).sessions.export, account, session_id, format.value)
    headers = {**_etag(exported.info.version), "X-Agentfolio-Format": exported.format,
               "X-Agentfolio-Losses": str(len(exported.losses))}
    return Response(exported.data, media_type="application/json", headers=headers)


#: Appending requires If-Match: the header is read by :func:`append_entry` itself, so that its
#: absence is the 428 that names what to send, and documented here as required.
IF_MATCH_REQUIRED = {"name": "If-Match", "in": "header", "required": True,
                     "description": 'The version the client read, as its ETag ("3"), or * (absent: 428; '
                                    "stale: 412 with the current version in ETag).",
                     "schema": {"type": "string", "maxLength": 100, **IF_MATCH_SCHEMA}}


@router.post("/{session_id}/entries", status_code=201, summary="Append an entry (or several together) to the history",
             openapi_extra={**_json_body(ENTRY_SCHEMA), "parameters": [IF_MATCH_REQUIRED]},
             responses={201: {"model": AppendedEnvelope, "description": "Appended",
                              "headers": {"ETag": {"schema": {"type": "string"}}}},
                        **error_responses(400, 401, 404, 412, 413, 428)})
async def append_entry(
    request: Request,
    session_id: str = SessionId,
    strict: bool = Strict,
    account: Account = Depends(current_account),
) -> Response:
    expected = parse_if_match(request.headers.get("if-match"), required=True)
    posted = await _read_json(request)
    if isinstance(posted, list):
        if not 1 <= len(posted) <= MAX_ENTRIES_PER_APPEND:
            raise ApiError(400, "invalid_value", f"post 1 to {MAX_ENTRIES_PER_APPEND} entries at a time, "
                           f"not {len(posted)}", pointer="")
        new_entries = posted
    elif isinstance(posted, dict):
        new_entries = [posted]
    else:
        raise ApiError(400, "invalid_value", "an entry must be a JSON object (or post an array of entries)",
                       pointer="")
    folio = get_folio(request)
    appended = await run_in_threadpool(folio.sessions.append_many, account, session_id, new_entries,
                                       expected_version=expected, strict=strict)
    info = appended.session
    return success({"session": _summary(info), "position": appended.position,
                    "problems": [p.to_json() for p in appended.problems]}, 201, _etag(info.version))


@router.post("/{session_id}/reset", summary="Empty a session's history (keeps its id and schema version)",
             responses={200: {"model": SessionEnvelope, "description": "Reset"},
                        **error_responses(400, 401, 404, 412)})
async def reset_session(
    request: Request,
    session_id: str = SessionId,
    if_match: str | None = Header(None, alias="If-Match", max_length=100, json_schema_extra=IF_MATCH_SCHEMA),
    account: Account = Depends(current_account),
) -> Response:
    expected = parse_if_match(if_match, required=False)
    info = await run_in_threadpool(get_folio(request).sessions.reset, account, session_id, expected_version=expected)
    return success({"session": _summary(info)}, 200, _etag(info.version))


@router.delete("/{session_id}", summary="Delete a session and its blobs",
               responses={200: {"model": DeletedEnvelope, "description": "Deleted"},
                          **error_responses(400, 401, 404, 412)})
async def delete_session(
    request: Request,
    session_id: str = SessionId,
    if_match: str | None = Header(None, alias="If-Match", max_length=100, json_schema_extra=IF_MATCH_SCHEMA),
    account: Account = Depends(current_account),
) -> Response:
    expected = parse_if_match(if_match, required=False)
    await run_in_threadpool(get_folio(request).sessions.delete, account, session_id, expected_version=expected)
    return success({"id": session_id, "deleted": True})
