"""Opening the database: SQLite (WAL, no set-up) or PostgreSQL, migrated to the newest schema.

SQLite transactions that write start with ``BEGIN IMMEDIATE`` (ask for the write lock up
front, wait for it up to the busy timeout), so two writers never deadlock upgrading a read
lock; reads use a plain ``BEGIN`` and run beside writers under WAL.  With WAL and
``synchronous=NORMAL`` a committed transaction survives the process being killed; the
last transactions before a power cut may be lost, but the file is never corrupted.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

WRITE = "agentfolio_write"
#: Bytes per page of a new SQLite file.
SQLITE_PAGE_SIZE = 8192
MIGRATION_LOCK_KEY = 7208921501  # pg_advisory_xact_lock key: one process migrates at a time
_migrate_lock = threading.Lock()
#: SQLite engine → the lock its writers take before ``BEGIN IMMEDIATE`` (see write_transaction).
_sqlite_writers: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()
log = logging.getLogger("agentfolio.store")


def create_engine(url: str, **kwargs: object) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, **kwargs)
    return sa.create_engine(url, pool_pre_ping=True, **kwargs)


def _sqlite_engine(url: str, database: str | None, **kwargs: object) -> Engine:
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)
    _sqlite_writers[engine] = threading.RLock()

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        # Let SQLAlchemy's begin event decide how transactions start (below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # Before WAL (which fixes it) and the first table: a new file gets pages that
        # hold several ~2 KB span rows each; with SQLite's 4 KiB default most hold one and
        # leave the rest of the page empty.  An existing file keeps the size it has.
        cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
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
    """A transaction that will write: on SQLite it holds the write lock from its start.

    On SQLite the writers of one process first queue on a lock of their own: a writer
    waiting in ``BEGIN IMMEDIATE`` polls the file lock with sleeps of up to 100 ms
    (SQLite's busy handler), so under a burst of requests the lock stood free for most of
    each sleep; the process lock hands it over the moment it is released.  Writers in
    other processes still meet at the file lock, as before.  (Re-entrant: a thread nesting
    a second write transaction waits on SQLite's lock, as it always did.)"""
    lock = _sqlite_writers.get(engine)
    with lock if lock is not None else nullcontext(), engine.connect() as connection:
        connection.execution_options(**{WRITE: True})
        with connection.begin():
            yield connection


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as connection, connection.begin():
        yield connection


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", "agentfolio.store:migrations")
    return config


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where a database's schema stands against the migrations this code knows.

    ``state``: ``current`` (at the newest), ``behind`` (migrations to run; ``empty`` when
    none ever ran), or ``ahead`` (migrated by a newer agentfolio: this code runs on it as
    long as the newer migrations only added, which docs/deploy.md asks of every migration).
    """

    current: str | None
    head: str
    pending: tuple[str, ...]
    state: Literal["current", "behind", "empty", "ahead"]


def _script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


_VERSIONS = Path(__file__).parent / "migrations" / "versions"
_REVISION_LINE = re.compile(r'^revision = "([^"]+)"$', re.MULTILINE)
_DOWN_REVISION_LINE = re.compile(r'^down_revision = (?:"([^"]+)"|None)$', re.MULTILINE)


@cache
def newest_revision() -> str | None:
    """The head of the migrations, read from their files' ``revision`` and
    ``down_revision`` lines without loading Alembic (and its SQLAlchemy dialects and
    templates: most of a command's start-up); None when a file does not say them plainly
    or the lines make other than one head (Alembic then decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in _VERSIONS.glob("*.py"):
        if path.name == "__init__.py":
            continue
        text = path.read_text(encoding="utf-8")
        revision, down = _REVISION_LINE.findall(text), _DOWN_REVISION_LINE.findall(text)
        if len(revision) != 1 or len(down) != 1:
            return None
        revisions.add(revision[0])
        if down[0]:
            parents.add(down[0])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def _stored_revision(engine: Engine) -> str | None:
    """The one revision the database says it is at (None: no such table, or not one row)."""
    try:
        with read_transaction(engine) as connection:
            rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    except sa.exc.DBAPIError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def _status(connection: Connection, script: ScriptDirectory) -> SchemaStatus:
    from alembic.runtime.migration import MigrationContext

    head = script.get_current_head()
    assert head is not None, "the migrations have one head"
    current = MigrationContext.configure(connection).get_current_revision()
    if current == head:
        return SchemaStatus(current, head, (), "current")
    if current is None:
        pending = tuple(revision.revision for revision in reversed(list(script.walk_revisions("base", head))))
        return SchemaStatus(None, head, pending, "empty")
    if not _known(script, current):
        return SchemaStatus(current, head, (), "ahead")
    pending = tuple(revision.revision for revision in reversed(list(script.walk_revisions(current, head)))
                    if revision.revision != current)
    return SchemaStatus(current, head, pending, "behind")


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # alembic raises its own ResolutionError for an unknown revision
        return False


def schema_status(engine: Engine) -> SchemaStatus:
    with read_transaction(engine) as connection:
        return _status(connection, _script())


def migrate(engine: Engine) -> SchemaStatus:
    """Bring the database to the newest schema (creating it on first use); the status it
    had before.  A database a newer agentfolio migrated is left as it is.

    A database already at the newest revision is told by one query, without loading
    Alembic: every command opens the store this way."""
    head = newest_revision()
    if head is not None and _stored_revision(engine) == head:
        return SchemaStatus(head, head, (), "current")
    from alembic import command

    script = _script()
    with _migrate_lock, write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            # Several processes opening one database at once: one migrates, the others wait.
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        before = _status(connection, script)
        if before.state == "ahead":
            log.warning("the database schema (%s) is newer than this agentfolio's (%s); "
                        "running on it unchanged", before.current, before.head)
            return before
        if before.state != "current":
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
        return before
