"""The service: ``create_app(settings)`` opens the store and mounts each area's router.

Adding an area: write ``agentfolio/api/<area>.py`` with an ``APIRouter`` whose routes
depend on :func:`agentfolio.api.auth.current_account` and raise
:class:`agentfolio.api.errors.ApiError` (or a ``StoreError``), and add it to ``ROUTERS``.
The error envelope, body bounds and OpenAPI fix-ups apply to it as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator

from fastapi import APIRouter, FastAPI
from starlette.concurrency import run_in_threadpool

from agentfolio.api import registry, render, sessions
from agentfolio.api.body import BodyLimitMiddleware
from agentfolio.api.errors import UnexpectedErrorMiddleware, install_error_handlers, install_openapi
from agentfolio.settings import Settings
from agentfolio.store import Store

log = logging.getLogger("agentfolio.api")

ROUTERS: list[APIRouter] = [sessions.router, render.router, *registry.routers]
API_VERSION = "1.0.0"


def create_app(settings: Settings | None = None, *, store: Store | None = None, viewer: bool = True,
               viewer_account: object = None) -> FastAPI:
    """``viewer``: mount the web viewer at ``/`` (``agentfolio.web``); with
    ``viewer_account`` it shows that account without asking for a token (the demo)."""
    settings = settings or Settings.from_env()
    owned = store is None
    store = store or Store.open(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = []
        if settings.session_ttl > 0:
            tasks.append(asyncio.create_task(_expire_forever(store)))
        if settings.blob_sweep_interval > 0:
            tasks.append(asyncio.create_task(_sweep_blobs_forever(store, settings.blob_sweep_interval)))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if owned:
                store.close()

    app = FastAPI(title="agentfolio", version=API_VERSION, lifespan=lifespan,
                  description="Store, search, convert and validate the records AI agents leave behind. "
                              "Every request needs `Authorization: Bearer <token>`; errors are "
                              '`{"status": "error", "code": ..., "message": ...}`.')
    app.state.store = store
    app.state.settings = settings
    for router in ROUTERS:
        app.include_router(router)
    if viewer:
        from agentfolio.web.app import create_web_router

        app.include_router(create_web_router(store=store, account=viewer_account))
    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(UnexpectedErrorMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    return app


async def _expire_forever(store: Store) -> None:
    interval = max(1.0, min(3600.0, store.settings.session_ttl / 10))
    while True:
        try:
            removed = await run_in_threadpool(store.sessions.expire)
            if removed:
                log.info("expired %d idle session(s)", removed)
        except Exception:  # keep serving; the next round retries
            log.exception("expiring idle sessions failed")
        await asyncio.sleep(interval)


async def _sweep_blobs_forever(store: Store, interval: float) -> None:
    """Collect the blobs nothing points at; with several server processes on one
    PostgreSQL database, one sweeps at a time and the others skip that round."""
    while True:
        await asyncio.sleep(interval)
        try:
            swept = await run_in_threadpool(store.sweep_blobs)
            if swept.deleted or swept.moved:
                log.info("blob sweep: removed %d unreferenced blob(s), moved %d to content keys",
                         swept.deleted, swept.moved)
        except Exception:  # keep serving; the next round retries
            log.exception("sweeping the blob store failed")


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory agentfolio.api.app:app_from_env``."""
    return create_app(Settings.from_env())
