"""Reading and writing moments in time: the one place ISO 8601 strings are parsed.

Records spell times in many ways (``…Z``, ``…z``, ``+00:00``, a space instead of ``T``,
1 to 9 fraction digits, a comma before the fraction, no offset at all).  Every layer
parses them here, so they all accept the same spellings and take a missing offset as
UTC the same way.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["EPOCH", "format_utc", "from_epoch", "iso_utc", "parse_datetime", "parse_epoch", "utc_now"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_datetime(value: object) -> datetime | None:
    """An aware datetime from an ISO 8601 string (a missing offset is UTC); None when
    ``value`` is not a string or not such a time."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > 64:
        return None
    if text[-1] in "zZ":
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_epoch(value: object) -> float | None:
    """Seconds since the Unix epoch for an ISO 8601 string, or None (see :func:`parse_datetime`)."""
    moment = parse_datetime(value)
    return None if moment is None else moment.timestamp()


def utc_now() -> datetime:
    return datetime.now(UTC)


def from_epoch(seconds: float) -> datetime | None:
    """The UTC datetime for epoch seconds, or None when it is out of range."""
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso_utc(seconds: float | None) -> str | None:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``-style ISO text ending in ``Z``."""
    if seconds is None:
        return None
    moment = from_epoch(seconds)
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def format_utc(micros: int | None) -> str | None:
    """Epoch microseconds as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: one spelling, so string
    order is time order."""
    if micros is None:
        return None
    seconds, rest = divmod(micros, 1_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{rest:06d}Z")
