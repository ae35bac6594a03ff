"""The server ``agentfolio serve`` runs: the HTTP API under ``/api/v1`` and the viewer at
``/``, over one :class:`agentfolio.app.Agentfolio`, with the background work a server owns
(expiring idle sessions, collecting unreferenced blobs).

``create_server(settings)`` builds it; ``uvicorn --factory agentfolio.server:app_from_env``
serves it from the environment's settings.

A shutdown is never held up by a request: SIGTERM and SIGINT first stop every check running
in a worker process (:mod:`agentfolio._deadline`; those requests answer 503 at once), then
uvicorn's graceful shutdown goes on as usual. The API and the viewer never import each other:
this module is where they meet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from agentfolio import _deadline
from agentfolio.api.app import API_DESCRIPTION, API_VERSION, install_api
from agentfolio.app import Agentfolio
from agentfolio.settings import Settings

__all__ = ["app_from_env", "create_server"]

log = logging.getLogger("agentfolio.server")


def create_server(settings: Settings | None = None, *, folio: Agentfolio | None = None, viewer: bool = True,
                  viewer_account: Any = None) -> FastAPI:
    """``folio``: serve this application (else one is opened from ``settings`` and closed
    on shutdown). ``viewer``: mount the web viewer at ``/``; with ``viewer_account`` it
    shows that account without asking for a token (the demo)."""
    owned = folio is None
    if folio is None:
        folio = Agentfolio.open(settings or Settings.from_env())
    settings = folio.settings
    application = folio

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = []
        if settings.session_ttl > 0:
            tasks.append(asyncio.create_task(_expire_forever(application)))
        if settings.blob_sweep_interval > 0:
            tasks.append(asyncio.create_task(_sweep_blobs_forever(application, settings.blob_sweep_interval)))
        # OTel conversations queued by any server (or left by one that stopped) are taken
        # in here too: every server drains the one queue.
        conversations = application.conversation_worker()
        conversations.start()
        # uvicorn has installed its signal handlers by now; ours run first.
        restore_signals = _deadline.cancel_on_shutdown_signals()
        _deadline.reset_after_shutdown()
        warming = asyncio.create_task(asyncio.to_thread(_deadline.warm_up))
        try:
            yield
        finally:
            restore_signals()
            with contextlib.suppress(Exception):
                await warming
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await asyncio.to_thread(conversations.stop)
            if owned:
                application.close()

    app = FastAPI(title="agentfolio", version=API_VERSION, lifespan=lifespan, description=API_DESCRIPTION)
    app.state.folio = folio
    app.state.settings = settings
    install_api(app, max_body_bytes=settings.max_body_bytes)
    if viewer:
        from agentfolio.web.app import create_web_router

        app.include_router(create_web_router(folio=folio, account=viewer_account))
    return app


async def _expire_forever(folio: Agentfolio) -> None:
    interval = max(1.0, min(3600.0, folio.settings.session_ttl / 10))
    while True:
        try:
            removed = await run_in_threadpool(folio.sessions.expire)
            if removed:
                log.info("expired %d idle session(s)", removed)
        except Exception:  # keep serving; the next round retries
            log.exception("expiring idle sessions failed")
        await asyncio.sleep(interval)


async def _sweep_blobs_forever(folio: Agentfolio, interval: float) -> None:
    """Collect the blobs nothing points at; with several server processes on one
    PostgreSQL database, one sweeps at a time and the others skip that round."""
    while True:
        await asyncio.sleep(interval)
        try:
            swept = await run_in_threadpool(folio.sweep_blobs)
            if swept.deleted or swept.moved:
                log.info("blob sweep: removed %d unreferenced blob(s), moved %d to content keys",
                         swept.deleted, swept.moved)
        except Exception:  # keep serving; the next round retries
            log.exception("sweeping the blob store failed")


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory agentfolio.server:app_from_env``."""
    return create_server(Settings.from_env())
