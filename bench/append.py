"""Benchmark: appending one turn to a stored session of 10 and of 10,000 entries, on SQLite
and on PostgreSQL, against the whole-document rewrite durable agents do on every turn.

All measured in one run and printed as ratios against the baseline measured beside it:

* rewrite baseline: Microsoft's ``DurableAgentState`` (agent-framework-durabletask) with
  the turn added, ``to_dict`` + ``json.dumps`` + writing the file, as a durable agent
  persists its state each turn; and, for reference, the fastest possible rewrite
  (``orjson.dumps`` of the parsed document + write).
* ours: ``Store.sessions.append`` (entry validated against the session's schema, one
  guarded UPDATE of the version, one INSERT of the entry, committed) on a SQLite file
  (WAL) and on PostgreSQL.

Append figures are the median (and 95th percentile) of ``--appends`` timed appends after
a warm-up; rewrite figures the best of ``--repeat``.  Targets (README): the 10,000-entry
append within 1.5x of the 10-entry one, under 2 ms on SQLite, and at least 50x faster
than the rewrite baseline at 10,000 entries.

PostgreSQL comes from ``AGENTFOLIO_TEST_POSTGRES_URL`` or ``scripts/ensure-postgres.sh``;
without one its rows say why they were skipped.  Usage:
python bench/append.py [--appends N] [--entries N] [--repeat K]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from agentfolio.samples import synthetic_durable_state  # noqa: E402
from agentfolio.settings import Settings  # noqa: E402
from agentfolio.store import Store  # noqa: E402


def best_of(repeat: int, action: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def postgres_url() -> tuple[str | None, str]:
    url = os.environ.get("AGENTFOLIO_TEST_POSTGRES_URL")
    if url:
        return url, ""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "ensure-postgres.sh")], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip().splitlines()[-1], ""
    return None, (done.stderr.strip().splitlines() or ["no server"])[-1]


def measure_appends(store: Store, sizes: list[int], turns: list[dict[str, Any]], appends: int,
                    warmup: int) -> dict[int, list[float]]:
    account = store.accounts.ensure("bench")
    results: dict[int, list[float]] = {}
    for size in sizes:
        document = synthetic_durable_state(size)
        session_id = f"bench-{size}"
        store.sessions.of(account).create(document, session_id=session_id)
        version = 1
        timings = []
        for index in range(warmup + appends):
            turn = turns[index % len(turns)]
            start = time.perf_counter()
            appended = store.sessions.of(account).append(session_id, turn, expected_version=version)
            elapsed = time.perf_counter() - start
            version = appended.session.version
            if index >= warmup:
                timings.append(elapsed)
        results[size] = timings
        _, back = store.sessions.of(account).get_document(session_id)
        assert len(back["data"]["conversationHistory"]) == size + warmup + appends
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [10, args.entries]
    turns = synthetic_durable_state(40, seed=11)["data"]["conversationHistory"]

    print(f"append one turn to a session of {sizes[0]} and of {sizes[1]:,} entries; python "
          f"{platform.python_version()}; median (p95) of {args.appends} appends, rewrites best of {args.repeat}")

    # -- the rewrite baseline: what a durable agent does on every turn --------------------
    from agent_framework_durabletask._durable_agent_state import DurableAgentState

    rewrite: dict[int, float] = {}
    fastest: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "state.json"
        for size in sizes:
            document = synthetic_durable_state(size)
            document["data"]["conversationHistory"].append(turns[0])
            state = DurableAgentState.from_dict(document)
            rewrite[size] = best_of(args.repeat, lambda: target.write_text(json.dumps(state.to_dict())))
            fastest[size] = best_of(args.repeat, lambda: target.write_bytes(orjson.dumps(document)))

    # -- ours ---------------------------------------------------------------------------
    backends: dict[str, dict[int, list[float]] | str] = {}
    with tempfile.TemporaryDirectory() as folder, Store.open(Settings(data_dir=Path(folder))) as store:
        backends["SQLite (WAL file)"] = measure_appends(store, sizes, turns, args.appends, args.warmup)
    url, why = postgres_url()
    if url is None:
        backends["PostgreSQL"] = f"skipped: {why}"
    else:
        import sqlalchemy as sa

        schema = "bench_" + secrets.token_hex(4)
        admin = sa.create_engine(url)
        with admin.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
        try:
            with tempfile.TemporaryDirectory() as folder:
                separator = "&" if "?" in url else "?"
                settings = Settings(data_dir=Path(folder), database_url=f"{url}{separator}options=-csearch_path%3D{schema}")
                with Store.open(settings) as store:
                    backends["PostgreSQL 15 (loopback)"] = measure_appends(store, sizes, turns, args.appends,
                                                                           args.warmup)
        finally:
            with admin.begin() as connection:
                connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
            admin.dispose()

    big = sizes[1]
    rows = [(f"rewrite baseline: Microsoft to_dict + json.dumps + write, {size:,} entries", rewrite[size], "")
            for size in sizes]
    rows += [(f"fastest rewrite: orjson.dumps + write, {size:,} entries", fastest[size], "") for size in sizes]
    width = 74
    for name, seconds, _ in rows:
        print(f"{name:<{width}} {seconds * 1000:9.3f} ms")
    for backend, result in backends.items():
        if isinstance(result, str):
            print(f"{backend}: {result}")
            continue
        medians = {size: statistics.median(timings) for size, timings in result.items()}
        for size, timings in result.items():
            p95 = statistics.quantiles(timings, n=20)[-1]
            print(f"{f'{backend} append, {size:,} entries':<{width}} {medians[size] * 1000:9.3f} ms"
                  f"  (p95 {p95 * 1000:.3f} ms)")
        growth = medians[big] / medians[sizes[0]]
        print(f"  {backend}: {big:,}-entry append = {growth:.2f}x the 10-entry append (target ≤ 1.5x); "
              f"{rewrite[big] / medians[big]:,.0f}x faster than the rewrite baseline at {big:,} (target ≥ 50x), "
              f"{fastest[big] / medians[big]:,.0f}x faster than the fastest rewrite")
        if backend.startswith("SQLite"):
            print(f"  {backend}: {medians[big] * 1000:.3f} ms at {big:,} entries (target < 2 ms)")


if __name__ == "__main__":
    main()
