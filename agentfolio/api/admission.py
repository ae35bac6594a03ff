"""Admission for the heavy write routes: past the process's limit a request waits briefly
for a place (a few at most, see :mod:`agentfolio.app.admission`, which holds the count),
and failing that is answered 429 ``too_many_requests`` with ``Retry-After`` before its
body is read, so nothing of it is read, parsed or stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Request

from agentfolio.api.errors import ApiError, ErrorEnvelope
from agentfolio.app.admission import RETRY_AFTER_SECONDS, AdmissionGate

__all__ = ["TOO_MANY_REQUESTS", "admitted", "bulk_gate"]

#: ``responses=`` entry of a gated route.
TOO_MANY_REQUESTS: dict[int | str, dict[str, Any]] = {429: {
    "model": ErrorEnvelope,
    "description": "Too many requests of this kind in progress on this server (code too_many_requests): "
                   "nothing was read or stored; send the same request again after Retry-After seconds",
    "headers": {"Retry-After": {"description": "Seconds to wait before sending the request again",
                                "schema": {"type": "integer", "minimum": 1}}}}}


def bulk_gate(request: Request) -> AdmissionGate:
    """This process's gate of ``POST /api/v1/bulk`` (made on first use, shared by every request)."""
    state = request.app.state
    gate = getattr(state, "bulk_gate", None)
    if gate is None:
        settings = state.settings
        gate = state.bulk_gate = AdmissionGate(settings.bulk_queue_size, waiters=settings.bulk_waiters,
                                               wait_seconds=settings.bulk_wait_ms / 1000)
    return gate


@asynccontextmanager
async def admitted(gate: AdmissionGate) -> AsyncIterator[None]:
    """Hold a place of ``gate`` for the block, after waiting for one as the gate allows;
    raise the 429 when there is none.  Enter it before the body is read."""
    if not await gate.enter():
        raise ApiError(429, "too_many_requests",
                       f"this server is busy with {gate.limit} requests like this one; nothing was stored: "
                       f"send it again in {RETRY_AFTER_SECONDS} s",
                       headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    try:
        yield
    finally:
        gate.release()
