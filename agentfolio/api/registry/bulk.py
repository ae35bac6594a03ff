"""``POST /api/v1/bulk``: items in order in one transaction, stop at the first error,
outputs keyed by idempotency key (docs §4.5)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.admission import TOO_MANY_REQUESTS, admitted, bulk_gate
from agentfolio.api.errors import error_responses, json_response, refusal_body
from agentfolio.api.registry.common import (
    ERROR_STATUSES,
    IDEMPOTENCY_KEY,
    body_doc,
    current_principal,
    output_body,
    read_object,
    registry,
)
from agentfolio.api.registry.parse import BULK_READERS, MAX_BULK_ITEMS, bulk_items
from agentfolio.app.registry import Principal, RegistryRefusal
from agentfolio.app.registry.fields import MAX_BULK_KEY_CHARS

router = APIRouter(prefix="/api/v1", tags=["bulk"])

BULK_OK = {"description": "Outputs keyed by idempotency key (200 even when an item failed)",
           "content": {"application/json": {"schema": {
               "type": "object", "required": ["status", "outputs"],
               "properties": {"status": {"type": "string"}, "outputs": {"type": "object"}}}}}}


#: Every item names its operation; an item's own fields go beside ``_type`` or in ``details``.
#: An unknown ``_type`` is that item's error output, as the Prefactor API answers it (not a
#: refusal of the request): the document lists the known ones as examples, not as an enum.
BULK_ITEM = {"type": "object", "required": ["_type", "idempotency_key"],
             "properties": {"_type": {"type": "string", "minLength": 1, "examples": sorted(BULK_READERS),
                                      "description": "The operation (an unknown one: that item's output is a "
                                                     "bad_request error and the run stops there)."},
                            "idempotency_key": {**IDEMPOTENCY_KEY, "maxLength": MAX_BULK_KEY_CHARS}}}


@router.post("/bulk", summary="Run many actions in one request", responses={200: BULK_OK,
                                                                            **error_responses(*ERROR_STATUSES),
                                                                            **TOO_MANY_REQUESTS},
             openapi_extra=body_doc("{items: [{_type, idempotency_key, ...fields or details}]}; each item's "
                                    "idempotency_key is its own (the outputs are keyed by it): two items "
                                    "sharing one answer 409 idempotency_key_already_used, as a key reused "
                                    "across requests does",
                                    any_of=[{"required": ["items"]}], reads_key=False,
                                    properties={"items": {"type": "array", "minItems": 1, "maxItems": MAX_BULK_ITEMS,
                                                          "items": BULK_ITEM}}))
async def bulk(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    async with admitted(bulk_gate(request)):  # before the body is read: a refused request costs nothing
        items = bulk_items(await read_object(request))
        answers = await run_in_threadpool(registry(request).bulk, principal, items)
    outputs = {item.key: refusal_body(item.answer) if isinstance(item.answer, RegistryRefusal)
               else output_body(item.answer) for item in answers}
    return json_response({"status": "success", "outputs": outputs})
