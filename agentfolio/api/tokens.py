"""``/api/v1/api_token``: list the account's bearer tokens and revoke one (the names
Prefactor's API uses).  Deployment tokens are listed and revoked here too; a deployment
token itself may do neither (it acts only within its agent).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.auth import get_folio
from agentfolio.api.errors import ApiError, error_responses, json_response, success
from agentfolio.api.registry.common import LIST, SUCCESS, current_principal
from agentfolio.store.registry import Principal

router = APIRouter(prefix="/api/v1/api_token", tags=["tokens"])
TokenId = Path(..., description="The token's id from the listing: afk-<n> (account) or afd-<n> (deployment).",
               max_length=24)


def _account_only(principal: Principal) -> None:
    if principal.scope != "account":
        raise ApiError(403, "not_permitted", "a deployment token cannot list or revoke tokens; "
                                             "use an account token")


@router.get("", summary="List the account's tokens (account and deployment tokens, revoked ones too)",
            responses={200: LIST, **error_responses(401, 403)})
async def list_tokens(request: Request, principal: Principal = Depends(current_principal)) -> Response:
    _account_only(principal)
    found = await run_in_threadpool(get_folio(request).accounts.tokens, principal.account)
    return json_response({"status": "success", "summaries": [token.to_json() for token in found],
                          "pagination": None, "sorting": None})


@router.post("/{token_id}/revoke", summary="Revoke a token: refused at once, viewer sign-ins with it end",
             responses={200: SUCCESS, **error_responses(401, 403, 404)})
async def revoke_token(request: Request, token_id: str = TokenId,
                       principal: Principal = Depends(current_principal)) -> Response:
    _account_only(principal)
    revoked = await run_in_threadpool(get_folio(request).accounts.revoke_token, principal.account, token_id)
    return success(revoked.to_json())
