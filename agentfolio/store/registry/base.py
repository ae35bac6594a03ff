"""What every registry repository shares: a connection, the account's scope, paging."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql.elements import ColumnElement

from agentfolio.registry.listing import PageRequest
from agentfolio.store.scope import AccountScope

#: Rows a list counts past its page before it estimates instead (see :meth:`Rows._page`).
COUNT_WINDOW = 10_000


def eq(column: Any, value: str) -> ColumnElement[bool]:
    """``column = value`` for a filter; a value no stored text can hold matches nothing
    (PostgreSQL refuses NUL characters in text outright)."""
    return sa.false() if "\x00" in value else column == value


def among(dialect: sa.Dialect, column: ColumnElement[Any], values: Sequence[str]) -> ColumnElement[bool]:
    """``column IN values`` with every value in one bound parameter: a JSON array that
    ``json_each`` reads on SQLite, an array on PostgreSQL (``= ANY``).  A parameter per
    value cost more to build and bind than the index lookups themselves (a 512-id ``IN``:
    about 4 ms of Python beside 1 ms in SQLite), and the statement's text no longer
    changes with the number of values, so it is compiled once."""
    if dialect.name == "postgresql":
        return column == sa.any_(sa.bindparam(None, list(values), type_=postgresql.ARRAY(column.type)))
    each = sa.func.json_each(sa.bindparam(None, orjson.dumps(list(values)).decode(), type_=sa.String))
    return column.in_(sa.select(each.table_valued("value").c.value))


class Rows:
    """A repository: statements on one table family, for the rows of one account."""

    __slots__ = ("conn", "scope")

    def __init__(self, conn: Connection, scope: AccountScope) -> None:
        self.conn = conn
        self.scope = scope

    def among(self, column: ColumnElement[Any], values: Sequence[str]) -> ColumnElement[bool]:
        """``column IN values`` (see :func:`among`)."""
        return among(self.conn.dialect, column, values)

    def _page(self, table: sa.Table, where: Sequence[ColumnElement[bool]], page: PageRequest,
              sortable: Mapping[str, Any], *, count: int | None = None) -> tuple[list[Row[Any]], int]:
        """One page of the account's rows matching ``where``, and how many match in all
        (``count`` when the caller knows it, as the span list does from its kept counts).

        Else the count reads at most :data:`COUNT_WINDOW` rows past the page, so a page
        costs the same however many rows the account has: below that the count is exact;
        past it, it is PostgreSQL's estimate (SQLite: the rows counted), never less than
        the rows counted — so ``next_page_offset`` stays exact and only ``item_count`` and
        ``page_count`` are approximate on very long lists.
        """
        column = sortable[page.sorting.field]
        descending = page.sorting.direction == "desc"
        order = [column.desc() if descending else column.asc()]
        if page.sorting.field != "id":
            order.append(table.c.id.desc() if descending else table.c.id.asc())
        chosen = self.scope.select(table).where(*where)
        rows = self.conn.execute(chosen.order_by(*order).offset(page.offset).limit(page.page_size)).all()
        if count is not None:
            return list(rows), count
        cap = page.offset + page.page_size + COUNT_WINDOW
        counted = self.conn.execute(sa.select(sa.func.count()).select_from(
            self.scope.select(table, table.c.id).where(*where).limit(cap).subquery())).scalar_one()
        if counted >= cap:
            counted = max(counted, self._estimate(chosen))
        return list(rows), counted

    def _estimate(self, statement: sa.Select[Any]) -> int:
        """The planner's estimate of how many rows ``statement`` returns (0 where there is none)."""
        if self.conn.dialect.name != "postgresql":
            return 0
        compiled = statement.compile(dialect=self.conn.dialect)
        plan = self.conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + str(compiled), compiled.params).scalar_one()
        return int(plan[0]["Plan"]["Plan Rows"])
