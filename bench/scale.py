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
* ``latency``: ``--batch``-span bulk requests from one client, then from ``--clients``
  clients at once (one server, ``--workers`` workers), per backend: p95 of the requests
  answered, the share refused 429 (back-pressure), and p95 per batch retries included.
* ``reads``: span lists (by id, by start, filtered by validation and status, a page
  far in) at ``--span-sizes`` stored spans, and session lists (first page, by agent,
  after a keyset cursor, full-text search of a rare word, a prefix and a common word)
  at ``--session-sizes`` stored sessions: median ms, and the largest size over the
  smallest.  In process, through the application layer.
* ``append``: median ms of one append at 10 entries and at ``--entries``, per backend.

Usage: python bench/scale.py [--only ingest,flatness,latency] [--spans N] [--stored N] [--workers N] ...
"""

from __future__ import annotations

import argparse
import importlib
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

    def __init__(self, db: Database, count: int, workers: int, bulk_queue: int | None = None,
                 bulk_waiting: tuple[int, int] | None = None) -> None:
        from tests.storage import free_port, settings_env

        self.folder = tempfile.TemporaryDirectory()
        settings = Settings(data_dir=Path(self.folder.name), database_url=db.url)
        if bulk_queue is not None:
            settings = settings.with_(bulk_queue_size=bulk_queue)
        if bulk_waiting is not None:
            settings = settings.with_(bulk_waiters=bulk_waiting[0], bulk_wait_ms=bulk_waiting[1])
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
    latencies.  A 429/503 is sent again after its ``Retry-After``, as exporters do (the
    Prefactor SDKs wait 1, 2, 4 s instead, and give up after 3 retries).

    ``p95_ms``: of the requests answered 200, from sending to the answer (what the server
    took for a request it admitted); ``p95_end_to_end_ms``: per batch, from its first
    attempt to its 200, waits and refused attempts included; ``refused_share``: the
    attempts answered 429 or 503; ``over_4_attempts``: batches that needed more attempts
    than the Python SDK makes by default."""
    media = "application/x-protobuf" if path == "otlp" else "application/json"
    route = "/v1/traces" if path == "otlp" else "/api/v1/bulk"
    cursor = iter(range(len(bodies)))
    lock = threading.Lock()
    latencies: list[float] = []
    end_to_end: list[float] = []
    attempts: list[int] = []
    done = [0, 0, 0]  # spans stored, attempts answered 429, answered 503

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
                first = time.perf_counter()
                tries = 0
                while True:
                    tries += 1
                    began = time.perf_counter()
                    answer = client.post(route, content=bodies[index])
                    if answer.status_code in (429, 503):
                        with lock:
                            done[1 if answer.status_code == 429 else 2] += 1
                        time.sleep(float(answer.headers.get("retry-after", "1")))
                        continue
                    if answer.status_code != 200:
                        raise RuntimeError(f"{route} answered {answer.status_code}: {answer.text[:300]}")
                    finished = time.perf_counter()
                    with lock:
                        latencies.append(finished - began)
                        end_to_end.append(finished - first)
                        attempts.append(tries)
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
    tried = sum(attempts)
    return {"spans_per_s": round(done[0] / elapsed), "p95_ms": round(p95(latencies) * 1000),
            "p95_end_to_end_ms": round(p95(end_to_end) * 1000),
            "attempts_per_batch": round(tried / max(1, len(attempts)), 2),
            "refused_429": done[1], "refused_503": done[2],
            "refused_share": round((done[1] + done[2]) / max(1, tried), 3),
            "most_attempts": max(attempts, default=0), "over_4_attempts": sum(1 for n in attempts if n > 4),
            "pushed_back": done[1] + done[2]}


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


def _trace_stats_recompute() -> str:
    """The statement migration 0013 computes every trace's stats from its spans with."""
    migration = importlib.import_module("agentfolio.store.migrations.versions.0013_trace_stats_by_writers")
    return str(migration._RECOMPUTE)


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
                    # Rows copied in SQL pass by the writers that keep the trace stats.
                    connection.exec_driver_sql("DELETE FROM registry_trace_stats")
                    connection.exec_driver_sql(_trace_stats_recompute())
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
                # The copied rows stand for spans stored over weeks, which autovacuum would
                # have visited long before: vacuumed now, or autovacuum's pass over a
                # table that grew fifty-fold at once runs during the late window instead.
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                    connection.exec_driver_sql("VACUUM ANALYZE")
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


def _admission(spec: str) -> tuple[int, int] | None:
    """``W/MS`` (W waiters, MS milliseconds each) or ``default`` (the server's own)."""
    if spec == "default":
        return None
    waiters, _, wait_ms = spec.partition("/")
    return int(waiters), int(wait_ms or 0)


def section_latency(args: argparse.Namespace) -> None:
    """Bulk requests from one client, then from ``--clients`` at once, on one server
    (``--workers`` workers, ``--bulk-queue`` admitted at once per worker), once per
    ``--admissions`` configuration (how many may wait for a place, for how long; each on a
    fresh database, in the order given, so alternating them compares like with like): the
    p95 of the requests the server answered, the share it refused (429), the p95 per batch
    from its first attempt to its answer, retries included, attempts per batch, spans/s."""
    for backend in args.backends:
        for spec in args.admissions.split(","):
            with database(backend) as db:
                if db is None:
                    print({"section": "latency", "backend": backend, "skipped": "no PostgreSQL server"})
                    break
                servers = Servers(db, 1, args.workers, args.bulk_queue, _admission(spec))
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
            clients = args.clients
            print({"section": "latency", "backend": backend, "workers": args.workers, "batch": args.batch,
                   "bulk_queue": args.bulk_queue or "default", "waiters/wait_ms": spec,
                   "answered_p95_ms_1_client": alone["p95_ms"], f"answered_p95_ms_{clients}_clients": crowd["p95_ms"],
                   "answered_p95_ratio": round(crowd["p95_ms"] / max(1, alone["p95_ms"]), 2),
                   f"refused_share_{clients}_clients": crowd["refused_share"],
                   f"end_to_end_p95_ms_{clients}_clients": crowd["p95_end_to_end_ms"],
                   "end_to_end_p95_ratio": round(crowd["p95_end_to_end_ms"] / max(1, alone["p95_end_to_end_ms"]), 2),
                   f"attempts_per_batch_{clients}_clients": crowd["attempts_per_batch"],
                   f"most_attempts_{clients}_clients": crowd["most_attempts"],
                   f"batches_over_4_attempts_{clients}_clients": crowd["over_4_attempts"],
                   "batches": requests, "refused_1_client": alone["pushed_back"],
                   "spans_per_s_1_client": alone["spans_per_s"],
                   f"spans_per_s_{clients}_clients": crowd["spans_per_s"],
                   "throughput_ratio": round(crowd["spans_per_s"] / max(1, alone["spans_per_s"]), 2),
                   "load": load()}, flush=True)


# --------------------------------------------------------------------------- reads and appends


def _median_ms(action: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 2)


def _ratio(by_size: dict[int, float]) -> float:
    """Milliseconds at the largest size over milliseconds at the smallest."""
    sizes = sorted(by_size)
    return round(by_size[sizes[-1]] / max(0.01, by_size[sizes[0]]), 2)


def _analyze(db: Database, engine: sa.Engine) -> None:
    if db.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")


def _span_reads(folio: object, principal: object) -> dict[str, Callable[[], object]]:
    from agentfolio.app.registry import PageRequest, Sorting, SpanList

    service = folio.registry  # type: ignore[attr-defined]

    def spans(sort: str, direction: str, offset: int = 0, **filters: str) -> Callable[[], object]:
        return lambda: service.list_spans(principal, SpanList(page=PageRequest(offset, 100, Sorting(sort, direction)),
                                                              **filters))

    return {"newest_by_id": spans("id", "desc"), "by_started_at": spans("started_at", "desc"),
            "invalid_by_started_at": spans("started_at", "desc", validation_status="invalid"),
            "failed_by_id": spans("id", "desc", status="failed"),
            "page_50_by_id": spans("id", "desc", offset=5000)}


def section_reads(args: argparse.Namespace) -> None:
    """Span list and session list/search latency as what is stored grows (in-process,
    through the application layer: the same calls the API and viewer make)."""
    from agentfolio.app import Agentfolio
    from agentfolio.app.registry import AgentCreate, InstanceRegister, Principal, SpanCreate
    from agentfolio.app.registry.fields import schema_version_draft

    span_sizes = [int(size) for size in args.span_sizes.split(",")]
    session_sizes = [int(size) for size in args.session_sizes.split(",")]
    for backend in args.backends:
        with database(backend) as db:
            if db is None:
                print({"section": "reads", "backend": backend, "skipped": "no PostgreSQL server"})
                continue
            folder = tempfile.TemporaryDirectory()
            settings = Settings(data_dir=Path(folder.name), database_url=db.url, session_ttl=0)
            folio = Agentfolio.open(settings)
            try:
                principal = Principal(folio.accounts.ensure("reads"))
                service = folio.registry
                agent = service.create_agent(principal, AgentCreate(name="reads")).id
                version = schema_version_draft({"external_identifier": "v", "span_type_schemas": [
                    {"name": "step", "params_schema": {"type": "object", "required": ["n"]}}]},
                    "agent_schema_version")
                for run in range(10):
                    instance = service.register_instance(principal, InstanceRegister(
                        agent_id=agent, agent_version={"name": "x"}, agent_schema_version=version)).id
                    for number in range(100):  # one span in ten breaks its schema, one in twenty fails
                        service.create_span(principal, SpanCreate(
                            agent_instance_id=instance, schema_name="step", status="failed" if number % 20 == 0
                            else "active", payload={} if number % 10 == 0 else {"n": number + run}))
                figures: dict[str, dict[int, float]] = {}
                for size in span_sizes:
                    stored = grow(db, size)
                    _analyze(db, folio.store.engine)
                    for name, action in _span_reads(folio, principal).items():
                        action()  # warm
                        figures.setdefault(name, {})[stored] = _median_ms(action)
                    print({"section": "reads", "backend": backend, "spans": stored,
                           **{name: by_size[stored] for name, by_size in figures.items()}, "load": load()}, flush=True)
                first, last = span_sizes[0], span_sizes[-1]
                print({"section": "reads", "backend": backend, "what": f"span lists, ms at {last} / ms at {first}",
                       **{name: _ratio(by)
                          for name, by in figures.items()}}, flush=True)
                _session_reads(args, db, folio, session_sizes, backend)
            finally:
                folio.close()
                folder.cleanup()


WORDS = ("weather", "train", "museum", "coffee", "invoice", "refund", "flight", "hotel", "meeting", "report")


def _seed_document(number: int) -> dict:
    topic = WORDS[number % len(WORDS)]
    texts = [f"please check the {topic} for case {number}", f"the {topic} looks fine, reference r{number}",
             f"thanks, and the {WORDS[(number + 3) % len(WORDS)]} too", "done"]
    if number % 20_000 == 7:
        texts[1] += " zanzibar"  # a rare word: one session in twenty thousand
    return {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request" if i % 2 == 0 else "response", "createdAt": f"2025-11-04T19:33:{i:02d}Z",
         "correlationId": f"c{number}", "messages": [{"role": "user" if i % 2 == 0 else "assistant",
                                                       "contents": [{"$type": "text", "text": text}]}]}
        for i, text in enumerate(texts)]}}


def grow_sessions(db: Database, folio: object, account: object, target: int) -> int:
    """Sessions stored until ``target``, written as ``agentfolio import`` writes them: each
    checked and cut into rows in Python, a thousand a transaction (entries by COPY on
    PostgreSQL), search index and counted facts included — about 15x faster than one
    ``create`` each, which made 100,000 sessions on PostgreSQL take an hour."""
    sessions = folio.store.sessions.of(account)  # type: ignore[attr-defined]
    stored = sessions.count()
    while stored < target:
        sessions.create_prepared([sessions.prepare(_seed_document(number), session_id=f"s{number}",
                                                   agent=f"agent-{number % 50}")
                                  for number in range(stored, min(target, stored + 1000))])
        stored = sessions.count()
    return int(stored)


def _session_reads(args: argparse.Namespace, db: Database, folio: object, sizes: list[int], backend: str) -> None:
    from agentfolio.store import SessionCursor

    account = folio.accounts.ensure("reads")  # type: ignore[attr-defined]
    sessions = folio.store.sessions.of(account)  # type: ignore[attr-defined]
    figures: dict[str, dict[int, float]] = {}
    for size in sizes:
        stored = grow_sessions(db, folio, account, size)
        _analyze(db, folio.store.engine)  # type: ignore[attr-defined]
        deep = sessions.list(limit=1, offset=min(stored - 1, 5000))[0]
        actions = {
            "list_first_page": lambda: sessions.list(limit=50),
            "list_by_agent": lambda: sessions.list(agent="agent-7", limit=50),
            "list_after_cursor": lambda deep=deep: sessions.list(limit=50, after=SessionCursor.after(deep)),
            "search_rare_word": lambda: sessions.list(text="zanzibar", limit=50),
            "search_word_prefix": lambda: sessions.list(text="refer r12", limit=50),
            "search_common_word": lambda: sessions.list(text="museum", limit=50),
        }
        for name, action in actions.items():
            action()
            figures.setdefault(name, {})[stored] = _median_ms(action)
        print({"section": "reads", "backend": backend, "sessions": stored,
               **{name: by[stored] for name, by in figures.items()}, "load": load()}, flush=True)
    print({"section": "reads", "backend": backend, "what": f"session lists, ms at {sizes[-1]} / ms at {sizes[0]}",
           **{name: _ratio(by)
              for name, by in figures.items()}}, flush=True)


def section_append(args: argparse.Namespace) -> None:
    """Append latency (one turn, If-Match version) at 10 and ``--entries`` entries."""
    from agentfolio.app import Agentfolio

    for backend in args.backends:
        with database(backend) as db:
            if db is None:
                print({"section": "append", "backend": backend, "skipped": "no PostgreSQL server"})
                continue
            folder = tempfile.TemporaryDirectory()
            folio = Agentfolio.open(Settings(data_dir=Path(folder.name), database_url=db.url, session_ttl=0))
            try:
                account = folio.accounts.ensure("append")
                sessions = folio.store.sessions.of(account)
                result: dict[str, float] = {}
                for length in (10, args.entries):
                    turns = _seed_document(1)["data"]["conversationHistory"]
                    history = [dict(turns[i % 4], correlationId=f"c{i}") for i in range(length)]
                    created = sessions.create({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}},
                                              session_id=f"long-{length}")
                    version = created.session.version
                    times = []
                    for i in range(args.appends):
                        start = time.perf_counter()
                        version = sessions.append(f"long-{length}", dict(turns[i % 4], correlationId=f"n{i}"),
                                                  expected_version=version).session.version
                        times.append(time.perf_counter() - start)
                    result[f"ms_at_{length}"] = round(statistics.median(times) * 1000, 2)
                print({"section": "append", "backend": backend, **result,
                       "ratio": round(result[f"ms_at_{args.entries}"] / max(0.001, result["ms_at_10"]), 2),
                       "load": load()}, flush=True)
            finally:
                folio.close()
                folder.cleanup()


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "ingest": section_ingest,
    "flatness": section_flatness,
    "latency": section_latency,
    "reads": section_reads,
    "append": section_append,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {', '.join(SECTIONS)}")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--paths", default=",".join(PATHS), help="paths to send spans through, of otlp and bulk (comma-separated; default both)")
    parser.add_argument("--spans", type=int, default=20_000, help="spans sent in the ingest section")
    parser.add_argument("--batch", type=int, default=512, help="spans per request")
    parser.add_argument("--senders", type=int, default=4, help="client threads in ingest and flatness")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers per server")
    parser.add_argument("--base", type=int, default=10_000, help="spans stored before the first flatness window")
    parser.add_argument("--stored", type=int, default=500_000, help="spans stored before the second window")
    parser.add_argument("--window", type=int, default=10_000, help="spans sent in each flatness window")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients in the latency section")
    parser.add_argument("--requests", type=int, default=40, help="bulk requests per latency measurement")
    parser.add_argument("--bulk-queue", type=int, default=None,
                        help="AGENTFOLIO_BULK_QUEUE of the latency section's server (default: the server's own)")
    parser.add_argument("--admissions", default="default,2/1000",
                        help="latency section: bulk waiting-room configurations to compare, each W/MS (W requests "
                             "may wait MS milliseconds for a place; 0/0 refuses at once) or 'default'")
    parser.add_argument("--span-sizes", default="10000,100000,1000000", help="spans stored at each reads step")
    parser.add_argument("--session-sizes", default="10000,100000", help="sessions stored at each reads step")
    parser.add_argument("--entries", type=int, default=100_000, help="entries of the long session in append")
    parser.add_argument("--appends", type=int, default=50, help="appends timed per length")
    args = parser.parse_args()
    args.backends = args.backends.split(",")
    args.paths = args.paths.split(",")
    for path in args.paths:
        if path not in PATHS:  # anything else would be sent as bulk
            parser.error(f"unknown path {path!r} (known: {', '.join(PATHS)})")
    for name in args.only.split(","):
        if name not in SECTIONS:
            parser.error(f"unknown section {name!r} (known: {', '.join(SECTIONS)})")
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
