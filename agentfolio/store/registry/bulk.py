"""Bulk requests and buffered writes: the items of ``/api/v1/bulk``, idempotency keys,
error outcomes, and the driver-level ``executemany`` for buffered rows."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from agentfolio.store.registry.values import MAX_BULK_ITEMS, MAX_BULK_KEY_CHARS, OpError, Outcome, _problem


def _error_outcome(error: OpError) -> Outcome:
    return Outcome(error.status, error.to_json())


def _check_key(value: object, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _problem("idempotency_key", "invalid_value", "must be a non-empty string")
    if len(value) > limit:
        raise _problem("idempotency_key", "invalid_value", f"is {len(value)} characters, over the {limit} limit")
    if "\x00" in value:
        raise _problem("idempotency_key", "invalid_value", "must not contain NUL characters")
    return value


BULK_META = ("_type", "idempotency_key", "method", "path", "details")


def _bulk_items(body: object) -> list[tuple[str, str, dict[str, Any]]]:
    def refuse(where: str, message: str) -> OpError:
        return OpError("invalid_value", f"{where}: {message}", errors={where: message}, status=422)

    if not isinstance(body, dict):
        raise refuse("items", "the body must be an object with an 'items' array")
    raw = body.get("items")
    if not isinstance(raw, list) or not raw:
        raise refuse("items", "must be a non-empty array")
    if len(raw) > MAX_BULK_ITEMS:
        raise refuse("items", f"has {len(raw):,} items, over the {MAX_BULK_ITEMS:,} limit")
    out: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            raise refuse(where, "must be an object")
        kind = item.get("_type")
        key = item.get("idempotency_key")
        if not isinstance(kind, str) or not kind:
            raise refuse(f"{where}._type", "is required (e.g. 'agent_spans/create')")
        if not isinstance(key, str) or not key or len(key) > MAX_BULK_KEY_CHARS or "\x00" in key:
            raise refuse(f"{where}.idempotency_key", f"is required: a string of 1-{MAX_BULK_KEY_CHARS} characters")
        if key in seen:
            raise refuse(f"{where}.idempotency_key", f"{key!r} is used by another item of this request")
        seen.add(key)
        details = item.get("details")
        fields = {k: v for k, v in item.items() if k not in BULK_META}
        if isinstance(details, dict):
            fields.update(details)
        fields.pop("idempotency_key", None)
        out.append((kind, key, fields))
    return out


_INSERT_SQL: dict[tuple[str, str], tuple[str, tuple[str, ...] | None]] = {}


def _insert_many(connection: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """``INSERT`` many rows of plain values (str, int, bytes, bool, None) through the DBAPI
    cursor: SQLAlchemy's per-row parameter processing costs more than the insert itself."""
    dialect = connection.dialect
    cache_key = (dialect.name, table.name)
    cached = _INSERT_SQL.get(cache_key)
    if cached is None:
        compiled = sa.insert(table).values({column.name: sa.bindparam(column.name) for column in table.columns}) \
            .compile(dialect=dialect)
        positions = tuple(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
        cached = _INSERT_SQL[cache_key] = (str(compiled), positions)
    sql, positions = cached
    if positions is not None:
        parameters: list[Any] = [tuple(row[name] for name in positions) for row in rows]
    else:
        parameters = rows
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(sql, parameters)
    except dialect.loaded_dbapi.IntegrityError as error:  # as SQLAlchemy would raise it: callers retry on it
        raise IntegrityError(sql, None, error) from error
    finally:
        cursor.close()
