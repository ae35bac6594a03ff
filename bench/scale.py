"""Benchmark: agentfolio beyond one embedded database: ingest with one and three servers
on one PostgreSQL against one server on SQLite, whether the rate stays flat as spans
accumulate, and latency under concurrent clients.

Each section is a function below, chosen with ``--only`` (default: all of them, in
order).  Servers are ``uvicorn --factory agentfolio.server:app_from_env`` processes of
their own on loopback (``--workers`` uvicorn workers each), with a fresh database each
(a SQLite file, or a PostgreSQL schema of ``AGENTFOLIO_TEST_POSTGRES_URL`` /
``scripts/ensure-postgres.sh``); clients are threads of this process, spreading requests
round-robin over the servers.  Spans are ~1 KB LLM spans (bench/otlp.py's), sent as
OTLP/protobuf to ``/v1/traces`` or as ``agent_spans/create`` items to ``/api/v1/bulk``
(each with its idempotency key); a rate counts the spans answered 200, from the first
request to the last answer.  Figures are noisy on a shared machine: read the ratios,
which come from the same run; the load average is printed beside them.

Sections:

* ``ingest``: spans/s of one server on SQLite, one on PostgreSQL, three on PostgreSQL
  (``--spans`` spans, ``--senders`` client threads, both paths).
* ``flatness``: the rate with ``--base`` spans stored, then again with ``--stored``
  spans stored (the difference added by copying stored rows in SQL: filling a database
  through the API would take the run's whole time), per backend and path.
* ``latency``: p95 of ``--batch``-span bulk requests from one client, then from
  ``--clients`` clients at once (one server, ``--workers`` workers), per backend.

Usage: python bench/scale.py [--only ingest,flatness,latency] [--spans N] [--stored N] [--workers N] ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from otlp import TEXT, fresh_database, make_spans  # noqa: E402

from agentfolio.settings import Settings  # noqa: E402
from agentfolio.store import Store  # noqa: E402

PATHS = ("otlp", "bulk")


@dataclass
class Database:
    name: str
    url: str


@contextmanager
def database(backend: str) -> Iterator[Database | None]:
    """A fresh, empty database of ``backend`` (``None``: PostgreSQL cannot be had)."""
    with fresh_database(backend) as url:
        yield None if url is None else Database(backend, url)


class Servers:
    """``count`` server processes on one database, and an account token for them."""

    def __init__(self, db: Database, count: int, workers: int) -> None:
        from tests.storage import free_port, settings_env

        self.folder = tempfile.TemporaryDirectory()
        settings = Settings(data_dir=Path(self.folder.name), database_url=db.url)
        with Store.open(settings) as store:
            self.token, _ = store.accounts.create_token("scale")
        env = {**settings_env(settings), "AGENTFOLIO_OTLP_QUEUE": "64"}
        self.urls: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        for _ in range(count):
            port = free_port()
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "agentfolio.server:app_from_env", "--host",
                 "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 120
        for url in self.urls:
            while True:
                try:
                    httpx.get(url + "/openapi.json", timeout=2)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        self.stop()
                        raise RuntimeError("a server did not start") from None
                    time.sleep(0.2)
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.folder.cleanup()


# --------------------------------------------------------------------------- requests


def otlp_bodies(spans: int, batch: int, seed: int) -> list[bytes]:
    made = make_spans(spans, seed=seed)
    return [encode_spans(made[i:i + batch]).SerializeToString() for i in range(0, len(made), batch)]


def bulk_instance(servers: Servers) -> str:
    with httpx.Client(base_url=servers.urls[0], headers=servers.headers, timeout=120) as api:
        agent = api.post("/api/v1/agent", json={"details": {"name": "scale"}}).json()["details"]["id"]
        return str(api.post("/api/v1/agent_instance/register", json={
            "agent_id": agent, "agent_version": {"name": "scale"}}).json()["details"]["id"])


def bulk_bodies(instance: str, spans: int, batch: int, prefix: str) -> list[bytes]:
    history = [{"role": "user", "parts": [{"type": "text", "content": f"{TEXT} #{i}"}]} for i in range(2)]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"{TEXT} answer"}]}]
    return [json.dumps({"items": [{"_type": "agent_spans/create", "idempotency_key": f"{prefix}-{start + i}",
                                   "details": {"agent_instance_id": instance, "schema_name": "chat bench-model",
                                               "status": "complete", "payload": {"input": history},
                                               "result_payload": {"output": answer}}}
                                  for i in range(min(batch, spans - start))]}).encode()
            for start in range(0, spans, batch)]


def post_all(servers: Servers, path: str, bodies: list[bytes], per_body: list[int], senders: int) -> dict:
    """Post every body (round-robin over the servers, ``senders`` threads); spans/s and
    each request's latency.  A 429/503 is retried after its ``Retry-After``, as exporters do."""
    media = "application/x-protobuf" if path == "otlp" else "application/json"
    route = "/v1/traces" if path == "otlp" else "/api/v1/bulk"
    cursor = iter(range(len(bodies)))
    lock = threading.Lock()
    latencies: list[float] = []
    done = [0, 0]  # spans stored, requests pushed back

    def send(number: int) -> None:
        clients = [httpx.Client(base_url=url, headers={**servers.headers, "Content-Type": media}, timeout=300)
                   for url in servers.urls]
        try:
            while True:
                with lock:
                    index = next(cursor, None)
                if index is None:
                    return
                client = clients[(index + number) % len(clients)]
                while True:
                    began = time.perf_counter()
                    answer = client.post(route, content=bodies[index])
                    if answer.status_code in (429, 503):
                        with lock:
                            done[1] += 1
                        time.sleep(float(answer.headers.get("retry-after", "1")))
                        continue
                    if answer.status_code != 200:
                        raise RuntimeError(f"{route} answered {answer.status_code}: {answer.text[:300]}")
                    with lock:
                        latencies.append(time.perf_counter() - began)
                        done[0] += per_body[index]
                    break
        finally:
            for client in clients:
                client.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=send, args=(n,)) for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {"spans_per_s": round(done[0] / elapsed), "p95_ms": round(p95(latencies) * 1000),
            "pushed_back": done[1]}


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else 0.0)


def rate(servers: Servers, path: str, spans: int, batch: int, senders: int, seed: int) -> dict:
    if path == "otlp":
        bodies = otlp_bodies(spans, batch, seed)
    else:
        bodies = bulk_bodies(bulk_instance(servers), spans, batch, f"s{seed}")
    sizes = [min(batch, spans - start) for start in range(0, spans, batch)]
    return post_all(servers, path, bodies, sizes, senders)


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


# --------------------------------------------------------------------------- sections


def section_ingest(args: argparse.Namespace) -> None:
    """One server on SQLite, one and three on PostgreSQL: spans/s per path."""
    for path in args.paths:
        rates: dict[str, int] = {}
        for backend, count in (("sqlite", 1), ("postgresql", 1), ("postgresql", 3)):
            with database(backend) as db:
                if db is None:
                    print({"section": "ingest", "backend": backend, "skipped": "no PostgreSQL server"})
                    continue
                servers = Servers(db, count, args.workers)
                try:
                    rate(servers, path, args.batch * 2, args.batch, 1, seed=1)  # warm up
                    measured = rate(servers, path, args.spans, args.batch, args.senders, seed=2)
                finally:
                    servers.stop()
            label = f"{backend} x{count}"
            rates[label] = measured["spans_per_s"]
            print({"section": "ingest", "path": path, "servers": label, **measured, "load": load()}, flush=True)
        if "sqlite x1" in rates and "postgresql x1" in rates:
            print({"section": "ingest", "path": path,
                   "postgresql_x1_vs_sqlite": round(rates["postgresql x1"] / rates["sqlite x1"], 2),
                   "postgresql_x3_vs_x1": round(rates.get("postgresql x3", 0) / rates["postgresql x1"], 2)},
                  flush=True)


def grow(db: Database, target: int) -> int:
    """Copy stored span rows (and their idempotency records) under new ids until about
    ``target`` spans are stored; how many are."""
    engine = sa.create_engine(db.url)
    fresh_id = ("lower(hex(randomblob(16)))" if db.name == "sqlite"
                else "md5(random()::text || clock_timestamp()::text)")
    try:
        while True:
            with engine.begin() as connection:
                stored = connection.exec_driver_sql("SELECT count(*) FROM registry_spans").scalar_one()
                if stored >= target:
                    return int(stored)
                columns = [c.name for c in sa.Table("registry_spans", sa.MetaData(), autoload_with=connection).c]
                copied = ", ".join(fresh_id if c == "id" else c for c in columns)
                limit = target - stored
                connection.exec_driver_sql(f"INSERT INTO registry_spans ({', '.join(columns)}) SELECT {copied} "
                                           f"FROM registry_spans LIMIT {limit}")
                keys = [c.name for c in sa.Table("registry_idempotency", sa.MetaData(), autoload_with=connection).c]
                moved = ", ".join(f"{fresh_id}" if c == "key" else c for c in keys)
                connection.exec_driver_sql(f"INSERT INTO registry_idempotency ({', '.join(keys)}) SELECT {moved} "
                                           f"FROM registry_idempotency LIMIT {limit}")
            if db.name == "postgresql":
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                    connection.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()


def section_flatness(args: argparse.Namespace) -> None:
    """The rate with ``--base`` spans stored against the rate with ``--stored``."""
    for backend in args.backends:
        for path in args.paths:
            with database(backend) as db:
                if db is None:
                    print({"section": "flatness", "backend": backend, "skipped": "no PostgreSQL server"})
                    continue
                servers = Servers(db, 1, args.workers)
                try:
                    rate(servers, path, args.base, args.batch, args.senders, seed=3)  # the first spans stored
                    early = rate(servers, path, args.window, args.batch, args.senders, seed=4)
                    stored = grow(db, args.stored)
                    late = rate(servers, path, args.window, args.batch, args.senders, seed=5)
                finally:
                    servers.stop()
            print({"section": "flatness", "backend": backend, "path": path,
                   "rate_at_base": early["spans_per_s"], "stored_late": stored, "rate_at_stored": late["spans_per_s"],
                   "base_over_stored": round(early["spans_per_s"] / max(1, late["spans_per_s"]), 2),
                   "load": load()}, flush=True)


def section_latency(args: argparse.Namespace) -> None:
    """p95 of bulk requests: one client, then ``--clients`` at once."""
    for backend in args.backends:
        with database(backend) as db:
            if db is None:
                print({"section": "latency", "backend": backend, "skipped": "no PostgreSQL server"})
                continue
            servers = Servers(db, 1, args.workers)
            try:
                instance = bulk_instance(servers)
                requests = max(args.requests, args.clients * 4)
                one = bulk_bodies(instance, args.batch * requests, args.batch, "one")
                many = bulk_bodies(instance, args.batch * requests, args.batch, "many")
                sizes = [args.batch] * requests
                post_all(servers, "bulk", one[:2], sizes[:2], 1)  # warm up
                alone = post_all(servers, "bulk", one[2:], sizes[2:], 1)
                crowd = post_all(servers, "bulk", many, sizes, args.clients)
            finally:
                servers.stop()
        print({"section": "latency", "backend": backend, "workers": args.workers, "batch": args.batch,
               "p95_ms_1_client": alone["p95_ms"], f"p95_ms_{args.clients}_clients": crowd["p95_ms"],
               "p95_ratio": round(crowd["p95_ms"] / max(1, alone["p95_ms"]), 2),
               "spans_per_s_1_client": alone["spans_per_s"],
               f"spans_per_s_{args.clients}_clients": crowd["spans_per_s"], "load": load()}, flush=True)


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "ingest": section_ingest,
    "flatness": section_flatness,
    "latency": section_latency,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {', '.join(SECTIONS)}")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--paths", default=",".join(PATHS), help="otlp, bulk or both")
    parser.add_argument("--spans", type=int, default=20_000, help="spans sent in the ingest section")
    parser.add_argument("--batch", type=int, default=512, help="spans per request")
    parser.add_argument("--senders", type=int, default=4, help="client threads in ingest and flatness")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers per server")
    parser.add_argument("--base", type=int, default=10_000, help="spans stored before the first flatness window")
    parser.add_argument("--stored", type=int, default=500_000, help="spans stored before the second window")
    parser.add_argument("--window", type=int, default=10_000, help="spans sent in each flatness window")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients in the latency section")
    parser.add_argument("--requests", type=int, default=40, help="bulk requests per latency measurement")
    args = parser.parse_args()
    args.backends = args.backends.split(",")
    args.paths = args.paths.split(",")
    for name in args.only.split(","):
        if name not in SECTIONS:
            parser.error(f"unknown section {name!r} (known: {', '.join(SECTIONS)})")
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
