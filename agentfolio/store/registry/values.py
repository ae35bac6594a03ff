"""Values and field checks shared by the registry's operations: errors, outcomes,
principals, timestamps, JSON, and the per-field readers of an operation's input."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

import orjson

from agentfolio import _json
from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.timestamps import parse_timestamp
from agentfolio.store.accounts import Account


DEPLOYMENT_TOKEN_PREFIX = "afd_"
MAX_KEY_CHARS = 64
MAX_BULK_KEY_CHARS = 128
MAX_BULK_ITEMS = 10_000
MAX_PARENT_CHARS = 200
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: HTTP status for each error code (docs/prefactor-api.md §3).
STATUS_FOR_CODE = {
    "bad_request": 400, "invalid_value": 422, "required_value": 422, "not_authenticated": 401,
    "bad_authtoken": 401, "not_permitted": 403, "not_found": 404, "invalid_action": 409,
    "idempotency_key_already_used": 409, "not_implemented": 501, "unexpected": 500, "unknown": 500,
}


# --------------------------------------------------------------------------- values


class OpError(Exception):
    """A refused operation: HTTP status, seed error code, message, and per-field errors."""

    def __init__(self, code: str, message: str, *, errors: Mapping[str, str] | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = dict(errors) if errors else None
        self.status = status or STATUS_FOR_CODE.get(code, 400)

    @classmethod
    def from_registry(cls, error: RegistryError) -> "OpError":
        return cls(error.code, error.message, errors=error.errors)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": "error", "code": self.code, "message": self.message}
        if self.errors:
            body["errors"] = self.errors
        return body


def not_found(kind: str, value: object) -> OpError:
    shown = value if isinstance(value, str) and len(value) <= 64 else "that id"
    return OpError("not_found", f"no {kind} {shown!r} in this account" if shown != "that id"
                   else f"no such {kind} in this account")


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an account token (whole account) or a deployment token (one agent
    in one environment)."""

    account: Account
    scope: str = "account"
    deployment_id: str | None = None
    agent_id: str | None = None
    environment_id: str | None = None


@dataclass(frozen=True, slots=True)
class AccountInfo:
    account_pk: int
    id: str
    partition: int
    default_environment_id: str


def now_us() -> int:
    return time.time_ns() // 1000


def to_us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def fmt(us: int | None) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (registry.timestamps.format_timestamp's spelling), fast."""
    if us is None:
        return None
    seconds, micros = divmod(us, 1_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{micros:06d}Z")


def dumps(value: Any) -> bytes:
    return _json.dumps(value)


def loads(data: bytes | None) -> Any:
    return None if data is None else _json.loads(data)


def body_hash(fields: Mapping[str, Any]) -> str:
    canonical = {k: v for k, v in fields.items() if k != "idempotency_key"}
    return hashlib.sha256(_json.dumps(canonical, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


def _problem(field: str, code: str, message: str) -> OpError:
    return OpError(code, f"{field}: {message}", errors={field: message})


def _text(fields: Mapping[str, Any], key: str, *, required: bool = False, limit: int = 255,
          path: str | None = None) -> str | None:
    value = fields.get(key)
    name = path or key
    if value is None:
        if required:
            raise _problem(name, "required_value", "is required")
        return None
    if not isinstance(value, str):
        raise _problem(name, "invalid_value", f"must be a string, found {type(value).__name__}")
    if required and not value.strip():
        raise _problem(name, "invalid_value", "must not be empty")
    if "\x00" in value:
        raise _problem(name, "invalid_value", "must not contain NUL characters")
    if len(value) > limit:
        raise _problem(name, "invalid_value", f"is {len(value):,} characters, over the {limit:,}-character limit")
    return value


def _object(fields: Mapping[str, Any], key: str, *, nullable: bool = True) -> dict[str, Any] | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _problem(key, "invalid_value", f"must be a JSON object{' or null' if nullable else ''}")
    return value


def _when(fields: Mapping[str, Any], key: str) -> int | None:
    try:
        moment = parse_timestamp(fields.get(key), key)
    except RegistryError as error:
        raise OpError.from_registry(error) from None
    return None if moment is None else to_us(moment)


def _optional_id(fields: Mapping[str, Any], key: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    problem = ids.describe_invalid(value)
    if problem:
        raise _problem(key, "invalid_value", problem)
    return value


def _flag(value: Any, key: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise _problem(key, "invalid_value", "must be true or false")
