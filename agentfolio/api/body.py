"""Request bodies read with bounds: size (before and while reading) and JSON nesting depth."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentfolio.api.errors import ApiError, error_response
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import parse_json


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, "payload_too_large", f"request body is over the {limit:,}-byte limit")


class BodyLimitMiddleware:
    """Refuse a body over ``max_bytes``: at once when Content-Length says so, else as it streams."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0:
                    await error_response(400, "bad_request", "Content-Length is not a number")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    too_large = BodyTooLarge(self.max_bytes)
                    await error_response(413, too_large.code, too_large.message)(scope, receive, send)
                    return
        seen = 0
        limit = self.max_bytes

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, bounded_receive, send)


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects/arrays deeper than ``limit`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in node.values() if isinstance(child, (dict, list)))
        elif isinstance(node, list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in node if isinstance(child, (dict, list)))
    return False


def parse_body(data: bytes, *, max_depth: int) -> Any:
    if not data.strip():
        raise ApiError(400, "required_value", "the request needs a JSON body")
    try:
        value = parse_json(data)
    except FormatError as error:
        raise ApiError(400, "bad_request", error.message) from None
    if json_depth_exceeds(value, max_depth):
        raise ApiError(400, "invalid_value", f"JSON nests deeper than {max_depth} levels")
    return value
