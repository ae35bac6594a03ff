"""The background work a server does now and then, shared by every server on one store.

Each job has a period.  Every server asks for each job now and then
(:func:`run_if_due`); the store gives it to one of them once per period
(:class:`agentfolio.store.jobs.Jobs`), so three servers expire sessions once per period,
not three times, and a server that stops leaves its jobs to the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio

__all__ = ["SPANS_BY_TIME_PERIOD", "VIEWER_FILES_PERIOD", "Job", "background_jobs", "run_if_due"]

#: Seconds between two rounds forgetting the viewer's opened files past their lifetime.
VIEWER_FILES_PERIOD = 600.0
#: Seconds between two rounds of span retention, and of making the spans table's
#: partitions ahead (PostgreSQL; two periods ahead, so an hour is plenty).
SPANS_BY_TIME_PERIOD = 3600.0


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    #: Seconds from the end of one run to the start of the next (whichever server takes it).
    period: float
    #: Does the work; a line for the log when it did something, else None.
    work: Callable[[], str | None]


def background_jobs(folio: Agentfolio) -> list[Job]:
    """The jobs the settings ask for: expiring idle sessions (``AGENTFOLIO_SESSION_TTL``),
    sweeping unreferenced blobs (``AGENTFOLIO_BLOB_SWEEP_INTERVAL``), forgetting old
    opened files, removing old spans (``AGENTFOLIO_SPAN_RETENTION_DAYS``) and, on
    PostgreSQL, making the spans table's partitions ahead (``AGENTFOLIO_SPAN_PARTITION_DAYS``)."""
    settings = folio.settings
    jobs = []
    if settings.session_ttl > 0:
        def expire_sessions() -> str | None:
            removed = folio.sessions.expire()
            return f"expired {removed} idle session(s)" if removed else None

        jobs.append(Job("expire-sessions", max(1.0, min(3600.0, settings.session_ttl / 10)), expire_sessions))
    if settings.blob_sweep_interval > 0:
        def sweep_blobs() -> str | None:
            swept = folio.sweep_blobs()
            if swept.deleted or swept.moved:
                return f"blob sweep: removed {swept.deleted} unreferenced blob(s), moved {swept.moved} to content keys"
            return None

        jobs.append(Job("sweep-blobs", float(settings.blob_sweep_interval), sweep_blobs))

    def expire_viewer_files() -> str | None:
        removed = folio.viewer_files.expire()
        return f"forgot {removed} opened file(s) past their lifetime" if removed else None

    jobs.append(Job("expire-viewer-files", VIEWER_FILES_PERIOD, expire_viewer_files))
    spans = folio.store.spans_by_time
    if folio.store.engine.dialect.name == "postgresql":
        def make_span_partitions() -> str | None:
            made = spans.make_partitions(time.time_ns() // 1_000_000, settings.span_partition_days)
            return f"made span partition(s) {', '.join(made)}" if made else None

        jobs.append(Job("span-partitions", SPANS_BY_TIME_PERIOD, make_span_partitions))
    if settings.span_retention_days > 0:
        def expire_spans() -> str | None:
            removed = spans.expire(time.time_ns() // 1_000_000, settings.span_retention_days)
            if not removed:
                return None
            dropped = f", dropped partition(s) {', '.join(removed.partitions)}" if removed.partitions else ""
            return (f"span retention: removed {removed.spans} span(s) older than {settings.span_retention_days} "
                    f"day(s) and {removed.traces} trace(s) left without spans{dropped}")

        jobs.append(Job("span-retention", SPANS_BY_TIME_PERIOD, expire_spans))
    return jobs


def run_if_due(folio: Agentfolio, job: Job) -> tuple[bool, str | None]:
    """Run ``job`` if no server has run it this period: whether this process ran it, and its log line."""
    jobs = folio.store.jobs
    if not jobs.claim(job.name, job.period):
        return False, None
    try:
        return True, job.work()
    finally:
        jobs.finish(job.name, job.period)
