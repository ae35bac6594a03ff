"""The HTTP API: :func:`install_api` adds every area's routes, the error envelope, the body
bound and the OpenAPI fix-ups to an app (:mod:`agentfolio.server` builds the app).

Adding an area: write ``agentfolio/api/<area>.py`` with an ``APIRouter`` whose routes
depend on :func:`agentfolio.api.auth.current_account` and raise a domain error
(:class:`agentfolio.errors.AgentfolioError`) or :class:`agentfolio.api.errors.ApiError`,
and add it to ``ROUTERS``.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from agentfolio.api import otlp, registry, render, sessions, tokens
from agentfolio.api.body import BodyLimitMiddleware
from agentfolio.api.errors import UnexpectedErrorMiddleware, install_error_handlers, install_openapi

__all__ = ["API_DESCRIPTION", "API_VERSION", "ROUTERS", "install_api"]

ROUTERS: list[APIRouter] = [sessions.router, render.router, tokens.router, *registry.routers, otlp.router]
API_VERSION = "1.0.0"
API_DESCRIPTION = ("Store, search, convert and validate the records AI agents leave behind. "
                   "Every request needs `Authorization: Bearer <token>`; errors are "
                   '`{"status": "error", "code": ..., "message": ...}`.')


def install_api(app: FastAPI, *, max_body_bytes: int) -> None:
    """Mount the API on ``app``, whose ``state.folio`` is the application it serves."""
    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(UnexpectedErrorMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
