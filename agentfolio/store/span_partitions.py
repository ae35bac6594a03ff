"""The spans table on PostgreSQL, partitioned by time (migration ``0014b_spans_by_time``).

``registry_spans`` is ``PARTITION BY RANGE (id)``: an id's first ten characters are its
time in milliseconds (``agentfolio.registry.ids``), so a range of ids is a range of time,
and the primary key (the id) holds the partition key, as PostgreSQL asks of every unique
key, with no other column.  Every span id is time-ordered, OTLP spans' too (their trace's
epoch, ``agentfolio.store.otel_epochs``).  The partitions:

* ``registry_spans_before``: every id before the first period (the spans stored before
  the table was partitioned, among others);
* ``registry_spans_p<YYYYMMDD>``: one per period (``AGENTFOLIO_SPAN_PARTITION_DAYS``)
  from its first day, created ahead of time by :func:`ensure_ahead`;
* ``registry_spans_default``: ids beyond the last period (an id a client chose in the
  future, or an OTLP span stored before epochs existed whose hash-derived time lies
  ahead).  A new partition takes the rows of its range out of it first, and attaching
  it scans it under a lock (kept short as long as it stays small).

Creating and dropping partitions takes locks on the table: each statement waits at most
:data:`LOCK_TIMEOUT` for them, and fails (to be tried again by the next run) rather than
queue every reader and writer behind it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Connection

from agentfolio.registry import ids

__all__ = ["DAY_MS", "DEFAULT", "LOCK_TIMEOUT", "TABLE", "Partition", "bound", "create", "ensure_ahead",
           "is_partitioned", "partitions", "period_start"]

DAY_MS = 86_400_000
LOCK_TIMEOUT = "5s"
TABLE = "registry_spans"
DEFAULT = "registry_spans_default"
_BOUNDS = re.compile(r"FOR VALUES FROM \((MINVALUE|'[0-9a-z]+')\) TO \((MAXVALUE|'[0-9a-z]+')\)")


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    #: Its first id (None: from the lowest) and the id past its last (None: to the highest).
    lower: str | None
    upper: str | None

    @property
    def upper_ms(self) -> int | None:
        return None if self.upper is None else ids.decode(self.upper).timestamp_ms


def bound(ms: int) -> str:
    """The lowest id of millisecond ``ms``: every id made at ``ms`` or later sorts from it."""
    return ids.encode(ms, 0, 0)


def period_start(ms: int, days: int) -> int:
    """The start of the ``days``-long period ``ms`` falls in (periods counted from the Unix epoch)."""
    length = days * DAY_MS
    return ms // length * length


def is_partitioned(connection: Connection) -> bool:
    if connection.dialect.name != "postgresql":
        return False
    return bool(connection.exec_driver_sql(
        "SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass('registry_spans'))").scalar())


def partitions(connection: Connection) -> list[Partition]:
    """The ranged partitions of the spans table, lowest first (the default one is not among them)."""
    found = []
    for name, spec in connection.exec_driver_sql(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('registry_spans')"):
        matched = _BOUNDS.fullmatch(spec)
        if matched is None:  # DEFAULT
            continue
        lower, upper = (None if value in ("MINVALUE", "MAXVALUE") else value.strip("'") for value in matched.groups())
        found.append(Partition(name, lower, upper))
    return sorted(found, key=lambda part: part.lower or "")


def create(connection: Connection, lower_ms: int, upper_ms: int) -> str:
    """A partition for ids from ``lower_ms`` to ``upper_ms`` (milliseconds), made apart,
    given the default partition's rows of its range, then attached: attaching checks its
    rows against a constraint saying the same instead of reading them."""
    name = f"{TABLE}_p{datetime.fromtimestamp(lower_ms / 1000, UTC):%Y%m%d}"
    lower, upper = bound(lower_ms), bound(upper_ms)
    connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    connection.exec_driver_sql(f"CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS)")
    connection.exec_driver_sql(f"ALTER TABLE {name} ADD CONSTRAINT {name}_range "
                               f"CHECK (id >= '{lower}' AND id < '{upper}')")
    connection.exec_driver_sql(f"WITH moved AS (DELETE FROM {DEFAULT} WHERE id >= '{lower}' AND id < '{upper}' "
                               f"RETURNING *) INSERT INTO {name} SELECT * FROM moved")
    connection.exec_driver_sql(f"ALTER TABLE {TABLE} ATTACH PARTITION {name} "
                               f"FOR VALUES FROM ('{lower}') TO ('{upper}')")
    connection.exec_driver_sql(f"ALTER TABLE {name} DROP CONSTRAINT {name}_range")
    return name


def ensure_ahead(connection: Connection, now_ms: int, days: int, periods: int = 2) -> list[str]:
    """Partitions up to ``periods`` periods past the one ``now_ms`` falls in, each starting
    where the last one ends; the names of those made."""
    made = []
    top = max((part.upper_ms for part in partitions(connection) if part.upper_ms is not None),
              default=period_start(now_ms, days))
    target = period_start(now_ms, days) + (periods + 1) * days * DAY_MS
    while top < target:
        made.append(create(connection, top, top + days * DAY_MS))
        top += days * DAY_MS
    return made
