"""``POST /v1/traces``: the OTLP/HTTP trace receiver, at the path the OTLP specification
names so an exporter pointed at the server's base URL (``OTEL_EXPORTER_OTLP_ENDPOINT``)
works unchanged.

Answers follow OTLP/HTTP: ``200`` with an ``ExportTraceServiceResponse`` in the request's
encoding (``partial_success`` counting rejected spans); failures carry a
``google.rpc.Status`` body: ``400`` bad input (nothing stored), ``401`` no or bad token,
``413`` over the size limit after decompression, ``415`` not protobuf or JSON, ``429``
with ``Retry-After`` when the ingest queue is full, ``503`` with ``Retry-After`` when the
store cannot take writes now or the conversations of spans already stored are behind
by the backlog limit.  Exporters retry 429/503 and never 4xx.

The bearer token (``Authorization: Bearer …`` in the exporter's headers, e.g.
``OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>``) names one account; every
span lands in it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentfolio.api.auth import get_folio

if TYPE_CHECKING:
    from agentfolio.app.otlp import OtlpIngest
    from agentfolio.otel.decode import Encoding

# The protobuf runtime and the conversation readers load on the first export, not when
# the server starts: most servers never receive OTLP.

log = logging.getLogger("agentfolio.otlp")

router = APIRouter(tags=["opentelemetry"])

# google.rpc.Code values for the Status bodies.
_INVALID_ARGUMENT, _UNAUTHENTICATED, _RESOURCE_EXHAUSTED, _UNAVAILABLE = 3, 16, 8, 14

def ingest_of(request: Request) -> OtlpIngest:
    """The app's one ingest queue (created on first use, shared by every request)."""
    state = request.app.state
    ingest = getattr(state, "otlp_ingest", None)
    if ingest is None:
        settings = state.settings
        ingest = state.otlp_ingest = get_folio(request).otlp_ingest(
            max_bytes=settings.otlp_max_bytes, queue_size=settings.otlp_queue_size, backlog=settings.otlp_backlog)
    return ingest


def _status(encoding: Encoding, http: int, code: int, message: str,
            headers: dict[str, str] | None = None) -> Response:
    from agentfolio.otel.decode import encode_status

    body, media = encode_status(encoding, code, message)
    return Response(body, status_code=http, media_type=media, headers=headers)


# Not in this API's OpenAPI document: its contract (bodies, answers, error shape) is the
# OTLP specification's, not the JSON envelope every documented route shares.
@router.post("/v1/traces", summary="Receive OpenTelemetry traces (OTLP/HTTP)", include_in_schema=False,
             response_class=Response)
async def export_traces(request: Request) -> Response:
    from agentfolio.app.otlp import RETRY_AFTER_SECONDS, StoreUnavailable
    from agentfolio.otel.decode import (
        OtlpError,
        OtlpTooLargeError,
        OtlpUnsupportedMediaError,
        encode_response,
        media_encoding,
    )

    try:
        encoding = media_encoding(request.headers.get("content-type"))
    except OtlpUnsupportedMediaError as error:
        return _status("json", 415, _INVALID_ARGUMENT, error.message)
    account = _account(request)
    if account is None:
        return _status(encoding, 401, _UNAUTHENTICATED, "this request needs 'Authorization: Bearer <token>' "
                                                         "with a valid account token",
                       {"WWW-Authenticate": "Bearer"})
    ingest = ingest_of(request)
    if not ingest.admit():
        return _status(encoding, 429, _RESOURCE_EXHAUSTED, "the ingest queue is full; retry later",
                       {"Retry-After": str(RETRY_AFTER_SECONDS)})
    try:
        if await run_in_threadpool(ingest.saturated):
            return _status(encoding, 503, _UNAVAILABLE, "the conversations of spans already stored are being "
                           "taken in; retry later", {"Retry-After": str(RETRY_AFTER_SECONDS)})
        body = await request.body()
        result = await run_in_threadpool(ingest.export, account, body, encoding=encoding,
                                         content_encoding=request.headers.get("content-encoding"))
    except OtlpTooLargeError as error:
        return _status(encoding, 413, _INVALID_ARGUMENT, error.message)
    except OtlpUnsupportedMediaError as error:
        return _status(encoding, 415, _INVALID_ARGUMENT, error.message)
    except OtlpError as error:
        return _status(encoding, 400, _INVALID_ARGUMENT, error.message)
    except StoreUnavailable as error:
        log.warning("storing OTLP spans failed: %s", error.message)
        return _status(encoding, 503, _UNAVAILABLE, "the store cannot take spans now; retry later",
                       {"Retry-After": str(RETRY_AFTER_SECONDS)})
    finally:
        ingest.release()
    content, media = encode_response(encoding, rejected=result.rejected, message=result.message)
    return Response(content, status_code=200, media_type=media)


def _account(request: Request):  # type: ignore[no-untyped-def]
    header = request.headers.get("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return get_folio(request).accounts.authenticate(token.strip())
