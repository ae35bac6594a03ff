"""``/api/v1/agent_instance``: register (flat body, inline schema version), start, finish,
get (polled by the SDK), record_quality, list, and our terminate (docs §4.3, §7)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from agentfolio.api.registry import parse
from agentfolio.api.registry.bodies import InstanceRegisterBody, details_schema
from agentfolio.api.registry.common import (
    MANY,
    ONE,
    PAGING,
    TEXT,
    answer,
    body_doc,
    current_principal,
    flat,
    id_not,
    id_segment,
    query,
    query_doc,
    read_object,
)
from agentfolio.app.registry import Command, Principal
from agentfolio.app.registry.inputs import INSTANCE_SORT_FIELDS

router = APIRouter(prefix="/api/v1/agent_instance", tags=["agent instances"])


@router.post("/register", summary="Register an agent instance (flat body)", responses=ONE,
             openapi_extra=body_doc("{agent_id?, environment_id?, agent_version, agent_schema_version?, "
                                    "update_current_version?, id?, external_identifier?, purpose?, session_id?, "
                                    "idempotency_key?}", wrapped=False, details=details_schema(InstanceRegisterBody),
                                    # With an account token: the agent by id, or by name (found or made).
                                    any_of=[{"required": ["agent_id"], "properties": {"agent_id": TEXT}},
                                            {"required": ["agent_version"], "properties": {"agent_version": {
                                                "type": "object", "required": ["name"],
                                                "properties": {"name": TEXT}}}}]))
async def register(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    fields, key = flat(await read_object(request))
    return await answer(request, principal, parse.instance_register, fields, key)


@router.get("", summary="List agent instances", responses=MANY,
            openapi_extra=query_doc("agent_id", "status", "environment_id", "session_id", "include_risk_level",
                                    *PAGING, sortable=INSTANCE_SORT_FIELDS))
async def list_instances(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.instance_list, query(request))


@router.get("/" + id_segment("agent_instance_id", "register"), summary="Get an agent instance", responses=ONE,
            openapi_extra=query_doc("include_risk_level"))
async def get_instance(request: Request, agent_instance_id: str = id_not("register"), *,
                       principal: Principal = Depends(current_principal)) -> Response:
    return await answer(request, principal, parse.instance_get,
                        {**query(request), "agent_instance_id": agent_instance_id})


async def _action(request: Request, principal: Principal, agent_instance_id: str,
                  read: Callable[[Mapping[str, Any]], Command]) -> Response:
    fields, key = flat(await read_object(request))
    return await answer(request, principal, read, {**fields, "agent_instance_id": agent_instance_id}, key)


@router.post("/{agent_instance_id}/start", summary="Start an instance", responses=ONE,
             openapi_extra=body_doc("{timestamp?: ISO 8601 | null, idempotency_key?}", required=False))
async def start(request: Request, agent_instance_id: str,
                principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_instance_id, parse.instance_start)


@router.post("/{agent_instance_id}/finish", summary="Finish an instance", responses=ONE,
             openapi_extra=body_doc("{status?: complete|failed|cancelled, timestamp?, idempotency_key?}",
                                    required=False))
async def finish(request: Request, agent_instance_id: str,
                 principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_instance_id, parse.instance_finish)


@router.post("/{agent_instance_id}/record_quality", summary="Record (or remove) a quality payload", responses=ONE,
             openapi_extra=body_doc("{name, payload: object | null, idempotency_key?}", needs=("name",), wrapped=False))
async def record_quality(request: Request, agent_instance_id: str,
                         principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_instance_id, parse.instance_record_quality)


@router.post("/{agent_instance_id}/terminate", summary="Stop a running instance (the SDK sees it and stops)",
             responses=ONE, openapi_extra=body_doc("{reason?, idempotency_key?}", required=False))
async def terminate(request: Request, agent_instance_id: str,
                    principal: Principal = Depends(current_principal)) -> Response:
    return await _action(request, principal, agent_instance_id, parse.instance_terminate)
