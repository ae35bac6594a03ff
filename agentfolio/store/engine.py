"""Opening the database: SQLite (WAL, no set-up) or PostgreSQL, migrated to the newest schema.

SQLite transactions that write start with ``BEGIN IMMEDIATE`` (ask for the write lock up
front, wait for it up to the busy timeout), so two writers never deadlock upgrading a read
lock; reads use a plain ``BEGIN`` and run beside writers under WAL.  With WAL and
``synchronous=NORMAL`` a committed transaction survives the process being killed; the
last transactions before a power cut may be lost, but the file is never corrupted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection, Engine, make_url

WRITE = "agentfolio_write"
_migrate_lock = threading.Lock()


def create_engine(url: str, **kwargs: object) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, **kwargs)
    return sa.create_engine(url, pool_pre_ping=True, **kwargs)


def _sqlite_engine(url: str, database: str | None, **kwargs: object) -> Engine:
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        # Let SQLAlchemy's begin event decide how transactions start (below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that will write: on SQLite it holds the write lock from its start."""
    with engine.connect() as connection:
        connection.execution_options(**{WRITE: True})
        with connection.begin():
            yield connection


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as connection, connection.begin():
        yield connection


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "agentfolio.store:migrations")
    return config


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (creating it on first use)."""
    with _migrate_lock, write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            # Two processes opening a new database at once: one migrates, the other waits.
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(7208921501)")
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
