"""Checks of single input values, each refusal naming its field."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentfolio.app.registry.errors import field_error, from_domain
from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.schema_versions import (
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    SchemaVersionDraft,
    normalise_schema_version,
)
from agentfolio.registry.timestamps import parse_timestamp

MAX_KEY_CHARS = 64
MAX_BULK_KEY_CHARS = 128
# The lengths of the registry's text fields, in characters: the checks here use them, and
# the API's document of each body says them (agentfolio.api.registry.bodies).
#: names, titles, external identifiers
NAME_CHARS = MAX_NAME_CHARS
#: descriptions and templates
TEXT_CHARS = MAX_TEXT_CHARS
#: ids of things kept elsewhere (owners, teams, profiles) and alert ids
REFERENCE_CHARS = 64
#: a session id, and a span's parent as given
SESSION_CHARS = 200
#: why an instance was terminated
REASON_CHARS = 2_000
#: the purposes of an instance
PURPOSES = ("live", "smoke_test", "eval")


def text(value: object, name: str, *, required: bool = False, limit: int = NAME_CHARS) -> str | None:
    """A string of at most ``limit`` characters without NUL (PostgreSQL cannot store one)."""
    if value is None:
        if required:
            raise field_error(name, "is required", code="required_value")
        return None
    if not isinstance(value, str):
        raise field_error(name, f"must be a string, found {type(value).__name__}")
    if required and not value.strip():
        raise field_error(name, "must not be empty")
    if "\x00" in value:
        raise field_error(name, "must not contain NUL characters")
    if len(value) > limit:
        raise field_error(name, f"is {len(value):,} characters, over the {limit:,}-character limit")
    return value


def given_text(value: object, name: str, *, limit: int = NAME_CHARS) -> str | None:
    """Text that may be left out (``None``) but, when given, says something."""
    return None if value is None else text(value, name, required=True, limit=limit)


def json_object(value: object, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise field_error(name, "must be a JSON object or null")
    return value


def chosen_id(value: object, name: str = "id") -> str | None:
    """An ID the caller picked for a new object (``None``: one is made)."""
    if value is None:
        return None
    problem = ids.describe_invalid(value)
    if problem:
        raise field_error(name, problem)
    return value  # type: ignore[return-value]


def flag(value: object, name: str) -> bool:
    """``true``/``false`` as JSON or as a query string spells them; absent is false."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise field_error(name, "must be true or false")


def timestamp(value: object, name: str) -> datetime | None:
    """An ISO 8601 moment (``None`` when absent)."""
    try:
        return parse_timestamp(value, name)
    except RegistryError as error:
        raise from_domain(error) from None


def idempotency_key(value: object, limit: int = MAX_KEY_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise field_error("idempotency_key", "must be a non-empty string")
    if len(value) > limit:
        raise field_error("idempotency_key", f"is {len(value)} characters, over the {limit} limit")
    if "\x00" in value:
        raise field_error("idempotency_key", "must not contain NUL characters")
    return value


def schema_version_draft(raw: object, path: str = "details") -> SchemaVersionDraft:
    """A schema version as declared (every structural problem refused, each naming its field)."""
    try:
        draft = normalise_schema_version(raw, path)
    except RegistryError as error:
        raise from_domain(error) from None
    if draft.external_identifier and "\x00" in draft.external_identifier:
        raise field_error(f"{path}.external_identifier", "must not contain NUL characters")
    return draft
