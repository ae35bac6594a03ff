"""``/api/v1/agent_spans``: create (wrapped; key inside or beside ``details``), finish
(flat), get and list with ``include_summaries`` / ``include_risk_level`` (docs §4.4)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from agentfolio.api.registry import parse
from agentfolio.api.registry.bodies import SpanCreateDetails, details_schema
from agentfolio.api.registry.common import (
    MANY,
    ONE,
    PAGING,
    WRAPPED,
    answer,
    body_doc,
    current_principal,
    flat,
    query,
    query_doc,
    read_object,
    unwrap,
)
from agentfolio.app.registry import Principal
from agentfolio.app.registry.inputs import SPAN_SORT_FIELDS

router = APIRouter(prefix="/api/v1/agent_spans", tags=["agent spans"])


@router.post("", summary="Create a span (stored and flagged if its payload breaks its schema)", responses=ONE,
             openapi_extra=body_doc("{details: {agent_instance_id, schema_name, status, payload, parent_span_id?, "
                                    "result_payload?, started_at?, finished_at?, id?, idempotency_key?}, "
                                    "idempotency_key?}", properties=WRAPPED, details=details_schema(SpanCreateDetails)))
async def create_span(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await answer(request, principal, parse.span_create, fields, key)


@router.get("", summary="List spans", responses=MANY,
            openapi_extra=query_doc("agent_id", "agent_instance_id", "status", "schema_name", "validation_status",
                                    "parent_span_id", "session_id", "include_summaries", "include_risk_level",
                                    *PAGING, sortable=SPAN_SORT_FIELDS))
async def list_spans(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.span_list, query(request))


@router.get("/{agent_span_id}", summary="Get a span", responses=ONE,
            openapi_extra=query_doc("include_summaries", "include_risk_level"))
async def get_span(request: Request, agent_span_id: str, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.span_get, {**query(request), "agent_span_id": agent_span_id})


@router.post("/{agent_span_id}/finish", summary="Finish a span (flat body)", responses=ONE,
             openapi_extra=body_doc("{status?: complete|failed|cancelled, result_payload?, timestamp?, "
                                    "idempotency_key?}", required=False))
async def finish_span(request: Request, agent_span_id: str,
                      principal: Principal = Depends(current_principal)) -> Response:
    fields, key = flat(await read_object(request))
    return await answer(request, principal, parse.span_finish, {**fields, "agent_span_id": agent_span_id}, key)
