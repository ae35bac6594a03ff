"""What a load balancer and Prometheus ask a server: ``/healthz``, ``/readyz``, ``/metrics``.

``/healthz``: the process answers (200) — restart it when it does not.
``/readyz``: it can serve (200) — the database answers at a schema this server runs on,
the blob store answers, and it is not shutting down; else 503 with what is wrong, so
the load balancer sends traffic elsewhere meanwhile.  Neither needs a token, and
neither says more than which part is wrong.
``/metrics``: Prometheus' text format, for the clients :func:`may_read_metrics` allows.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio import _deadline
from agentfolio.api.errors import error_response, json_response
from agentfolio.server.metrics import exposition, may_read_metrics

__all__ = ["READY_TIMEOUT", "router"]

#: Seconds /readyz waits for the database and the blob store before calling them unreachable.
READY_TIMEOUT = 5.0

router = APIRouter(include_in_schema=False)


@router.api_route("/healthz", methods=["GET", "HEAD"])
async def healthz() -> Response:
    return json_response({"status": "ok"})


@router.api_route("/readyz", methods=["GET", "HEAD"])
async def readyz(request: Request) -> Response:
    if _deadline.shutting_down():
        problems = ["shutting down"]
    else:
        try:
            problems = await asyncio.wait_for(run_in_threadpool(request.app.state.folio.readiness_problems),
                                              READY_TIMEOUT)
        except TimeoutError:
            problems = [f"no answer from the database or the blob store within {READY_TIMEOUT:g} s"]
    if problems:
        return error_response(503, "not_ready", "; ".join(problems), headers={"Retry-After": "5"})
    return json_response({"status": "ready"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    if not may_read_metrics(request, request.app.state.settings.metrics_token):
        return error_response(403, "not_permitted", "metrics are served to this machine (loopback) or to "
                                                    "requests bearing AGENTFOLIO_METRICS_TOKEN")
    body, media_type = await run_in_threadpool(exposition)
    return Response(body, media_type=media_type, headers={"Cache-Control": "no-store"})
