"""Bearer-token authentication: every route that depends on :func:`current_account` sees
only its own account's data.  Tokens come from ``agentfolio token create --account NAME``."""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from agentfolio.api.errors import ApiError
from agentfolio.app import Agentfolio
from agentfolio.app.accounts import Account

bearer = HTTPBearer(auto_error=False, scheme_name="bearerAuth",
                    description="A token from `agentfolio token create --account NAME`.")


def get_folio(request: Request) -> Agentfolio:
    folio: Agentfolio = request.app.state.folio
    return folio


def bearer_token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str:
    """The request's bearer token: not_authenticated without one, bad_authtoken when the
    Authorization header is not of the Bearer form."""
    if credentials is None:
        if request.headers.get("authorization"):
            raise ApiError(401, "bad_authtoken", "the Authorization header must be 'Bearer <token>'",
                           headers={"WWW-Authenticate": "Bearer"})
        raise ApiError(401, "not_authenticated", "this request needs 'Authorization: Bearer <token>'",
                       headers={"WWW-Authenticate": "Bearer"})
    return credentials.credentials


def current_account(request: Request,
                    credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Account:
    account = get_folio(request).accounts.authenticate(bearer_token(request, credentials))
    if account is None:
        raise ApiError(401, "bad_authtoken", "the bearer token is not valid (unknown or revoked)",
                       headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return account
