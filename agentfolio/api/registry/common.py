"""What every registry route shares: the caller (account or deployment token), reading
bodies the way the Prefactor SDKs send them, and answering outputs as Prefactor JSON.

Routes are thin: they read path, query and body into a typed input
(:mod:`agentfolio.api.registry.parse`), call the :class:`RegistryService`, and answer
its output with :func:`answer` (a refusal becomes the error body through the app's
exception handler), so a route and the matching ``/api/v1/bulk`` item answer the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from fastapi import Depends, Path, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool
from starlette.convertors import CONVERTOR_TYPES, StringConvertor, register_url_convertor
from starlette.requests import ClientDisconnect

from agentfolio import _json
from agentfolio.api.auth import bearer, bearer_token, get_folio
from agentfolio.api.body import parse_body
from agentfolio.api.errors import ApiError, error_responses, json_response
from agentfolio.app.registry import Command, Output, Page, Principal, RegistryService, SpanWritten
from agentfolio.app.registry.errors import field_error
from agentfolio.app.registry.fields import NAME_CHARS
from agentfolio.registry.listing import MAX_OFFSET, MAX_PAGE_SIZE

#: Error statuses a registry route may answer (documented for every route).
ERROR_STATUSES = (400, 401, 403, 404, 409, 422)


def registry(request: Request) -> RegistryService:
    """The served application's registry service."""
    return get_folio(request).registry


def current_principal(request: Request,
                      credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
    """The caller: an account token (``afk_…``) or a deployment token (``afd_…``)."""
    principal = registry(request).authenticate(bearer_token(request, credentials))
    if principal is None:
        raise ApiError(401, "bad_authtoken", "the bearer token is not valid (unknown or revoked)",
                       headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return principal


async def read_object(request: Request) -> dict[str, Any]:
    """The JSON body as an object; an absent body (GET-style requests, retire without a
    key) is ``{}``."""
    try:
        data = await request.body()
    except ClientDisconnect:  # gone (say, while it waited for a place): nobody hears the answer
        raise ApiError(400, "bad_request", "the client went away before its body was read") from None
    if not data or data.isspace():
        return {}
    try:
        value = _json.loads(data)  # bounded nesting (1,024) by orjson itself; tighter bound below
    except orjson.JSONDecodeError:
        value = parse_body(data, max_depth=request.app.state.settings.max_json_depth)  # says where and why
    if too_deep(value, request.app.state.settings.max_json_depth):
        raise ApiError(400, "invalid_value", f"JSON nests deeper than {request.app.state.settings.max_json_depth} "
                                             "levels")
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_value", "the request body must be a JSON object")
    return value


def too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (the root is level 1); visits
    containers only, so a bulk body of thousands of spans costs little."""
    kind = type(value)
    if kind is dict:
        children: Any = value.values()
    elif kind is list:
        children = value
    else:
        return False
    if limit <= 0:
        return True
    for child in children:
        child_kind = type(child)
        if (child_kind is dict or child_kind is list) and too_deep(child, limit - 1):
            return True
    return False


def unwrap(body: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A wrapped body's fields and idempotency key.  The key may sit beside ``details``
    (most clients) or inside it (the Python SDK's span create); a body without
    ``details`` is taken as flat."""
    details = body.get("details")
    if isinstance(details, dict):
        fields = dict(details)
        key = _given_key(body)
        inner = _given_key(fields)
        fields.pop("idempotency_key", None)
        return fields, key if key is not None else inner
    return flat(body)


def flat(body: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    fields = dict(body)
    key = _given_key(fields)
    fields.pop("idempotency_key", None)
    return fields, key


def _given_key(fields: Mapping[str, Any]) -> Any:
    """The body's idempotency key; one given as ``null`` is refused like any other
    non-string (the service checks the rest): no key is no ``idempotency_key`` at all."""
    key = fields.get("idempotency_key")
    if key is None and "idempotency_key" in fields:
        raise field_error("idempotency_key", "must be a non-empty string (leave it out for no key), found null")
    return key


def query(request: Request) -> dict[str, Any]:
    return dict(request.query_params)


def output_body(output: Output) -> dict[str, Any]:
    """An output as the Prefactor API answers it."""
    if isinstance(output, Page):
        return {"status": "success", "summaries": [item.model_dump(mode="json") for item in output.items],
                "pagination": output.pagination, "sorting": output.sorting}
    if isinstance(output, SpanWritten):
        body: dict[str, Any] = {"status": "success", "details": output.span.model_dump(mode="json")}
        if output.control is not None:
            body["control"] = output.control.model_dump(mode="json")
        return body
    return {"status": "success", "details": output.model_dump(mode="json")}


async def answer(request: Request, principal: Principal, read: Callable[[Mapping[str, Any]], Command],
                 fields: Mapping[str, Any], key: Any = None) -> Response:
    """Read ``fields`` into an input, run it (with the body's or the ``Idempotency-Key``
    header's key) and answer its output."""
    command = read(fields)
    if key is None:
        key = request.headers.get("idempotency-key")
    service = registry(request)
    output = await run_in_threadpool(lambda: service.run(principal, command, key=key))
    return json_response(output_body(output))



def id_segment(name: str, *literals: str) -> str:
    """A last path segment ``{name}`` that never takes the ``literals``: the routes of a
    sibling literal path (``/alerts/acknowledge`` beside ``/alerts/{alert_id}``), so that
    a method the literal path does not take answers 405 with its own ``Allow`` instead of
    reaching the id route (no id is ever one of those words: ids are 32-character ULIDs).
    A literal taking the same method as the id route is its own route, declared first,
    and needs no exclusion (documenting one would make "count" an invalid alert id that
    the server answers 200, at ``/alerts/count``)."""
    convertor = "not_" + "_".join(literals)
    if convertor not in CONVERTOR_TYPES:
        class NotLiteral(StringConvertor):
            regex = "(?!(?:" + "|".join(map(re.escape, literals)) + ")$)[^/]+"

        register_url_convertor(convertor, NotLiteral())
    return "{" + name + ":" + convertor + "}"


def id_not(*literals: str) -> Any:
    """The parameter of an :func:`id_segment`, documented as never being the ``literals``."""
    return Path(json_schema_extra={"not": {"enum": list(literals)}})

#: An idempotency key as the server takes it: non-empty text, at most 64 characters.
IDEMPOTENCY_KEY = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^\\x00]+$"}
# OpenAPI helpers: loose documented shapes (the SDK models are the contract; see docs/prefactor-api.md).
SUCCESS = {"description": "Success: {status: success, details: {...}}", "content": {"application/json": {
    "schema": {"type": "object", "required": ["status", "details"],
               "properties": {"status": {"type": "string", "enum": ["success"]}, "details": {"type": "object"}}}}}}
LIST = {"description": "A page: {status, summaries, pagination, sorting}", "content": {"application/json": {
    "schema": {"type": "object", "required": ["status", "summaries", "pagination", "sorting"],
               "properties": {"status": {"type": "string"}, "summaries": {"type": "array"},
                              "pagination": {"type": ["object", "null"]}, "sorting": {"type": ["object", "null"]}}}}}}

#: The responses of a route answering one object, and of one answering a page.
ONE = {200: SUCCESS, **error_responses(*ERROR_STATUSES)}
MANY = {200: LIST, **error_responses(*ERROR_STATUSES)}


#: A name or id the server takes: text with something besides spaces, without NUL. "Spaces"
#: are what Python's ``str.strip`` removes, which include the separators U+001C-U+001F and
#: U+0085 that a JSON Schema (ECMA) ``\s`` does not.
NON_BLANK = "^[^\\x00]*[^\\x00\\s\\x1c-\\x1f\\x85][^\\x00]*$"
TEXT = {"type": "string", "minLength": 1, "maxLength": NAME_CHARS, "pattern": NON_BLANK}


def body_doc(description: str, *, required: bool = True, properties: dict[str, Any] | None = None,
             needs: tuple[str, ...] = (), wrapped: bool = True,
             any_of: list[dict[str, Any]] | None = None, details: dict[str, Any] | None = None,
             reads_key: bool = True) -> dict[str, Any]:
    """A JSON object body; an ``idempotency_key`` is documented wherever one is read.
    ``details``: the schema of the operation's fields (:mod:`agentfolio.api.registry.bodies`),
    in ``details`` or beside the key when ``wrapped`` (see :func:`unwrap`), beside it only
    when not (:func:`flat`); ``needs``: for a body without such a schema, the text fields
    the server requires; ``any_of``: the alternatives of which the server needs one;
    ``reads_key``: false where the body's own ``idempotency_key`` is not read (bulk: each
    item has its own)."""
    keyed = {"idempotency_key": IDEMPOTENCY_KEY} if reads_key else {}
    schema: dict[str, Any] = {"type": "object", "description": description, "additionalProperties": True,
                              "properties": {**keyed, **(properties or {})}}
    if any_of:
        schema["anyOf"] = any_of
    fields = details
    if fields is None and needs:
        fields = {"type": "object", "required": list(needs), "properties": dict.fromkeys(needs, TEXT)}
    if fields is not None and not wrapped:
        schema["properties"].update(fields["properties"])
        schema.update({key: fields[key] for key in ("required", "allOf") if key in fields})
        if "anyOf" in fields:  # both must hold
            schema["allOf"] = [*schema.get("allOf", []), {"anyOf": fields["anyOf"]}]
    elif fields is not None:
        schema["anyOf"] = [{"required": ["details"], "properties": {"details": fields}},
                           {**fields, "not": {"required": ["details"]}}]
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": schema}}}}


WRAPPED = {"details": {"type": "object"}, "idempotency_key": IDEMPOTENCY_KEY}
PAGING = ("pagination[offset]", "pagination[page_size]", "sorting[field]", "sorting[direction]", "sorting")
#: Query parameters read as flags (``true``/``false``, also ``1``/``0``).
FLAGS = ("include_risk_level", "include_summaries", "include_counts", "include_risk_rollup")


def _query_schema(name: str, sortable: tuple[str, ...]) -> dict[str, Any]:
    """What the server takes for a query parameter (:func:`parse_page_request` for paging)."""
    if name in FLAGS:
        return {"type": "boolean"}
    if name == "acknowledged":
        return {"type": "string", "enum": ["true", "false", "1", "0", "all", "any"]}
    if name == "pagination[offset]":
        return {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}
    if name == "pagination[page_size]":
        return {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}
    if name == "sorting[field]":
        return {"type": "string", "enum": ["", *sortable], "description": "Empty: sorted by id."}
    if name == "sorting[direction]":
        return {"type": "string", "enum": ["", "asc", "desc"], "description": "Empty: ascending."}
    if name == "sorting":
        return {"type": "string", "pattern": "^([+-]?(" + "|".join(map(re.escape, sortable)) + "))?$",
                "description": "Compact sorting: a field, descending with a leading '-'."}
    return {"type": "string"}


def query_doc(*names: str, sortable: tuple[str, ...] = ()) -> dict[str, Any]:
    """Document query parameters that are read from the raw query (bracketed names), each
    with the type the server takes (``sortable``: the fields a list sorts by)."""
    return {"parameters": [{"name": name, "in": "query", "required": False, "schema": _query_schema(name, sortable)}
                           for name in names]}
