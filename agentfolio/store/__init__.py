"""Durable storage: sessions (durable agent state, appended in constant time), accounts, blobs.

``Store.open(settings)`` opens (and on first use creates and migrates) the database named
by the settings: a SQLite file in the data folder by default, PostgreSQL by URL.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from agentfolio.settings import Settings
from agentfolio.store.accounts import Account, Accounts
from agentfolio.store.blob_refs import Swept, sweep
from agentfolio.store.blobs import BlobStore, open_blob_store
from agentfolio.store.engine import create_engine, migrate
from agentfolio.store.errors import AlreadyExists, InvalidInput, NotFound, StoreError, VersionConflict
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


class Store:
    """One database and blob store; each area reaches its tables through an attribute."""

    def __init__(self, settings: Settings, engine: Engine, blobs: BlobStore) -> None:
        self.settings = settings
        self.engine = engine
        self.blobs = blobs
        self.accounts = Accounts(engine)
        self.tokens = Tokens(engine)
        self.sessions = SessionStore(engine, blobs, settings)
        self.registry = RegistryStore(engine, idempotency_window=settings.idempotency_window)
        self.viewer_files = ViewerFiles(engine, blobs)
        self.jobs = Jobs(engine)
        self.spans_by_time = SpansByTime(engine)

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
        return sweep(self.engine, self.blobs)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


__all__ = ["Account", "Accounts", "AlreadyExists", "Appended", "Created", "InvalidInput", "NewSession", "NotFound",
           "SessionCursor", "SessionInfo", "SessionStore", "Sessions", "Store", "StoreError", "VersionConflict"]
