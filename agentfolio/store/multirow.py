"""Many rows in few statements: ``INSERT … VALUES (…), (…), …`` through the driver, up
to :data:`MAX_PARAMETERS` values a statement.

On SQLite this is what lets a writer thread work beside a thread running Python. The
driver gives up Python's GIL for each call into SQLite and must win it back after. While
another thread is busy in Python, winning it back waits out that thread's switch
interval. With a statement per row, a batch's writes waited that long once per row, so
the writer hardly ran beside the other thread (an import preparing its next batch). A
statement of many rows waits once, and its rows' work (the table's B-tree, a full-text
index) runs without the GIL. Binding the values is one C call for all of them, where
SQLAlchemy's own multi-row insert spent more on compiling it than the insert cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from sqlalchemy.engine import Connection

__all__ = ["MAX_PARAMETERS", "chunks", "insert_rows"]

#: Values bound in one statement at most: below SQLite's default limit (32,766) and
#: PostgreSQL's (65,535).
MAX_PARAMETERS = 30_000

_MARKERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def insert_rows(connection: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                *, returning: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """Insert ``rows`` (each a value for every one of ``columns``, in their order, of a
    type the driver takes as it is: str, int, float, bytes, None) into ``table``; the
    ``returning`` columns of the rows inserted, in no particular order.  Errors are
    raised as SQLAlchemy raises them (IntegrityError for a key taken)."""
    marker = _MARKERS[connection.dialect.paramstyle]
    quote = connection.dialect.identifier_preparer.quote
    into = f"INSERT INTO {quote(table)} ({', '.join(quote(name) for name in columns)}) VALUES "
    row_marks = f"({', '.join([marker] * len(columns))})"
    tail = f" RETURNING {', '.join(quote(name) for name in returning)}" if returning else ""
    found: list[tuple[Any, ...]] = []
    for chunk in chunks(rows, max(1, _most_parameters(connection) // max(1, len(columns)))):
        result = connection.exec_driver_sql(into + ",".join([row_marks] * len(chunk)) + tail,
                                            tuple(chain.from_iterable(chunk)))
        if returning:
            found += [tuple(row) for row in result]
    return found


def _most_parameters(connection: Connection) -> int:
    """MAX_PARAMETERS, or less where this SQLite was built to take fewer."""
    if connection.dialect.name != "sqlite":
        return MAX_PARAMETERS
    import sqlite3

    driver = connection.connection.driver_connection
    return min(MAX_PARAMETERS, int(driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)))  # type: ignore[union-attr]


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``size``: the rows of one statement, or the values of one ``IN``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]
