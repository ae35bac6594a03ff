"""Envelope timestamps (Unix epoch milliseconds) ↔ the model's ISO 8601 strings."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from agentfolio import _json

#
# The envelope counts epoch milliseconds; the model keeps ISO 8601 strings.  An integer
# count is written with exactly three fraction digits (``…:20.123Z``), any other number
# with at least six (``…:20.123400Z``, ``…:20.000000Z`` for ``1700000000000.0``), so the
# string gives back the very number it came from, integer or float.

MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
                  r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?")


def timestamp_problem(value: Any) -> str | None:
    """Why ``value`` is not a usable envelope timestamp, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # the schema says "expected number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"timestamp {value} is not a finite number of milliseconds"
    if value < 0 or math.copysign(1.0, value) < 0:
        return f"timestamp {_number(value)} is before 1970-01-01 (Unix epoch milliseconds cannot be negative)"
    if value > MAX_MS:
        return f"timestamp {_number(value)} is after 9999-12-31 (is it in microseconds or nanoseconds?)"
    return None


def ms_to_iso(value: int | float) -> str:
    """Epoch milliseconds as an ISO 8601 UTC string that :func:`iso_to_ms` reverses exactly."""
    problem = timestamp_problem(value)
    if problem:
        raise ValueError(problem)
    if isinstance(value, int):
        seconds, millis = divmod(value, 1000)
        return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"
    exact = Decimal(repr(value))
    whole = int(exact // 1000)
    fraction = format((exact - whole * 1000) / 1000, "f")  # "0.xxxxx" or "0"
    digits = fraction.partition(".")[2].rstrip("0").ljust(6, "0")
    return (_EPOCH + timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S") + f".{digits}Z"


def iso_to_ms(text: str) -> int | float | None:
    """An ISO 8601 date-time as epoch milliseconds (an int when it is whole and written
    with at most three fraction digits), or None if it is not one.  A time without an
    offset is taken as UTC."""
    match = _ISO.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    seconds = _epoch_seconds(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
    if seconds is None:
        return None
    if sign and not zulu:
        offset = int(off_h) * 3600 + int(off_m) * 60
        if offset >= 86400:  # what datetime.timezone refuses
            return None
        seconds -= offset if sign == "+" else -offset
    whole = seconds * 1000
    if not fraction or (len(fraction) <= 3):
        return whole + int((fraction or "0").ljust(3, "0"))
    try:
        exact = Decimal(whole) + Decimal("0." + fraction) * 1000
    except InvalidOperation:
        return None
    return float(exact)


_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _epoch_seconds(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int | None:
    """Seconds since the epoch of a UTC wall time, None where ``datetime`` would refuse it.

    Integer arithmetic (days from the civil date, Hinnant's algorithm) instead of building
    datetimes: writing an envelope converts every message's time, and this is several
    times cheaper."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (year >= 1 and 1 <= month <= 12 and 1 <= day <= _DAYS_IN_MONTH[month] + (leap and month == 2)
            and hour < 24 and minute < 60 and second < 60):
        return None
    shifted = year - (month <= 2)
    era = shifted // 400
    year_of_era = shifted - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    days = era * 146097 + day_of_era - 719468
    return days * 86400 + hour * 3600 + minute * 60 + second


def _number(value: Any) -> str:
    return _json.dumps(value).decode() if isinstance(value, (int, float)) and math.isfinite(value) else str(value)
