"""Background jobs shared by every server on one database: each period, one server runs each job.

A job has a row in ``background_jobs`` with a lease.  :meth:`Jobs.claim` takes the job
when the lease has run out, with one conditional ``UPDATE … WHERE lease_until <= now``:
PostgreSQL re-checks that condition on the row as the first claimant committed it, and
SQLite runs write transactions one at a time, so of any number of servers asking at once
exactly one gets it, and the others skip until the lease runs out again.
:meth:`Jobs.finish` starts the next period when the run ends.  A server that dies
mid-run holds the job only until its lease runs out; a job that runs longer than its
lease may then run beside its next claimant, so the work a job does must stay correct
run twice at once (expiry deletes what is expired; the blob sweep has its own lock).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.tables import background_jobs

__all__ = ["JobState", "Jobs", "runner_name"]


def runner_name() -> str:
    """This process, as a job's ``runner``: host and process id."""
    return f"{socket.gethostname()[:150]}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class JobState:
    name: str
    lease_until: float
    runner: str | None
    started_at: float | None
    finished_at: float | None
    runs: int


class Jobs:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def claim(self, name: str, lease: float, *, runner: str | None = None, now: float | None = None) -> bool:
        """Take job ``name`` for ``lease`` seconds if no server holds it; whether this one got it."""
        now = time.time() if now is None else now
        runner = runner or runner_name()
        with write_transaction(self.engine) as connection:
            insert = (postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert)(background_jobs)
            connection.execute(insert.values(name=name, lease_until=0.0, runs=0)
                               .on_conflict_do_nothing(index_elements=[background_jobs.c.name]))
            taken = connection.execute(
                sa.update(background_jobs)
                .where(background_jobs.c.name == name, background_jobs.c.lease_until <= now)
                .values(lease_until=now + lease, runner=runner, started_at=now, finished_at=None,
                        runs=background_jobs.c.runs + 1))
            return taken.rowcount == 1

    def finish(self, name: str, period: float, *, runner: str | None = None, now: float | None = None) -> None:
        """The run that claimed ``name`` ended: nobody takes it again for ``period`` seconds."""
        now = time.time() if now is None else now
        with write_transaction(self.engine) as connection:
            connection.execute(sa.update(background_jobs)
                               .where(background_jobs.c.name == name,
                                      background_jobs.c.runner == (runner or runner_name()))
                               .values(finished_at=now, lease_until=now + period))

    def state(self, name: str) -> JobState | None:
        with read_transaction(self.engine) as connection:
            row = connection.execute(sa.select(background_jobs).where(background_jobs.c.name == name)).first()
        return JobState(row.name, row.lease_until, row.runner, row.started_at, row.finished_at, row.runs) \
            if row else None
