"""Durations and moments as people read them, the same in the terminal and the viewer."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["duration_label", "moment_label", "offset_label", "span_duration_label"]


def duration_label(us: float | None) -> str:
    """A duration in microseconds for people: µs, ms, s, then minutes and hours."""
    if us is None:
        return "—"
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 100_000:
        return f"{us / 1000:.1f} ms"
    if us < 1_000_000:
        return f"{us / 1000:.0f} ms"
    if us < 60_000_000:
        return f"{us / 1_000_000:.2f} s"
    minutes, seconds = divmod(int(us // 1_000_000), 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    return f"{minutes // 60}h {minutes % 60:02d}m"


def offset_label(us: float | None) -> str:
    """How long after the start of its trace something began: ``0``, ``+1.20 s``…"""
    if us is None:
        return "—"
    return "0" if us == 0 else "+" + duration_label(us)


def span_duration_label(started_us: int | None, finished_us: int | None) -> str:
    """How long a span took, or that it has not started or is still running."""
    if started_us is None:
        return "not started"
    if finished_us is None:
        return "running"
    return duration_label(finished_us - started_us)


def moment_label(us: int | None) -> str:
    """A moment in microseconds since the epoch: ``2026-01-05 10:00:00.000 UTC``."""
    if us is None:
        return ""
    try:
        moment = datetime.fromtimestamp(us / 1_000_000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(us)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} UTC"
