"""Statements bound to one account: the only way repositories reach account-owned rows.

Every table that holds an account's data has an ``account_pk`` column.  A repository
is opened for one account and builds its statements through an :class:`AccountScope`,
which adds ``account_pk = <this account>`` to every ``SELECT``, ``UPDATE`` and
``DELETE`` and sets it on every ``INSERT``.  So a repository cannot name another
account's rows by mistake: a query that forgets the account is not written by hand, it
is not written at all.  ``scripts/mutate_scope.py`` removes each scoping call in turn and
checks that the isolation tests (``tests/store/test_isolation*.py``) fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["AccountScope"]


class AccountScope:
    """Statement builders for the rows of account ``account_pk``."""

    __slots__ = ("account_pk",)

    def __init__(self, account_pk: int) -> None:
        self.account_pk = account_pk

    def owns(self, table: sa.Table | sa.Alias) -> ColumnElement[bool]:
        """``table.account_pk = <this account>``: the condition every statement carries."""
        return table.c.account_pk == self.account_pk

    def select(self, table: sa.Table | sa.Alias, *columns: Any) -> sa.Select[Any]:
        """``SELECT columns (default: every column) FROM table`` of this account's rows."""
        return sa.select(*(columns or (table,))).select_from(table).where(self.owns(table))

    def select_by_key(self, table: sa.Table | sa.Alias, *columns: Any) -> sa.Select[Any]:
        """As :meth:`select`, for rows found by a key far more selective than the account
        (a trace, a parent span): each row's account is still checked, but in a form no
        index serves (``account_pk + 0``).  SQLite without statistics rates an index
        leading with ``account_pk`` as good as the key's own and took it, walking every
        row of the account for a trace's few."""
        return sa.select(*(columns or (table,))).select_from(table).where(
            table.c.account_pk + 0 == self.account_pk)

    def count(self, table: sa.Table) -> sa.Select[Any]:
        return sa.select(sa.func.count()).select_from(table).where(self.owns(table))

    def exists(self, table: sa.Table, *conditions: ColumnElement[bool]) -> sa.Exists:
        return sa.exists().where(self.owns(table), *conditions)

    def update(self, table: sa.Table) -> sa.Update:
        return sa.update(table).where(self.owns(table))

    def delete(self, table: sa.Table) -> sa.Delete:
        return sa.delete(table).where(self.owns(table))

    def insert(self, table: sa.Table) -> sa.Insert:
        """``INSERT`` whose rows belong to this account whatever values they are given."""
        return sa.insert(table).values(account_pk=self.account_pk)

    def rows(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Rows for a bulk insert, each marked as this account's."""
        return [{**row, "account_pk": self.account_pk} for row in rows]
