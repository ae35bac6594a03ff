"""Prometheus metrics at ``/metrics``: requests, latency, ingest queue depth, rejected ingest
batches, background job runs.

One process (``agentfolio serve``): the metrics live in the process.  Several workers
(``agentfolio serve --workers N``): each worker writes its values to files in
``PROMETHEUS_MULTIPROC_DIR`` (the command sets it to a fresh folder when unset), and
whichever worker answers ``/metrics`` adds them up (``prometheus_client``'s multi-process
mode); gauges count only live workers.  Separate servers behind a load balancer are
scraped one by one, as Prometheus does.

Who may read them (:func:`may_read_metrics`): clients on the server's own machine
(loopback, not forwarded by a proxy) or, with ``AGENTFOLIO_METRICS_TOKEN`` set, a
request bearing it.  Route labels are route templates (``/api/v1/sessions/{session_id}``),
never raw paths, so the number of series stays bounded whatever clients send.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import time
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentfolio._deadline import process_alive

__all__ = ["BACKGROUND_JOB_RUNS", "MetricsMiddleware", "exposition", "may_read_metrics"]

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: The routes whose requests are ingest batches (OTLP and the registry's bulk).
INGEST_PATHS = {"/v1/traces": "otlp", "/api/v1/bulk": "bulk"}
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")

REQUESTS = Counter("agentfolio_http_requests", "HTTP requests answered, by method, route template and status.",
                   ["method", "route", "status"])
LATENCY = Histogram("agentfolio_http_request_duration_seconds",
                    "Seconds from a request's start to the end of its answer, by method and route template.",
                    ["method", "route"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
INGEST_QUEUE = Gauge("agentfolio_ingest_queue_depth",
                     "Ingest requests (OTLP and bulk) this server holds now: being read, waiting to be "
                     "written or writing.", multiprocess_mode="livesum")
REJECTED = Counter("agentfolio_ingest_rejected_batches",
                   "Ingest requests (OTLP and bulk) answered with an error, by endpoint and status "
                   "(429 and 503: back-pressure; 4xx: bad input).", ["endpoint", "status"])
BACKGROUND_JOB_RUNS = Counter("agentfolio_background_job_runs",
                              "Background jobs asked for by this server, by job and outcome "
                              "(ran: this server took it; skipped: another had it this period; failed).",
                              ["job", "outcome"])


class MetricsMiddleware:
    """Counts and times every HTTP request of the app it wraps (API and viewer)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        ingest = INGEST_PATHS.get(scope.get("path", ""))
        if ingest:
            INGEST_QUEUE.inc()

        async def tracked(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        finally:
            if ingest:
                INGEST_QUEUE.dec()
            method = scope.get("method", "")
            method = method if method in METHODS else "other"
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            REQUESTS.labels(method, route, str(status)).inc()
            LATENCY.labels(method, route).observe(time.perf_counter() - started)
            if ingest and status >= 400:
                REJECTED.labels(ingest, str(status)).inc()


def _loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def may_read_metrics(request: Request, token: str | None) -> bool:
    """A request bearing the metrics token, or one from this machine that no proxy forwarded."""
    if token:
        scheme, _, offered = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(offered.strip().encode(), token.encode()):
            return True
    client = request.client.host if request.client else None
    return _loopback(client) and not any(request.headers.get(name) for name in FORWARDING_HEADERS)


_DEAD_GAUGE = re.compile(r"gauge_live[a-z]*_([0-9]+)\.db")


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format, and its content type."""
    folder = os.environ.get(MULTIPROCESS_ENV)
    if not folder:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    from prometheus_client import multiprocess

    for path in Path(folder).glob("gauge_live*_*.db"):  # workers that exited count no more
        match = _DEAD_GAUGE.fullmatch(path.name)
        if match and not process_alive(int(match[1])):
            multiprocess.mark_process_dead(int(match[1]), folder)  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, folder)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST

