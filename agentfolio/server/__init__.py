"""The server ``agentfolio serve`` runs: the HTTP API under ``/api/v1`` and the viewer at
``/``, over one :class:`agentfolio.app.Agentfolio`, with what a process that serves owns:
the background jobs (expiring idle sessions and old opened files, collecting unreferenced
blobs; :mod:`agentfolio.app.jobs`), the allocator's arenas it shares (:mod:`.memory`),
health and readiness (:mod:`.health`), metrics
(:mod:`.metrics`) and its logs (:mod:`agentfolio._logs`).

``create_server(settings)`` builds it; ``uvicorn --factory agentfolio.server:app_from_env``
serves it from the environment's settings.  Any number of servers (and workers) on one
database and blob store behave as one: everything a request leaves behind for the next is
in the store, and each background job runs on one server per period.

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

from agentfolio import _deadline, _logs
from agentfolio.api.app import API_DESCRIPTION, API_VERSION, install_api
from agentfolio.app import Agentfolio
from agentfolio.app.jobs import Job, background_jobs, run_if_due
from agentfolio.server import health, memory
from agentfolio.server.metrics import BACKGROUND_JOB_RUNS, MetricsMiddleware
from agentfolio.settings import Settings

__all__ = ["app_from_env", "create_server"]

log = logging.getLogger("agentfolio.server")


def create_server(settings: Settings | None = None, *, folio: Agentfolio | None = None, viewer: bool = True,
                  viewer_account: Any = None) -> FastAPI:
    """``folio``: serve this application (else one is opened from ``settings`` and closed
    on shutdown). ``viewer``: mount the web viewer at ``/``; with ``viewer_account`` it
    shows that account without asking for a token (the demo)."""
    memory.limit_arenas()  # before the request threads start
    owned = folio is None
    if folio is None:
        folio = Agentfolio.open(settings or Settings.from_env())
    settings = folio.settings
    application = folio

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(_run_forever(application, job)) for job in background_jobs(application)]
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
    app.include_router(health.router)
    install_api(app, max_body_bytes=settings.max_body_bytes)
    if viewer:
        from agentfolio.web.app import create_web_router

        app.include_router(create_web_router(folio=folio, account=viewer_account))
    app.add_middleware(MetricsMiddleware)
    return app


async def _run_forever(folio: Agentfolio, job: Job) -> None:
    """Ask for ``job`` now and then; the store gives it to one server per period."""
    pause = max(0.5, min(job.period / 2, 30.0))
    while True:
        try:
            ran, line = await run_in_threadpool(run_if_due, folio, job)
            BACKGROUND_JOB_RUNS.labels(job.name, "ran" if ran else "skipped").inc()
            if line:
                log.info("%s", line)
        except Exception:  # keep serving; the next round retries
            BACKGROUND_JOB_RUNS.labels(job.name, "failed").inc()
            log.exception("background job %s failed", job.name)
        await asyncio.sleep(pause)


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory agentfolio.server:app_from_env`` (and each worker of
    ``agentfolio serve --workers N``)."""
    settings = Settings.from_env()
    if settings.log_format == "json":
        _logs.configure(logging.getLevelName(logging.getLogger("uvicorn").getEffectiveLevel()).lower(), "json")
    server = create_server(settings)
    memory.freeze_start_up()  # this process serves: its start-up objects live as long as it does
    return server
