"""Durable storage: sessions (durable agent state, appended in constant time), accounts, blobs.

``Store.open(settings)`` opens (and on first use creates and migrates) the database named
by the settings: a SQLite file in the data folder by default, PostgreSQL by URL.

Each area (sessions, the registry, tokens...) is loaded when it is first used, and so are
the names this package gives of it: a command that uses one area does not pay for
importing the others (the registry's templates and span checks most of all).
"""

from __future__ import annotations

from functools import cached_property
from importlib import import_module
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from agentfolio.settings import Settings
from agentfolio.store.accounts import Account, Accounts
from agentfolio.store.blobs import BlobStore, open_blob_store
from agentfolio.store.engine import create_engine, migrate
from agentfolio.store.errors import AlreadyExists, InvalidInput, NotFound, StoreError, VersionConflict

if TYPE_CHECKING:
    from agentfolio.store.blob_refs import Swept
    from agentfolio.store.jobs import Jobs
    from agentfolio.store.registry import RegistryStore
    from agentfolio.store.sessions import (
        Appended,
        Created,
        NewSession,
        SessionCursor,
        SessionInfo,
        Sessions,
        SessionStore,
    )
    from agentfolio.store.spans_by_time import SpansByTime
    from agentfolio.store.tokens import Tokens
    from agentfolio.store.viewer_files import ViewerFiles

#: The names given here of modules loaded on first use: name → module.
_LAZY = dict.fromkeys(("Appended", "Created", "NewSession", "SessionCursor", "SessionInfo", "Sessions",
                      "SessionStore"), "agentfolio.store.sessions")


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)


class Store:
    """One database and blob store; each area reaches its tables through an attribute
    (made on first use)."""

    def __init__(self, settings: Settings, engine: Engine, blobs: BlobStore) -> None:
        self.settings = settings
        self.engine = engine
        self.blobs = blobs
        self.accounts = Accounts(engine)

    @cached_property
    def tokens(self) -> Tokens:
        from agentfolio.store.tokens import Tokens

        return Tokens(self.engine)

    @cached_property
    def sessions(self) -> SessionStore:
        from agentfolio.store.sessions import SessionStore

        return SessionStore(self.engine, self.blobs, self.settings)

    @cached_property
    def registry(self) -> RegistryStore:
        from agentfolio.store.registry import RegistryStore

        return RegistryStore(self.engine, idempotency_window=self.settings.idempotency_window)

    @cached_property
    def viewer_files(self) -> ViewerFiles:
        from agentfolio.store.viewer_files import ViewerFiles

        return ViewerFiles(self.engine, self.blobs)

    @cached_property
    def jobs(self) -> Jobs:
        from agentfolio.store.jobs import Jobs

        return Jobs(self.engine)

    @cached_property
    def spans_by_time(self) -> SpansByTime:
        from agentfolio.store.spans_by_time import SpansByTime

        return SpansByTime(self.engine)

    @classmethod
    def open(cls, settings: Settings | None = None, *, run_migrations: bool | None = None) -> Store:
        """``run_migrations``: bring the schema to the newest first (default: unless the
        settings say ``AGENTFOLIO_MIGRATE=off``)."""
        settings = settings or Settings.from_env()
        engine = create_engine(settings.effective_database_url)
        if run_migrations if run_migrations is not None else settings.migrate == "auto":
            migrate(engine)
        return cls(settings, engine, open_blob_store(settings))

    def sweep_blobs(self) -> Swept:
        """Remove the blobs nothing points at any more (see ``store.blob_refs``)."""
        from agentfolio.store.blob_refs import sweep

        return sweep(self.engine, self.blobs)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


__all__ = ["Account", "Accounts", "AlreadyExists", "Appended", "Created", "InvalidInput", "NewSession", "NotFound",
           "SessionCursor", "SessionInfo", "SessionStore", "Sessions", "Store", "StoreError", "VersionConflict"]
