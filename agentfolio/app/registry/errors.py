"""What the registry refuses, as errors with stable codes (the API maps them to statuses).

``errors`` maps each field to its message, the shape the Prefactor SDKs read from a
refused request.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentfolio.errors import AgentfolioError
from agentfolio.registry.errors import RegistryError

__all__ = ["BadRequest", "IdempotencyKeyReused", "InvalidAction", "InvalidValue", "NotFound", "NotPermitted",
           "RegistryRefusal", "Unexpected", "WriteConflict", "field_error", "from_domain", "not_found"]


class RegistryRefusal(AgentfolioError):
    """A registry operation refused; nothing it would have written is kept."""

    code = "bad_request"

    def __init__(self, message: str, *, errors: Mapping[str, str] | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.errors = dict(errors) if errors else None
        if code is not None:
            self.code = code


class BadRequest(RegistryRefusal):
    code = "bad_request"


class InvalidValue(RegistryRefusal):
    """A field is missing (``required_value``) or unusable (``invalid_value``)."""

    code = "invalid_value"


class NotFound(RegistryRefusal):
    code = "not_found"


class NotPermitted(RegistryRefusal):
    code = "not_permitted"


class InvalidAction(RegistryRefusal):
    """The object is not in a state that allows this (a finished span finished again)."""

    code = "invalid_action"


class IdempotencyKeyReused(RegistryRefusal):
    code = "idempotency_key_already_used"


class WriteConflict(RegistryRefusal):
    """Concurrent writes kept colliding on a unique key: retrying later may succeed."""

    code = "conflict"


class Unexpected(RegistryRefusal):
    """A bulk item failed in a way nobody refused on purpose (the failure is logged)."""

    code = "unexpected"


_BY_CODE: dict[str, type[RegistryRefusal]] = {
    "invalid_value": InvalidValue, "required_value": InvalidValue, "not_found": NotFound,
    "invalid_action": InvalidAction, "bad_request": BadRequest,
}


def from_domain(error: RegistryError) -> RegistryRefusal:
    """The refusal for a domain rule's :class:`RegistryError` (same code, message, fields)."""
    return _BY_CODE.get(error.code, RegistryRefusal)(error.message, errors=error.errors, code=error.code)


def field_error(field: str, message: str, *, code: str = "invalid_value") -> InvalidValue:
    return InvalidValue(f"{field}: {message}", errors={field: message}, code=code)


def not_found(kind: str, value: object) -> NotFound:
    if isinstance(value, str) and len(value) <= 64:
        return NotFound(f"no {kind} {value!r} in this account")
    return NotFound(f"no such {kind} in this account")
