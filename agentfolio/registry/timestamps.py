"""Timestamps as the Prefactor API and its SDKs exchange them.

Clients send ISO 8601 strings in several spellings: the Python SDK sends
``datetime.isoformat()`` (``2024-01-01T00:00:00.123456+00:00``, or a naive
``2024-01-01T00:00:00`` when the caller passed a naive datetime), the TypeScript SDK
and other clients send ``…Z``, and start/finish bodies may carry ``"timestamp": null``
meaning "now".  We accept all of them, take naive values as UTC, and always answer in
one canonical spelling, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, so that string order is time
order for every reader (the open dashboard compares timestamps as strings).
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentfolio.registry.errors import RegistryError, invalid


def utc_now() -> datetime:
    return datetime.now(UTC)


def parse_timestamp(value: object, field: str = "timestamp", *, default: datetime | None = None) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string; ``default`` for ``None``."""
    if value is None:
        return default
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise RegistryError(invalid(field, "must be an ISO 8601 date-time, found an empty string"))
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            shown = text if len(text) <= 40 else text[:39] + "…"
            raise RegistryError(invalid(field, f"{shown!r} is not an ISO 8601 date-time "
                                               "(expected e.g. 2024-01-01T00:00:00Z)")) from None
    else:
        raise RegistryError(invalid(field, f"must be an ISO 8601 date-time string, found {type(value).__name__}"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00, before year 1 in UTC
        raise RegistryError(invalid(field, f"{value!r} is out of range: outside years 1-9999 in UTC")) from None


def format_timestamp(value: datetime | None) -> str | None:
    """Canonical UTC spelling with microseconds and ``Z``; ``None`` stays ``None``."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
