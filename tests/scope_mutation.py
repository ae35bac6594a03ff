"""A pytest plugin for ``scripts/mutate_scope.py``: drops the account condition at one call site.

With ``AGENTFOLIO_SCOPE_MUTANT=<path>:<line>`` set, the :class:`AccountScope` call made
from that line of that file builds its statement *without* the account condition (every
other call is untouched).  The isolation tests must then fail: that is what shows each
scoping call is needed and tested.  Without the variable this plugin does nothing.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import sqlalchemy as sa

from agentfolio.store.scope import AccountScope

_MUTANT = os.environ.get("AGENTFOLIO_SCOPE_MUTANT")


def _unscoped(method: str, original: Any) -> Any:
    path, _, line = (_MUTANT or "").rpartition(":")

    def wrapper(self: AccountScope, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        if caller.f_code.co_filename.endswith(path) and str(caller.f_lineno) == line:
            return _UNSCOPED[method](self, *args, **kwargs)
        return original(self, *args, **kwargs)

    return wrapper


_UNSCOPED: dict[str, Any] = {
    "owns": lambda self, table: sa.true(),
    "select": lambda self, table, *columns: sa.select(*(columns or (table,))).select_from(table),
    "select_by_key": lambda self, table, *columns: sa.select(*(columns or (table,))).select_from(table),
    "count": lambda self, table: sa.select(sa.func.count()).select_from(table),
    "exists": lambda self, table, *conditions: sa.exists().where(*conditions) if conditions else sa.exists(),
    "update": lambda self, table: sa.update(table),
    "delete": lambda self, table: sa.delete(table),
    "insert": lambda self, table: sa.insert(table),
    "rows": lambda self, rows: [dict(row) for row in rows],
}

if _MUTANT:
    for _name, _original in list(vars(AccountScope).items()):
        if _name in _UNSCOPED:
            setattr(AccountScope, _name, _unscoped(_name, _original))
