"""``/api/v1/ping``, ``/api/v1/agent`` and ``/api/v1/agent_schema_version`` (docs/prefactor-api.md §2, §4.1, §4.2)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.errors import success
from agentfolio.api.registry import parse
from agentfolio.api.registry.bodies import (
    AgentCreateDetails,
    AgentUpdateDetails,
    SchemaVersionCreateDetails,
    details_schema,
)
from agentfolio.api.registry.common import (
    IDEMPOTENCY_KEY,
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
from agentfolio.app.registry import AgentDelete, AgentGet, AgentReinstate, AgentRetire, Principal, SchemaVersionGet
from agentfolio.app.registry.inputs import AGENT_SORT_FIELDS

router = APIRouter(prefix="/api/v1", tags=["agents"])
#: ``/agent/{agent_id}``, which never takes ``/agent/show``.
AGENT = "/agent/" + id_segment("agent_id", "show")
KEY_ONLY = body_doc("Optional: {idempotency_key}", required=False,
                    properties={"idempotency_key": IDEMPOTENCY_KEY})


@router.get("/ping", summary="Check a token", responses=ONE)
async def ping(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    caller = await run_in_threadpool(registry(request).caller, principal)
    details = {"account_id": caller.account_id, "account_name": caller.account_name, "token_scope": caller.token_scope,
               "agent_id": caller.agent_id, "environment_id": caller.environment_id,
               "agent_deployment_id": caller.agent_deployment_id}
    return success(details)


@router.get("/account", summary="The caller's account", responses=ONE)
async def account(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    caller = await run_in_threadpool(registry(request).caller, principal)
    return success({"type": "account", "id": caller.account_id, "name": caller.account_name,
                    "default_environment_id": caller.default_environment_id})


@router.post("/agent", summary="Create an agent", responses=ONE,
             openapi_extra=body_doc("{details: {name, description?, external_identifier?, id?, ...}, "
                                    "idempotency_key?}", properties=WRAPPED,
                                    details=details_schema(AgentCreateDetails)))
async def create_agent(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await answer(request, principal, parse.agent_create, fields, key)


@router.get("/agent", summary="List agents", responses=MANY,
            openapi_extra=query_doc("risk_profile_id", "team_id", "owner_person_id", "status", *PAGING,
                                    sortable=AGENT_SORT_FIELDS))
async def list_agents(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.agent_list, query(request))


#: ``/agent/show`` takes exactly one of ``agent_id`` and ``external_identifier``: two query
#: parameters documented together as one form-exploded object, which says so.
WHICH_AGENT = {"name": "which", "in": "query", "required": True, "style": "form", "explode": True,
               "description": "Exactly one of agent_id and external_identifier (each its own query parameter).",
               "schema": {"type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
                          "properties": {"agent_id": TEXT, "external_identifier": TEXT}}}
SHOW_QUERY = query_doc("environment_id", "include_counts", "include_risk_rollup")
SHOW_QUERY["parameters"].insert(0, WHICH_AGENT)


@router.get("/agent/show", summary="Show an agent by id or external identifier", responses=ONE,
            openapi_extra=SHOW_QUERY)
async def show_agent(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.agent_show, query(request))


@router.get(AGENT, summary="Get an agent", responses=ONE)
async def get_agent(request: Request, agent_id: str = id_not("show"),
                    *, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, lambda _: AgentGet(agent_id), {})


@router.put(AGENT, summary="Update an agent", responses=ONE,
            openapi_extra=body_doc("{details: {name?, description?, owner_person_id?, risk_profile_id?, "
                                   "team_id?}, idempotency_key?}",
                                   properties={**WRAPPED, "details": details_schema(AgentUpdateDetails)}))
async def update_agent(request: Request, agent_id: str = id_not("show"),
                       *, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await answer(request, principal, parse.agent_update, {**fields, "agent_id": agent_id}, key)


async def _action(request: Request, principal: Principal, command: AgentRetire | AgentReinstate | AgentDelete,
                  ) -> Response:
    _, key = flat(await read_object(request))
    return await answer(request, principal, lambda _: command, {}, key)


@router.post("/agent/{agent_id}/retire", summary="Retire an agent", responses=ONE, openapi_extra=KEY_ONLY)
async def retire_agent(request: Request, agent_id: str, principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, AgentRetire(agent_id))


@router.post("/agent/{agent_id}/reinstate", summary="Reinstate a retired agent", responses=ONE,
             openapi_extra=KEY_ONLY)
async def reinstate_agent(request: Request, agent_id: str,
                          principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, AgentReinstate(agent_id))


@router.delete(AGENT, summary="Delete an agent with its instances and spans", responses=ONE,
               openapi_extra=KEY_ONLY)
async def delete_agent(request: Request, agent_id: str = id_not("show"),
                       *, principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, AgentDelete(agent_id))


@router.post("/agent_schema_version", summary="Create an agent schema version", responses=ONE,
             openapi_extra=body_doc("{details: {agent_id, external_identifier?, span_type_schemas?, span_schemas?, "
                                    "span_result_schemas?, quality_schemas?}, idempotency_key?}", properties=WRAPPED,
                                    details=details_schema(SchemaVersionCreateDetails)))
async def create_schema_version(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = unwrap(await read_object(request))
    return await answer(request, principal, parse.schema_version_create, fields, key)


@router.get("/agent_schema_version/{agent_schema_version_id}", summary="Get an agent schema version", responses=ONE)
async def get_schema_version(request: Request, agent_schema_version_id: str,
                             principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, lambda _: SchemaVersionGet(agent_schema_version_id), {})

