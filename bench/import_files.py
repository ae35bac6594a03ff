"""Benchmark: ``agentfolio import DIR`` of many durable-state files, against reading each
file and inserting its bytes, on SQLite and on PostgreSQL, in the same run.

    python bench/import_files.py [--files 1000] [--entries 55] [--backends sqlite,postgresql]

Writes ``--files`` durable states of ``--entries`` entries each (55 entries: ~40 KB, so
1,000 files make ~40 MB, each file different), then for each backend:

* baselines: one process reads each file and inserts its bytes as one row, through the
  store's own engine, one transaction per file, then a hundred files per transaction
  (the least an import must do: read, write, commit);
* import: ``agentfolio import DIR --jsonl`` as a user runs it, in its own process, on a
  fresh database (a SQLite file, or a schema of its own on the PostgreSQL server of
  ``AGENTFOLIO_TEST_POSTGRES_URL`` / ``scripts/ensure-postgres.sh``) whose tables were
  made beforehand with ``agentfolio db upgrade``; the wall time includes start-up, and
  the files/s of the first and of the last tenth of the files (as their lines came, in
  the same run) show whether it slows as the store fills;
* re-run: the same command again, which finds every file stored and skips it.

Prints files/s for each, the import's time over the baseline's, and PostgreSQL's import
time over SQLite's, with the load average (figures are noisy on a shared machine: read
the ratios, which come from the same run).  It also prints CPU time per file, which a
busy machine disturbs less: the import process's (user + system, less that of the same
command importing a folder of one small file: its start-up), and the baseline's.  On PostgreSQL the
server's own CPU is not in it: ``--server-cost`` measures that apart, the server
process's CPU per file for COPY of the files' entry rows into a bare table, one with the
foreign key, one with the search index, one with both.  ``--profile FILE`` writes a
cProfile of one SQLite import run in process instead (its writes in the same thread as
the rest, so the profile holds them).  ``--sqlite-floor`` times SQLite alone writing the
rows an import stored (its sessions, entries and full-text rows, read back and written
again into a fresh database by the store's own statements, nothing else around them):
the least the import's writer can take, whatever its Python costs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from otlp import fresh_database  # noqa: E402

from agentfolio.app.imports import BATCH_FILES  # noqa: E402
from agentfolio.samples import synthetic_durable_state  # noqa: E402
from agentfolio.store.engine import create_engine, write_transaction  # noqa: E402


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def write_files(folder: Path, count: int, entries: int) -> int:
    total = 0
    for index in range(count):
        data = orjson.dumps(synthetic_durable_state(entries, seed=index))
        (folder / f"state-{index:05d}.json").write_bytes(data)
        total += len(data)
    return total


def baseline(url: str, folder: Path, per_transaction: int) -> tuple[float, float]:
    """Seconds to read each file and insert its bytes as a row, ``per_transaction`` files a
    transaction, through the store's own engine (SQLite: WAL, ``synchronous=NORMAL``),
    and the CPU seconds this process spent on it."""
    engine = create_engine(url)
    table = sa.Table(f"bench_files_{per_transaction}", sa.MetaData(), sa.Column("pk", sa.Integer, primary_key=True),
                     sa.Column("name", sa.String(200)), sa.Column("data", sa.LargeBinary))
    table.create(engine)
    paths = sorted(folder.glob("*.json"))
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for first in range(0, len(paths), per_transaction):
            with write_transaction(engine) as connection:
                for path in paths[first:first + per_transaction]:
                    connection.execute(sa.insert(table).values(name=path.name, data=path.read_bytes()))
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        engine.dispose()


def environment(url: str, data_dir: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTFOLIO_")}
    env.update(AGENTFOLIO_DATABASE_URL=url, AGENTFOLIO_DATA_DIR=data_dir)
    return env


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def agentfolio(env: dict[str, str], *args: str, reported: list[float] | None = None) -> tuple[float, float]:
    """The command's wall seconds and its process's CPU seconds; ``reported`` gets the
    moment (from the start) each line of its output came, for ``--jsonl``."""
    start, cpu = time.perf_counter(), children_cpu()
    with subprocess.Popen([sys.executable, "-m", "agentfolio.cli", *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as command:
        assert command.stdout is not None and command.stderr is not None
        for _ in command.stdout:
            if reported is not None:
                reported.append(time.perf_counter() - start)
        errors = command.stderr.read()
    seconds = time.perf_counter() - start
    if command.returncode != 0:
        raise SystemExit(f"agentfolio {' '.join(args)} exited {command.returncode}: {errors.decode()[-2000:]}")
    return seconds, children_cpu() - cpu


def tenth_rates(reported: list[float]) -> tuple[int | None, int | None]:
    """Files per second over the first tenth of the files and over the last tenth, in the
    same run: whether storing gets slower as the store fills up.  Lines come a committed
    batch at a time, so a tenth must span several batches (None: too few files)."""
    tenth = len(reported) // 10
    if tenth < 4 * BATCH_FILES:
        return None, None
    first = reported[tenth - 1] - reported[0]
    last = reported[-1] - reported[-tenth - 1]
    return round((tenth - 1) / first) if first > 0 else None, round(tenth / last) if last > 0 else None


def run(backend: str, folder: Path, count: int) -> dict[str, object] | None:
    with fresh_database(backend) as url, tempfile.TemporaryDirectory() as data_dir:
        if url is None:
            return None
        env = environment(url, data_dir)
        agentfolio(env, "db", "upgrade")
        each, _ = baseline(url, folder, 1)
        batched, batched_cpu = baseline(url, folder, 100)
        with tempfile.TemporaryDirectory() as one:
            # One small file, not none: the command loads what storing needs only when it stores.
            (Path(one) / "one.json").write_bytes(orjson.dumps(synthetic_durable_state(2, seed=-1)))
            start_up, start_up_cpu = agentfolio(env, "import", one, "--account", "start-up")
        reported: list[float] = []
        first, first_cpu = agentfolio(env, "import", str(folder), "--account", "bench", "--jsonl",
                                      reported=reported)
        again, _ = agentfolio(env, "import", str(folder), "--account", "bench")
    return {"backend": backend, "files": count, "baseline_per_file_files_per_s": round(count / each),
            "baseline_100_a_txn_files_per_s": round(count / batched),
            "import_files_per_s": round(count / first), "rerun_files_per_s": round(count / again),
            "import_first_tenth_files_per_s": tenth_rates(reported)[0],
            "import_last_tenth_files_per_s": tenth_rates(reported)[1],
            "import_over_baseline_per_file": round(first / each, 2),
            "import_over_baseline_100_a_txn": round(first / batched, 2),
            "start_up_s": round(start_up, 2), "start_up_cpu_s": round(start_up_cpu, 2),
            "import_cpu_ms_per_file": round((first_cpu - start_up_cpu) / count * 1000, 2),
            "baseline_100_a_txn_cpu_ms_per_file": round(batched_cpu / count * 1000, 2), "import_s": first}


class InThisThread:
    """An executor that runs what it is given at once, in the caller's thread: the
    profile then sees the batches' writes, which the import does in a thread of its own."""

    def __init__(self, **_: object) -> None:
        pass

    def __enter__(self) -> InThisThread:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def submit(self, work: Callable[..., object], *args: object) -> Future[object]:
        done: Future[object] = Future()
        done.set_result(work(*args))
        return done


def profile(folder: Path, output: str) -> None:
    import cProfile

    from agentfolio.app import Agentfolio, imports
    from agentfolio.app.imports import import_files
    from agentfolio.settings import Settings

    imports.ThreadPoolExecutor = InThisThread  # type: ignore[assignment,misc]

    with fresh_database("sqlite") as url, tempfile.TemporaryDirectory() as data_dir:
        assert url is not None
        os.environ.update(environment(url, data_dir))
        with Agentfolio.open(Settings.from_env()) as folio:
            account = folio.accounts.ensure("bench")
            profiler = cProfile.Profile()
            profiler.runcall(import_files, folio, account, [folder])
            profiler.dump_stats(output)


def server_cost(folder: Path, rounds: int = 3) -> dict[str, object]:
    """PostgreSQL's own CPU per file for binary COPY of a file's entry rows (as the store
    cuts and sends them) into tables like ``entries``: bare, with the foreign key to the
    session, with the GIN index of the search text's words, and with both (best of
    ``rounds``), read from the server process's /proc entry (so: a server on this machine)."""
    from agentfolio.present.search import entry_text
    from agentfolio.store.search import entry_words, lexemes_binary

    rows = [[(position, entry.get("$type"), orjson.dumps(entry), text, lexemes_binary(entry_words(text)))
             for position, entry in enumerate(orjson.loads(path.read_bytes())["data"]["conversationHistory"])
             for text in (entry_text(entry, 8192),)]
            for path in sorted(folder.glob("*.json"))]
    kinds = {"bare": "", "foreign_key": "fk", "gin": "gin", "both": "fk gin"}
    with fresh_database("postgresql") as url:
        if url is None:
            return {"skipped": "no PostgreSQL server"}
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
                stat = Path(f"/proc/{pid}/stat")
                if not stat.exists():
                    return {"skipped": "the server is not on this machine"}

                def server_seconds() -> float:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

                connection.exec_driver_sql("CREATE TABLE parents (pk bigint PRIMARY KEY)")
                connection.exec_driver_sql(f"INSERT INTO parents SELECT generate_series(0, {rounds * len(rows)})")
                for name, has in kinds.items():
                    key = " REFERENCES parents (pk) ON DELETE CASCADE" if "fk" in has else ""
                    connection.exec_driver_sql(f"CREATE TABLE rows_{name} (session_pk bigint{key}, position integer, "
                                               "kind text, body bytea, text text NOT NULL, words tsvector, "
                                               "PRIMARY KEY (session_pk, position))")
                    if "gin" in has:
                        connection.exec_driver_sql(f"CREATE INDEX ON rows_{name} USING gin (words)")
                connection.commit()
                raw = connection.connection.driver_connection
                best = dict.fromkeys(kinds, float("inf"))
                for round_number in range(rounds):
                    for name in kinds:
                        before = server_seconds()
                        with raw.cursor() as cursor, cursor.copy(  # type: ignore[union-attr]
                                f"COPY rows_{name} (session_pk, position, kind, body, text, words) FROM STDIN "
                                "(FORMAT BINARY)") as copy:
                            copy.set_types(["int8", "int4", "text", "bytea", "text", "bytea"])
                            for number, file_rows in enumerate(rows):
                                for row in file_rows:
                                    copy.write_row((round_number * len(rows) + number, *row))
                        raw.commit()  # type: ignore[union-attr]
                        best[name] = min(best[name], server_seconds() - before)
        finally:
            engine.dispose()
    return {f"server_cpu_ms_per_file_{name}": round(seconds / len(rows) * 1000, 2) for name, seconds in best.items()}


def sqlite_floor(folder: Path, rounds: int = 3) -> dict[str, object]:
    """SQLite's own time for the rows an import of ``folder`` stores, best of ``rounds``:
    the import's sessions, entries and full-text rows, written again into a fresh database
    (tables made by ``agentfolio db upgrade``) by the statements the import's writer makes
    (multi-row inserts, the full-text rows), a transaction every ``BATCH_FILES`` sessions."""
    from agentfolio.store.multirow import insert_rows
    from agentfolio.store.search import index_entries
    from agentfolio.store.tables import accounts, entries, sessions

    with fresh_database("sqlite") as url, tempfile.TemporaryDirectory() as data_dir:
        assert url is not None
        env = environment(url, data_dir)
        agentfolio(env, "db", "upgrade")
        agentfolio(env, "import", str(folder), "--account", "bench")
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                stored = {table.name: connection.execute(sa.select(table).order_by(*table.primary_key)).all()
                          for table in (accounts, sessions, entries)}
        finally:
            engine.dispose()
    text_at = list(entries.c.keys()).index("text")
    by_session: dict[int, list[Any]] = {}
    for row in stored[entries.name]:
        by_session.setdefault(row[0], []).append(row)
    best = {"all": float("inf")}
    for _ in range(rounds):
        parts = dict.fromkeys(("sessions_and_entries", "full_text", "commits"), 0.0)
        with fresh_database("sqlite") as url, tempfile.TemporaryDirectory() as data_dir:
            assert url is not None
            agentfolio(environment(url, data_dir), "db", "upgrade")
            engine = create_engine(url)
            try:
                with write_transaction(engine) as connection:
                    insert_rows(connection, accounts.name, list(accounts.c.keys()), stored[accounts.name])
                start, cpu = time.perf_counter(), time.process_time()
                for first in range(0, len(stored[sessions.name]), BATCH_FILES):
                    batch = stored[sessions.name][first:first + BATCH_FILES]
                    rows = [row for session in batch for row in by_session.get(session[0], [])]
                    began = time.perf_counter()
                    with write_transaction(engine) as connection:
                        insert_rows(connection, sessions.name, list(sessions.c.keys()), batch)
                        insert_rows(connection, entries.name, list(entries.c.keys()), rows)
                        inserted = time.perf_counter()
                        index_entries(connection, [(row[0], row[1], row[text_at]) for row in rows])
                        indexed = time.perf_counter()
                    parts["sessions_and_entries"] += inserted - began
                    parts["full_text"] += indexed - inserted
                    parts["commits"] += time.perf_counter() - indexed
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            finally:
                engine.dispose()
        if seconds < best["all"]:
            best = {"all": seconds, "cpu": cpu, **parts}
    files = len(stored[sessions.name])
    return {"sqlite_floor_files": files, "sqlite_floor_s": round(best["all"], 2),
            "sqlite_floor_cpu_s": round(best["cpu"], 2),
            **{f"sqlite_floor_{name}_s": round(best[name], 2) for name in ("sessions_and_entries", "full_text",
                                                                            "commits")},
            "sqlite_floor_files_per_s": round(files / best["all"])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=55)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of one SQLite import to FILE")
    parser.add_argument("--server-cost", action="store_true",
                        help="PostgreSQL's own CPU per file for the entry rows, by what the table has")
    parser.add_argument("--sqlite-floor", action="store_true",
                        help="SQLite's own time for the rows an import stores, with nothing else around it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        size = write_files(Path(folder), args.files, args.entries)
        print({"files": args.files, "megabytes": round(size / 1e6, 1), "load": load()}, flush=True)
        if args.profile:
            profile(Path(folder), args.profile)
            return
        if args.sqlite_floor:
            print(sqlite_floor(Path(folder)) | {"load": load()}, flush=True)
            return
        if args.server_cost:
            print(server_cost(Path(folder)) | {"load": load()}, flush=True)
            return
        results = {}
        for backend in args.backends.split(","):
            result = run(backend, Path(folder), args.files)
            if result is None:
                print({"backend": backend, "skipped": "no PostgreSQL server"}, flush=True)
                continue
            results[backend] = result
            print(json.dumps({key: value for key, value in result.items() if key != "import_s"}
                             | {"load": load()}), flush=True)
        if "sqlite" in results and "postgresql" in results:
            ratio = float(results["postgresql"]["import_s"]) / float(results["sqlite"]["import_s"])  # type: ignore[arg-type]
            print({"postgresql_import_over_sqlite": round(ratio, 2), "load": load()}, flush=True)


if __name__ == "__main__":
    main()
