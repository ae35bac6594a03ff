"""``/api/v1/ping``, ``/api/v1/agent`` and ``/api/v1/agent_schema_version`` (docs/prefactor-api.md §2, §4.1, §4.2)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.auth import get_store
from agentfolio.api.errors import error_responses, json_response, success
from agentfolio.api.registry.common import (
    ERROR_STATUSES, LIST, PAGING, SUCCESS, WRAPPED, body_doc, current_principal, flat, merge, query, query_doc,
    read_object, run, unwrap,
)
from agentfolio.store.registry import Principal

router = APIRouter(prefix="/api/v1", tags=["agents"])
ONE = {200: SUCCESS, **error_responses(*ERROR_STATUSES)}
MANY = {200: LIST, **error_responses(*ERROR_STATUSES)}
KEY_ONLY = body_doc("Optional: {idempotency_key}", required=False,
                    properties={"idempotency_key": {"type": "string", "maxLength": 64}})


@router.get("/ping", summary="Check a token", responses=ONE)
async def ping(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    info = await run_in_threadpool(get_store(request).registry.account_info, principal.account)
    details = {"account_id": info.id, "account_name": principal.account.name, "token_scope": principal.scope,
               "agent_id": principal.agent_id, "environment_id": principal.environment_id,
               "agent_deployment_id": principal.deployment_id}
    return success(details)


@router.get("/account", summary="The caller's account", responses=ONE)
async def account(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    info = await run_in_threadpool(get_store(request).registry.account_info, principal.account)
    return success({"type": "account", "id": info.id, "name": principal.account.name,
                    "default_environment_id": info.default_environment_id})


@router.get("/risk_profile", summary="The account's risk profile (one per account)", responses=MANY)
async def risk_profiles(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    profile = await run_in_threadpool(get_store(request).registry.risk_profile, principal.account)
    summary = {"id": "account", "name": profile.name, **profile.model_dump(mode="json")}
    return json_response({"status": "success", "summaries": [summary], "pagination": None, "sorting": None})


@router.post("/agent", summary="Create an agent", responses=ONE,
             openapi_extra=body_doc("{details: {name, description?, external_identifier?, id?, ...}, "
                                    "idempotency_key?}", properties=WRAPPED))
async def create_agent(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await run(request, principal, "agents/create", fields, key)


@router.get("/agent", summary="List agents", responses=MANY,
            openapi_extra=query_doc("risk_profile_id", "team_id", "owner_person_id", "status", *PAGING))
async def list_agents(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await run(request, principal, "agents/list", query(request))


@router.get("/agent/show", summary="Show an agent by id or external identifier", responses=ONE,
            openapi_extra=query_doc("agent_id", "external_identifier", "environment_id", "include_counts",
                                    "include_risk_rollup"))
async def show_agent(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await run(request, principal, "agents/show", query(request))


@router.get("/agent/{agent_id}", summary="Get an agent", responses=ONE)
async def get_agent(request: Request, agent_id: str, principal: Principal = Depends(current_principal)) -> Response:
    return await run(request, principal, "agents/get", {"agent_id": agent_id})


@router.put("/agent/{agent_id}", summary="Update an agent", responses=ONE,
            openapi_extra=body_doc("{details: {name?, description?, owner_person_id?, risk_profile_id?, "
                                   "team_id?}, idempotency_key?}", properties=WRAPPED))
async def update_agent(request: Request, agent_id: str, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await run(request, principal, "agents/update", {**fields, "agent_id": agent_id}, key)


async def _action(request: Request, principal: Principal, agent_id: str, operation: str) -> Response:
    fields, key = flat(await read_object(request))
    return await run(request, principal, operation, {"agent_id": agent_id}, key)


@router.post("/agent/{agent_id}/retire", summary="Retire an agent", responses=ONE, openapi_extra=KEY_ONLY)
async def retire_agent(request: Request, agent_id: str, principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_id, "agents/retire")


@router.post("/agent/{agent_id}/reinstate", summary="Reinstate a retired agent", responses=ONE,
             openapi_extra=KEY_ONLY)
async def reinstate_agent(request: Request, agent_id: str,
                          principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_id, "agents/reinstate")


@router.delete("/agent/{agent_id}", summary="Delete an agent with its instances and spans", responses=ONE,
               openapi_extra=KEY_ONLY)
async def delete_agent(request: Request, agent_id: str, principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_id, "agents/delete")


@router.post("/agent_schema_version", summary="Create an agent schema version", responses=ONE,
             openapi_extra=body_doc("{details: {agent_id, external_identifier?, span_type_schemas?, span_schemas?, "
                                    "span_result_schemas?, quality_schemas?}, idempotency_key?}", properties=WRAPPED))
async def create_schema_version(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await run(request, principal, "agent_schema_versions/create", fields, key)


@router.get("/agent_schema_version/{agent_schema_version_id}", summary="Get an agent schema version", responses=ONE)
async def get_schema_version(request: Request, agent_schema_version_id: str,
                             principal: Principal = Depends(current_principal)) -> Response:
    return await run(request, principal, "agent_schema_versions/get",
                     {"agent_schema_version_id": agent_schema_version_id})

