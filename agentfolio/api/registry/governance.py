"""``/api/v1/risk_profile`` and ``/api/v1/alerts``: what the open dashboard reads beside
agents, runs and spans (risk profiles as ``summaries[].{id, name}``, the open alerts as
``{count}``), and what an operator does with them (create and assign profiles,
acknowledge alerts).  Account tokens only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.errors import error_responses, json_response
from agentfolio.api.registry import parse
from agentfolio.api.registry.bodies import RiskProfileCreateDetails, details_schema
from agentfolio.api.registry.common import (
    ERROR_STATUSES,
    MANY,
    ONE,
    PAGING,
    TEXT,
    WRAPPED,
    answer,
    body_doc,
    current_principal,
    flat,
    id_not,
    id_segment,
    query,
    query_doc,
    read_object,
    registry,
    unwrap,
)
from agentfolio.app.registry import AlertCount, AlertGet, Principal, RiskProfileGet
from agentfolio.app.registry.inputs import ALERT_SORT_FIELDS, PROFILE_SORT_FIELDS

router = APIRouter(prefix="/api/v1", tags=["governance"])
COUNT = {200: {"description": "{status: success, count, details: {count}}", "content": {"application/json": {
    "schema": {"type": "object", "required": ["status", "count"],
               "properties": {"status": {"type": "string"}, "count": {"type": "integer"},
                              "details": {"type": "object"}}}}}}, **error_responses(*ERROR_STATUSES)}


@router.get("/risk_profile", summary="List the account's risk profiles", responses=MANY,
            openapi_extra=query_doc("account_id", *PAGING, sortable=PROFILE_SORT_FIELDS))
async def list_profiles(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.risk_profile_list, query(request))


@router.post("/risk_profile", summary="Create a risk profile", responses=ONE,
             openapi_extra=body_doc("{details: {name, description?, template?: default|empty, categories?, "
                                    "actions?, thresholds?, id?}, idempotency_key?}", properties=WRAPPED,
                                    details=details_schema(RiskProfileCreateDetails)))
async def create_profile(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await answer(request, principal, parse.risk_profile_create, fields, key)


@router.get("/risk_profile/{risk_profile_id}", summary="A risk profile (default: the account's default)",
            responses=ONE)
async def get_profile(request: Request, risk_profile_id: str,
                      principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, lambda _: RiskProfileGet(risk_profile_id), {})


@router.get("/alerts/count", summary="How many alerts are open (not acknowledged)", responses=COUNT)
async def count_alerts(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    counted = await run_in_threadpool(registry(request).run, principal, AlertCount())
    # The dashboard reads ``count`` at the top level; ``details`` keeps the usual envelope.
    return json_response({"status": "success", "count": counted.count, "details": {"count": counted.count}})


@router.get("/alerts", summary="List alerts (open ones unless acknowledged= says otherwise)", responses=MANY,
            openapi_extra=query_doc("acknowledged", "kind", "severity", "agent_id", "agent_instance_id", *PAGING,
                                    sortable=ALERT_SORT_FIELDS))
async def list_alerts(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.alert_list, query(request))


#: Which alerts: ids, or ``all: true`` (narrowed by kind and agent); ``alert_ids: null`` is
#: read as no ids, as the server reads it.
ACKNOWLEDGE = {"alert_ids": {"type": ["array", "null"], "items": {**TEXT, "maxLength": 64}}, "all": {"type": "boolean"}}


@router.post("/alerts/acknowledge", summary="Acknowledge alerts by id, or all that match", responses=ONE,
             openapi_extra=body_doc("{alert_ids?: [id], all?: true, kind?, agent_id?, idempotency_key?}",
                                    properties=ACKNOWLEDGE,
                                    any_of=[{"required": ["alert_ids"],
                                             "properties": {"alert_ids": {"type": "array", "minItems": 1}}},
                                            {"required": ["all"], "properties": {"all": {"const": True}}}]))
async def acknowledge_alerts(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = flat(await read_object(request))
    return await answer(request, principal, parse.alert_acknowledge, fields, key)


# Only the literal that does not take GET is excluded: GET /alerts/count is its own route.
@router.get("/alerts/" + id_segment("alert_id", "acknowledge"), summary="An alert", responses=ONE)
async def get_alert(request: Request, alert_id: str = id_not("acknowledge"),
                    *, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, lambda _: AlertGet(alert_id), {})


@router.post("/alerts/{alert_id}/acknowledge", summary="Acknowledge one alert", responses=ONE,
             openapi_extra=body_doc("Optional: {idempotency_key}", required=False))
async def acknowledge_alert(request: Request, alert_id: str,
                            principal: Principal = Depends(current_principal)) -> Response:
    _, key = flat(await read_object(request))
    fields: Mapping[str, Any] = {"alert_ids": [alert_id]}
    return await answer(request, principal, parse.alert_acknowledge, fields, key)
