"""One error envelope for the whole service: ``{"status": "error", "code": ..., "message": ...}``.

Success answers are ``{"status": "success", "details": ...}`` (a stored document is
answered as itself).  Codes: bad_request, bad_authtoken, not_authenticated,
not_permitted, not_found, invalid_value, required_value, idempotency_key_already_used,
plus version_conflict (412: a stale If-Match), already_exists (409), not_representable (409: a
session whose content the asked format cannot hold now) and
payload_too_large (413).  A validation failure may add ``pointer`` (RFC 6901, into the
posted document) and ``problems`` (every violation found).

Nothing reaches a client as a traceback or a bare 500 page: unknown failures are
``internal_error`` in the same envelope, answered by :class:`UnexpectedErrorMiddleware`
inside the app so the server keeps the connection open.  A full disk (the blob folder or
the database) is 507 ``insufficient_storage``: the transaction rolled back, nothing was
stored, nothing already stored was touched.  A database that stays busy past its wait
(another writer holds SQLite's lock) or that refuses or drops the work is 503
``service_unavailable`` with ``Retry-After``: that transaction rolled back too.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeAlias

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentfolio import _json
from agentfolio.app.registry.errors import RegistryRefusal
from agentfolio.errors import AgentfolioError
from agentfolio.formats.errors import Problem

log = logging.getLogger("agentfolio.api")

# The status each domain error code is answered with; codes not listed are 400s.
STATUS_FOR_CODE = {"not_found": 404, "already_exists": 409, "invalid_value": 400, "version_conflict": 412,
                   "bad_request": 400, "not_permitted": 403, "too_complex": 422, "payload_too_large": 413,
                   "service_unavailable": 503, "not_representable": 409,
                   "insufficient_storage": 507}
#: HTTP status of each registry refusal code (the Prefactor API's; docs/prefactor-api.md §3).
REGISTRY_STATUS = {
    "bad_request": 400, "invalid_value": 422, "required_value": 422, "not_authenticated": 401,
    "bad_authtoken": 401, "not_permitted": 403, "not_found": 404, "invalid_action": 409,
    "idempotency_key_already_used": 409, "conflict": 409, "not_implemented": 501, "unexpected": 500,
}
HTTP_CODES = {400: "bad_request", 401: "not_authenticated", 403: "not_permitted", 404: "not_found",
              405: "bad_request", 406: "bad_request", 409: "already_exists", 411: "required_value",
              412: "version_conflict", 413: "payload_too_large", 415: "bad_request", 428: "required_value",
              507: "insufficient_storage"}
STORAGE_FULL = "the server's storage is full: nothing was stored; retry when space has been freed"


def storage_full(error: BaseException) -> bool:
    """Whether a failure is a full disk: the blob store's (ENOSPC, EDQUOT), SQLite's
    (SQLITE_FULL) or PostgreSQL's (SQLSTATE 53100 disk_full)."""
    for current in _causes(error):
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if getattr(current, "sqlite_errorcode", None) == 13:  # SQLITE_FULL
            return True
        if getattr(current, "sqlstate", None) == "53100":
            return True
    return False


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error, then what it wraps (a driver's error under SQLAlchemy's) and what caused it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__


#: SQLite's primary result codes for a database another connection holds
#: (SQLITE_BUSY, SQLITE_LOCKED), and PostgreSQL's SQLSTATEs (and classes) for a server
#: that cannot take the work now: a connection failure, too many connections or too little
#: memory, a lock or statement timeout, a shutdown, a deadlock or serialization victim.
_SQLITE_BUSY = (5, 6)
_PG_BUSY_CLASSES = ("08", "53", "57")
_PG_BUSY_STATES = ("55P03", "40P01", "40001")
DATABASE_BUSY = "the database cannot take this request now (busy or restarting): nothing was stored; retry later"
#: Seconds a client is asked to wait after a busy database.
BUSY_RETRY_AFTER = 1


def database_busy(error: BaseException) -> bool:
    """Whether a failure is the database being busy or away rather than a bug: another
    writer held SQLite's lock past the busy timeout, or PostgreSQL refused or dropped the
    work.  The transaction rolled back, so the client may simply retry."""
    for current in _causes(error):
        if getattr(current, "connection_invalidated", False):
            return True
        code = getattr(current, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _SQLITE_BUSY:
            return True
        state = getattr(current, "sqlstate", None)
        if isinstance(state, str) and (state in _PG_BUSY_STATES or state[:2] in _PG_BUSY_CLASSES):
            return True
    return False


def unexpected_error_response(method: str, path: str, error: BaseException) -> Response:
    if storage_full(error):
        log.error("storage full on %s %s: %s", method, path, error)
        return error_response(507, "insufficient_storage", STORAGE_FULL)
    if database_busy(error):
        log.warning("database busy on %s %s: %s", method, path, error)
        return error_response(503, "service_unavailable", DATABASE_BUSY,
                              headers={"Retry-After": str(BUSY_RETRY_AFTER)})
    log.error("unexpected error on %s %s", method, path, exc_info=error)
    return error_response(500, "internal_error", "the server failed to answer this request; it was logged")


class UnexpectedErrorMiddleware:
    """Answer any exception a route let through with the error envelope, inside the app.

    Starlette's outermost handler answers too, but then re-raises, and the server closes
    the connection; here the exception ends with the answer and the connection is kept.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            if started:  # too late to answer: let the server end the response
                raise
            response = unexpected_error_response(scope.get("method", ""), scope.get("path", ""), error)
            await response(scope, receive, send)


class ProblemModel(BaseModel):
    pointer: str
    message: str


class ErrorEnvelope(BaseModel):
    status: Literal["error"] = "error"
    code: str
    message: str
    pointer: str | None = None
    problems: list[ProblemModel] | None = None


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, *, pointer: str | None = None,
                 problems: Sequence[Problem] = (), headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.pointer = pointer
        self.problems = tuple(problems)
        self.headers = headers


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_json.dumps(value), status_code=status, media_type="application/json", headers=headers)


#: The ``status`` of every success envelope, as a type for the envelope models built with ``create_model``.
SuccessStatus: TypeAlias = Literal["success"]


def success(details: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return json_response({"status": "success", "details": details}, status, headers)


def error_response(status: int, code: str, message: str, *, pointer: str | None = None,
                   problems: Sequence[Problem] = (), headers: dict[str, str] | None = None) -> Response:
    body: dict[str, Any] = {"status": "error", "code": code, "message": message}
    if pointer is not None:
        body["pointer"] = pointer
    if problems:
        body["problems"] = [problem.to_json() for problem in problems[:100]]
    return json_response(body, status, headers)


def from_domain_error(error: AgentfolioError) -> ApiError:
    """The HTTP answer for a domain error: status from its code; a version conflict
    carries the current version as the ETag so the client can retry."""
    current = getattr(error, "current", None)
    headers = {"ETag": f'"{current}"'} if error.code == "version_conflict" and current is not None else None
    return ApiError(STATUS_FOR_CODE.get(error.code, 400), error.code, error.message,
                    pointer=getattr(error, "pointer", None), problems=getattr(error, "problems", ()),
                    headers=headers)


def refusal_body(refusal: RegistryRefusal) -> dict[str, Any]:
    """A registry refusal as the Prefactor SDKs read it (``errors``: field → message)."""
    body: dict[str, Any] = {"status": "error", "code": refusal.code, "message": refusal.message}
    if refusal.errors:
        body["errors"] = refusal.errors
    return body


def refusal_response(refusal: RegistryRefusal) -> Response:
    return json_response(refusal_body(refusal), REGISTRY_STATUS.get(refusal.code, 400))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, error: ApiError) -> Response:
        return error_response(error.status, error.code, error.message, pointer=error.pointer,
                              problems=error.problems, headers=error.headers)

    @app.exception_handler(RegistryRefusal)
    async def _registry_refusal(_: Request, refusal: RegistryRefusal) -> Response:
        return refusal_response(refusal)

    @app.exception_handler(AgentfolioError)
    async def _domain_error(request: Request, error: AgentfolioError) -> Response:
        return await _api_error(request, from_domain_error(error))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, error: RequestValidationError) -> Response:
        errors = error.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
        where = ".".join(str(step) for step in first.get("loc", ()))
        code = "required_value" if first.get("type") == "missing" else "invalid_value"
        return error_response(400, code, f"{where}: {first.get('msg')}" if where else str(first.get("msg")))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
        code = HTTP_CODES.get(error.status_code, "bad_request" if error.status_code < 500 else "internal_error")
        message = error.detail if isinstance(error.detail, str) else str(error.detail)
        headers = dict(getattr(error, "headers", None) or {})
        if error.status_code == 405:
            allowed = allowed_methods(request)
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.method} is not allowed here; allowed: {', '.join(allowed)}"
        return error_response(error.status_code, code, message, headers=headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> Response:
        return unexpected_error_response(request.method, request.url.path, error)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route answers at the request's path.

    The router's own 405 names only the first route that matched the path, while a path
    such as ``/api/v1/agent`` has one route for GET and another for POST."""
    path, root = request.scope["path"], request.scope.get("root_path", "")
    path = path[len(root):] if root and path.startswith(root) else path  # as the router matches it
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        pattern = getattr(route, "path_regex", None)
        if route.methods and pattern is not None and pattern.match(path):
            methods |= route.methods
    return sorted(methods)


# -- OpenAPI: every operation documents the envelope; FastAPI's 422 becomes our 400 ------

ERROR_RESPONSE = {"description": "Error", "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: each status answered with the error envelope."""
    return {status: {"model": ErrorEnvelope, "description": _DESCRIPTIONS.get(status, "Error")}
            for status in statuses}


_DESCRIPTIONS = {400: "Bad request", 401: "Not authenticated", 403: "Not permitted", 404: "Not found",
                 409: "Already exists", 412: "Version conflict (stale If-Match)", 413: "Body too large",
                 428: "If-Match required", 507: "Storage full"}


def _not_null(schema: dict[str, Any] | None) -> None:
    """A parameter that may be left out is absent, never ``null``: an optional header or
    query value is documented as its one non-null type (a client sends no "null")."""
    branches = schema.get("anyOf") if schema else None
    if not schema or not branches:
        return
    kept = [branch for branch in branches if branch.get("type") != "null"]
    if len(kept) == 1 and len(kept) < len(branches):
        del schema["anyOf"]
        schema.update({key: value for key, value in kept[0].items() if key not in schema})


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description,
                             routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        envelope = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
        components.setdefault("ErrorEnvelope", envelope)
        components.setdefault("ProblemModel", ProblemModel.model_json_schema())
        for defs_name, defs in list(components["ErrorEnvelope"].pop("$defs", {}).items()):
            components.setdefault(defs_name, defs)
        for path in schema.get("paths", {}).values():
            for method, operation in path.items():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                for parameter in operation.get("parameters", []):
                    _not_null(parameter.get("schema"))
                responses = operation["responses"]
                if responses.get("422", {}).get("description") == "Validation Error":  # FastAPI's, not ours
                    responses.pop("422")
                responses.setdefault("400", ERROR_RESPONSE)
                if operation.get("security") is not None or schema.get("security"):
                    responses.setdefault("401", ERROR_RESPONSE)
                responses.setdefault("405", ERROR_RESPONSE)
                responses.setdefault("413", ERROR_RESPONSE)
                responses.setdefault("500", ERROR_RESPONSE)
                if method in ("post", "put", "patch", "delete"):
                    responses.setdefault("507", ERROR_RESPONSE)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
