"""Where a database's schema stands, and opening one migrated by a newer agentfolio: a server
of the older code keeps running on it (a rolling upgrade)."""

from __future__ import annotations

import sqlalchemy as sa

from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.store.engine import create_engine, migrate, schema_status
from agentfolio.store.health import readiness_problems


def test_an_empty_database_is_behind_until_migrated(settings: Settings) -> None:
    engine = create_engine(settings.effective_database_url)
    try:
        before = schema_status(engine)
        assert before.state == "empty" and before.current is None
        assert before.pending[-1] == before.head and len(before.pending) >= 5
        assert migrate(engine).state == "empty"
        after = schema_status(engine)
        assert (after.state, after.current, after.pending) == ("current", before.head, ())
        assert migrate(engine).state == "current"
    finally:
        engine.dispose()


def test_with_migrations_off_the_store_is_not_ready_until_upgraded(settings: Settings) -> None:
    with Store.open(settings.with_(migrate="off")) as store:
        problems = readiness_problems(store)
        assert len(problems) == 1 and "agentfolio db upgrade" in problems[0], problems
        migrate(store.engine)
        assert readiness_problems(store) == []


def test_a_database_migrated_by_a_newer_agentfolio_is_used_as_it_is(settings: Settings) -> None:
    with Store.open(settings) as store:
        account = store.accounts.ensure("alice")
        store.sessions.of(account).create({"schemaVersion": "1.2.0", "data": {"conversationHistory": []}},
                                          session_id="kept")
        with store.engine.begin() as connection:
            connection.execute(sa.text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    with Store.open(settings) as store:  # migrates by default: must leave the newer schema alone
        status = schema_status(store.engine)
        assert (status.state, status.current) == ("ahead", "9999_from_the_future")
        assert readiness_problems(store) == []
        assert [info.id for info in store.sessions.of(store.accounts.ensure("alice")).list()] == ["kept"]


def test_a_new_sqlite_file_gets_the_larger_pages_and_an_existing_one_keeps_its_own(tmp_path) -> None:
    import sqlite3

    from agentfolio.store.engine import SQLITE_PAGE_SIZE

    def page_size(path) -> int:
        with sqlite3.connect(path) as connection:
            return int(connection.execute("PRAGMA page_size").fetchone()[0])

    fresh = tmp_path / "fresh.sqlite3"
    with Store.open(Settings(data_dir=tmp_path, database_url=f"sqlite:///{fresh}")) as store:
        store.accounts.ensure("alice")
    assert page_size(fresh) == SQLITE_PAGE_SIZE != 4096
    older = tmp_path / "older.sqlite3"
    with sqlite3.connect(older) as connection:  # a file made before: SQLite's default pages, in WAL
        connection.execute("PRAGMA page_size=4096")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE kept (x)")
    with Store.open(Settings(data_dir=tmp_path, database_url=f"sqlite:///{older}")) as store:
        store.accounts.ensure("alice")
    assert page_size(older) == 4096


def test_writers_of_one_process_take_sqlites_write_lock_in_turn_without_polling_it(tmp_path) -> None:
    """With SQLite's busy wait switched off, writers in threads of one process that met at
    the file lock would fail at once ("database is locked"); they queue on the process's
    own lock instead, and every write lands."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from agentfolio.store.engine import write_transaction

    engine = create_engine(f"sqlite:///{tmp_path / 'writers.sqlite3'}")

    @sa.event.listens_for(engine, "connect")
    def _no_busy_wait(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        dbapi_connection.execute("PRAGMA busy_timeout=0")

    with write_transaction(engine) as connection:
        connection.exec_driver_sql("CREATE TABLE landed (writer INTEGER, n INTEGER)")

    def write(writer: int) -> None:
        for n in range(10):
            with write_transaction(engine) as connection:
                connection.exec_driver_sql("INSERT INTO landed VALUES (?, ?)", (writer, n))
                time.sleep(0.002)  # hold the lock while the others arrive

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(write, range(6)))  # a writer's error ("database is locked") is raised here
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM landed").scalar_one() == 60
    engine.dispose()


def test_the_newest_revision_read_from_the_files_is_alembics_head() -> None:
    # migrate() skips loading Alembic when the database is at this revision: it must be
    # the head Alembic itself finds, or a database behind would never be migrated.
    from agentfolio.store.engine import _script, newest_revision

    assert newest_revision() == _script().get_current_head() is not None


def test_a_database_one_migration_behind_is_migrated_on_open(settings: Settings) -> None:
    from alembic import command

    from agentfolio.store.engine import alembic_config, newest_revision

    engine = create_engine(settings.effective_database_url)
    try:
        migrate(engine)
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, "-1")
        assert schema_status(engine).state == "behind" and newest_revision() == schema_status(engine).head
        assert migrate(engine).state == "behind"  # told apart by the quick check, and brought to the head
        assert schema_status(engine).state == "current"
    finally:
        engine.dispose()
