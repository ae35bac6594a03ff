"""The database's schema, for ``agentfolio db``: where it stands and bringing it up to date.

A deployment of several servers upgrades in two steps (docs/deploy.md): ``agentfolio db
upgrade`` once, then the servers one at a time; every migration only adds (tables,
columns that may be NULL, indexes), so the servers still running the older code keep
working on the newer schema, and a server of the older code that starts meanwhile runs
on it unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentfolio.settings import Settings

if TYPE_CHECKING:
    from agentfolio.store.engine import SchemaStatus

__all__ = ["schema_status", "upgrade"]


def schema_status(settings: Settings) -> SchemaStatus:
    from agentfolio.store.engine import create_engine
    from agentfolio.store.engine import schema_status as status_of

    engine = create_engine(settings.effective_database_url)
    try:
        return status_of(engine)
    finally:
        engine.dispose()


def upgrade(settings: Settings) -> tuple[SchemaStatus, SchemaStatus]:
    """Migrate to the newest schema; the status before and after."""
    from agentfolio.store.engine import create_engine, migrate
    from agentfolio.store.engine import schema_status as status_of

    engine = create_engine(settings.effective_database_url)
    try:
        before = migrate(engine)
        return before, status_of(engine)
    finally:
        engine.dispose()
