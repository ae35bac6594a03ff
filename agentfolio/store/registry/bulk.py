"""Inserting many rows of plain values in one round trip straight through the driver:
``COPY … FROM STDIN`` on PostgreSQL (one statement for the whole batch), one
``executemany`` of a prepared statement on SQLite (in-process: no round trips to save).
Columns packed at rest (:class:`~agentfolio.store.packing.PackedJson`) are packed here,
as their column type packs them in statements SQLAlchemy runs.

:func:`execute_many` runs any other statement (an upsert) for many rows the same way,
compiled once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from agentfolio.store.packing import PackedJson, pack

_INSERT_SQL: dict[tuple[str, str, bool], tuple[str, tuple[str, ...], tuple[int, ...]]] = {}
_COMPILED: dict[tuple[str, sa.Insert, tuple[str, ...]], tuple[str, tuple[str, ...], dict[str, Any]]] = {}
#: Below this many rows a PostgreSQL batch is one pipelined ``executemany``; from it on, ``COPY``.
COPY_FROM_ROWS = 8


def insert_many(connection: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """``INSERT`` many rows of plain values (str, int, bytes, bool, None) through the DBAPI
    cursor: SQLAlchemy's per-row parameter processing costs more than the insert itself.
    Each row names every column of ``table``."""
    dialect = connection.dialect
    copying = dialect.name == "postgresql" and len(rows) >= COPY_FROM_ROWS
    sql, names, packed = _statement(dialect, table, copying=copying)
    # One C call per row (a generator per row cost more than its insert); itemgetter of one
    # name answers the value, not a 1-tuple.
    getter = itemgetter(*names) if len(names) > 1 else (lambda row: (row[names[0]],))
    try:
        values = [getter(row) for row in rows]
    except KeyError as missing:  # a row without a column: refuse like the database would
        raise IntegrityError(sql, None, ValueError(f"column {missing} has no value")) from None
    if packed:
        values = [_pack(row_values, packed) for row_values in values]
    with _driver_cursor(connection, sql) as cursor:
        if copying:
            with cursor.copy(sql) as copy:
                for row_values in values:
                    copy.write_row(row_values)
        else:
            cursor.executemany(sql, values if dialect.positional else [dict(zip(names, v, strict=True))
                                                                        for v in values])


def execute_many(connection: Connection, statement: sa.Insert, rows: Sequence[Mapping[str, Any]]) -> None:
    """Run ``statement`` once per row through the driver's ``executemany``: SQLAlchemy's
    handling of each row's parameters cost more than the statement itself (an upsert of a
    request's traces or sessions).  The rows name the same columns, with plain values
    (str, int, bool, None) of columns of plain types; the statement is one kept for reuse
    (it is compiled once per dialect and set of columns, and held while the process runs)."""
    if not rows:
        return
    dialect = connection.dialect
    columns = tuple(rows[0])
    key = (dialect.name, statement, columns)
    cached = _COMPILED.get(key)
    if cached is None:
        compiled = statement.compile(dialect=dialect, column_keys=list(columns))
        names = tuple(compiled.positiontup or ()) if compiled.positional else ()
        # Values the statement itself binds (``generation + 1``), not the rows.
        constants = {name: value for name, value in compiled.params.items() if name not in columns}
        cached = _COMPILED[key] = (str(compiled), names, constants)
    sql, names, constants = cached
    if constants:
        rows = [{**constants, **row} for row in rows]
    values: list[Any] = list(rows)
    if dialect.positional:
        getter = itemgetter(*names)
        values = [getter(row) for row in rows] if len(names) > 1 else [(row[names[0]],) for row in rows]
    with _driver_cursor(connection, sql) as cursor:
        cursor.executemany(sql, values)


@contextmanager
def _driver_cursor(connection: Connection, sql: str) -> Iterator[Any]:
    """A cursor of the connection's driver, for ``sql``; the driver's errors raised as
    SQLAlchemy raises them (IntegrityError, OperationalError…), which callers tell apart:
    a unique key taken is retried, a busy database answered 503."""
    dialect = connection.dialect
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        yield cursor
    except dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(sql, None, error, dialect.loaded_dbapi.Error) from error
    finally:
        cursor.close()


def _pack(row_values: tuple[Any, ...], packed: tuple[int, ...]) -> list[Any]:
    out = list(row_values)
    for index in packed:
        out[index] = pack(out[index])
    return out


def _statement(dialect: sa.Dialect, table: sa.Table, *,
               copying: bool) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    """The SQL for inserting rows into ``table``, the column names in its parameter order,
    and the positions among them of the columns packed at rest."""
    cache_key = (dialect.name, table.name, copying)
    cached = _INSERT_SQL.get(cache_key)
    if cached is None:
        if copying:
            names = tuple(column.name for column in table.columns)
            quoted = ", ".join(dialect.identifier_preparer.quote(name) for name in names)
            sql = f"COPY {dialect.identifier_preparer.format_table(table)} ({quoted}) FROM STDIN"
        else:
            compiled = sa.insert(table).values({c.name: sa.bindparam(c.name) for c in table.columns}) \
                .compile(dialect=dialect)
            names = (tuple(compiled.positiontup) if compiled.positional  # type: ignore[arg-type]
                     else tuple(column.name for column in table.columns))
            sql = str(compiled)
        packed = tuple(index for index, name in enumerate(names) if isinstance(table.c[name].type, PackedJson))
        cached = _INSERT_SQL[cache_key] = (sql, names, packed)
    return cached
