"""Inserting many rows of plain values with one ``executemany`` straight through the driver."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

_INSERT_SQL: dict[tuple[str, str], tuple[str, tuple[str, ...] | None]] = {}


def insert_many(connection: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """``INSERT`` many rows of plain values (str, int, bytes, bool, None) through the DBAPI
    cursor: SQLAlchemy's per-row parameter processing costs more than the insert itself.
    Each row names every column of ``table``."""
    dialect = connection.dialect
    cache_key = (dialect.name, table.name)
    cached = _INSERT_SQL.get(cache_key)
    if cached is None:
        compiled = sa.insert(table).values({column.name: sa.bindparam(column.name) for column in table.columns}) \
            .compile(dialect=dialect)
        positions = tuple(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
        cached = _INSERT_SQL[cache_key] = (str(compiled), positions)
    sql, positions = cached
    try:
        if positions is not None:
            parameters: list[Any] = [tuple(row[name] for name in positions) for row in rows]
        else:
            parameters = rows
    except KeyError as missing:  # a row without a column: refuse like the database would
        raise IntegrityError(sql, None, ValueError(f"column {missing} has no value")) from None
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(sql, parameters)
    except dialect.loaded_dbapi.IntegrityError as error:  # as SQLAlchemy would raise it: callers retry on it
        raise IntegrityError(sql, None, error) from error
    finally:
        cursor.close()
