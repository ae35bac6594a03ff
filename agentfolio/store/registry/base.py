"""What every registry repository shares: a connection, the account's scope, paging."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql.elements import ColumnElement

from agentfolio.registry.listing import PageRequest
from agentfolio.store.scope import AccountScope


def eq(column: Any, value: str) -> ColumnElement[bool]:
    """``column = value`` for a filter; a value no stored text can hold matches nothing
    (PostgreSQL refuses NUL characters in text outright)."""
    return sa.false() if "\x00" in value else column == value


class Rows:
    """A repository: statements on one table family, for the rows of one account."""

    __slots__ = ("conn", "scope")

    def __init__(self, conn: Connection, scope: AccountScope) -> None:
        self.conn = conn
        self.scope = scope

    def _page(self, table: sa.Table, where: Sequence[ColumnElement[bool]], page: PageRequest,
              sortable: Mapping[str, Any]) -> tuple[list[Row[Any]], int]:
        """One page of the account's rows matching ``where``, and how many match in all."""
        total = self.conn.execute(self.scope.count(table).where(*where)).scalar_one()
        column = sortable[page.sorting.field]
        descending = page.sorting.direction == "desc"
        order = [column.desc() if descending else column.asc()]
        if page.sorting.field != "id":
            order.append(table.c.id.desc() if descending else table.c.id.asc())
        rows = self.conn.execute(self.scope.select(table).where(*where).order_by(*order)
                                 .offset(page.offset).limit(page.page_size)).all()
        return list(rows), total
