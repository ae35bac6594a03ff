"""Benchmark: OTel spans per second from the OpenTelemetry SDK's OTLP/HTTP exporter until
queryable in ``agentfolio serve`` (one server process, its own), on SQLite and PostgreSQL.

The spans are LLM spans (``chat {model}`` with ``gen_ai.input.messages`` /
``gen_ai.output.messages`` of about 1 KB), 8 per trace under an ``invoke_agent`` root,
built as SDK ``ReadableSpan`` objects before timing and sent with
``OTLPSpanExporter.export`` (the exporter encodes and posts them, as in an application)
from ``--senders`` threads, ``--batch`` spans per request.  The server answers once the
spans are stored, so the last answer is the moment all are queryable; the stored count
is checked afterwards.  The conversations (sessions) built from the spans follow from a
queue in the database: ``conversations_done_after_s`` is how long after the last answer
the queue is empty, and ``spans_per_s_with_conversations`` the rate counting that time.  The rate is printed per tenth of the run, to show whether it
stays flat as the table grows.

The baseline, in the same server and run: the same number of spans of the same size
through the Prefactor API's ``POST /api/v1/bulk`` (``agent_spans/create`` items with the
messages as payload), from as many senders; the figure to beat is the ratio.

Then a sender faster than the server (``--flood`` threads posting without waiting for
one another) checks back-pressure: the server's peak resident memory and how many
requests it answered 429 (too many at once) or 503 (conversations too far behind).

Arize Phoenix side by side, in the same run: ``phoenix serve`` (its own SQLite file in a
fresh working folder) receives ``--phoenix-spans`` of the same spans from the same
exporter and senders; its rate counts until its spans table holds them all (Phoenix
answers the exporter before it processes spans, so the answers say nothing).  Phoenix
is not a dependency of agentfolio: install it where you like (``pip install
arize-phoenix``, best in a virtual environment of its own) and name its Python with
``--phoenix-python`` or ``PHOENIX_PYTHON`` (default: this Python, if it can import
``phoenix``); without it the comparison is skipped with a line saying so.  Bytes per
span compare the SQLite files (with their write-ahead logs) after the same spans;
``bulk_bytes_per_span`` is what the bulk baseline's spans then added to the same file.

PostgreSQL comes from ``AGENTFOLIO_TEST_POSTGRES_URL`` or ``scripts/ensure-postgres.sh``.
``--cpu`` measures instead the CPU time per span in this process (receiving, then the
conversations), the figure to compare across runs on a machine others are using; with
``--stored N`` it measures again once N spans are stored, to show the cost stays flat.
It runs on SQLite unless ``--backends`` names others; on PostgreSQL the server processes'
CPU time for the same spans is printed beside it.

``--late-roots RUNS`` sends the spans as exporters send long runs: as they end, RUNS runs
under way at once, so each run's children come before its root and in earlier requests
(its spans are first filed under the service, then moved to the agent's trace).

Usage: python bench/otlp.py [--spans N] [--batch N] [--senders N] [--flood N] [--backends sqlite,postgresql]
                            [--phoenix-spans N] [--phoenix-python PATH] [--cpu [--stored N]]
                            [--late-roots RUNS]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.util.instrumentation import InstrumentationScope  # noqa: E402
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags  # noqa: E402
from spans import cpu_seconds  # noqa: E402  (the bulk benchmark's reading of /proc)

from agentfolio.settings import Settings  # noqa: E402
from agentfolio.store import Store  # noqa: E402

SPANS_PER_TRACE = 8
RESOURCE = Resource.create({"service.name": "bench-service"})
SCOPE = InstrumentationScope("bench", "1.0")
TEXT = "The quick brown fox jumps over the lazy dog. " * 5  # ~225 characters per message


#: ``--late-roots``: how many traces run at once when spans are sent as they end (see make_spans).
LATE_ROOTS: int | None = None


def make_spans(count: int, seed: int) -> list[ReadableSpan]:
    """``count`` spans, eight per trace, each trace whole and root first; with
    :data:`LATE_ROOTS` set, in the order an exporter sends spans as they end when that
    many runs are under way at once: the last child of each run, then the one before, and
    so on, each run's root last (in a later request than most of its children)."""
    spans = _spans(count, seed)
    if LATE_ROOTS is None:
        return spans
    traces = [spans[start:start + SPANS_PER_TRACE] for start in range(0, len(spans), SPANS_PER_TRACE)]
    ordered = []
    for first in range(0, len(traces), LATE_ROOTS):
        running = traces[first:first + LATE_ROOTS]
        for position in reversed(range(SPANS_PER_TRACE)):
            ordered += [trace[position] for trace in running if position < len(trace)]
    return ordered


def _spans(count: int, seed: int) -> list[ReadableSpan]:
    spans = []
    start = time.time_ns() - 3_600 * 10**9
    for index in range(count):
        trace_no, position = divmod(index, SPANS_PER_TRACE)
        trace_id = (seed << 64) | (trace_no + 1)
        # Span ids unique across seeds too: Phoenix keeps one span per span id whatever its
        # trace, so a repeated id would never be counted and its wait would run to the limit.
        first_id = (seed << 48) | (trace_no * 16 + 1)
        root = SpanContext(trace_id, first_id, is_remote=False, trace_flags=TraceFlags(1))
        if position == 0:
            context, parent = root, None
            attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench-agent"}
            name = "invoke_agent bench-agent"
        else:
            context = SpanContext(trace_id, first_id + position, is_remote=False, trace_flags=TraceFlags(1))
            parent = root
            history = [{"role": "user", "parts": [{"type": "text", "content": f"{TEXT} #{i}"}]} for i in range(2)]
            attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "bench-model",
                          "gen_ai.input.messages": json.dumps(history),
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                              {"type": "text", "content": f"{TEXT} answer {position}"}]}]),
                          "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 60}
            name = "chat bench-model"
        at = start + index * 1000
        spans.append(ReadableSpan(name=name, context=context, parent=parent, resource=RESOURCE,
                                  attributes=attributes, kind=SpanKind.CLIENT, start_time=at, end_time=at + 500,
                                  instrumentation_scope=SCOPE))
    return spans


def postgres_url() -> str | None:
    url = os.environ.get("AGENTFOLIO_TEST_POSTGRES_URL")
    if url:
        return url
    done = subprocess.run(["bash", str(ROOT / "scripts" / "ensure-postgres.sh")], capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else None


@contextmanager
def fresh_database(backend: str) -> Iterator[str | None]:
    """The URL of a new, empty database of ``backend``: a SQLite file in a folder of its
    own, or a schema of its own on the PostgreSQL server (``None``: there is none)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.sqlite3"
        return
    url = postgres_url()
    if url is None:
        yield None
        return
    import secrets

    import sqlalchemy as sa

    schema = "bench_" + secrets.token_hex(4)
    admin = sa.create_engine(url)
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in url else "?"
    try:
        yield f"{url}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    def __init__(self, settings: Settings) -> None:
        from tests.storage import free_port, settings_env

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = settings_env(settings)
        self.process = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "agentfolio.server:app_from_env",
                                         "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/openapi.json", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def bulk_baseline(url: str, headers: dict[str, str], spans: int, batch: int, senders: int) -> float:
    """Spans/s through ``/api/v1/bulk`` with payloads the size of the OTel spans' messages."""
    with httpx.Client(base_url=url, headers=headers, timeout=300) as api:
        agent = api.post("/api/v1/agent", json={"details": {"name": "bulk-baseline"}}).json()["details"]["id"]
        instance = api.post("/api/v1/agent_instance/register", json={
            "agent_id": agent, "agent_version": {"name": "bench"}}).json()["details"]["id"]
    history = [{"role": "user", "parts": [{"type": "text", "content": f"{TEXT} #{i}"}]} for i in range(2)]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"{TEXT} answer"}]}]
    bodies = [json.dumps({"items": [{"_type": "agent_spans/create", "idempotency_key": f"b-{start + i}",
                                     "details": {"agent_instance_id": instance, "schema_name": "chat bench-model",
                                                 "status": "complete", "payload": {"input": history},
                                                 "result_payload": {"output": answer}}}
                                    for i in range(min(batch, spans - start))]}).encode()
              for start in range(0, spans, batch)]
    cursor = iter(bodies)
    lock = threading.Lock()

    def send() -> None:
        with httpx.Client(base_url=url, headers={**headers, "Content-Type": "application/json"}, timeout=300) as api:
            while True:
                with lock:
                    body = next(cursor, None)
                if body is None:
                    return
                assert api.post("/api/v1/bulk", content=body).status_code == 200

    began = time.perf_counter()
    threads = [threading.Thread(target=send) for _ in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return spans / (time.perf_counter() - began)


def run_backend(name: str, database_url: str, spans: int, batch: int, senders: int, flood: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        # The bulk baseline takes every sender at once (no 429s to wait out), as it did before admission.
        settings = Settings(data_dir=Path(folder), database_url=database_url or f"sqlite:///{folder}/bench.sqlite3",
                            bulk_queue_size=max(senders, 1))
        with Store.open(settings) as store:
            token, _account = store.accounts.create_token("bench")
        server = Server(settings)
        try:
            headers = {"Authorization": f"Bearer {token}"}
            warm = make_spans(SPANS_PER_TRACE * 4, seed=1)
            OTLPSpanExporter(endpoint=server.url + "/v1/traces", headers=headers).export(warm)
            prepared = make_spans(spans, seed=2)
            batches = [prepared[i:i + batch] for i in range(0, len(prepared), batch)]
            done_at: list[tuple[float, int]] = []
            lock = threading.Lock()
            failures = []
            cursor = iter(range(len(batches)))

            def send() -> None:
                exporter = OTLPSpanExporter(endpoint=server.url + "/v1/traces", headers=headers, timeout=120)
                while True:
                    with lock:
                        index = next(cursor, None)
                    if index is None:
                        return
                    result = exporter.export(batches[index])
                    with lock:
                        if result.name != "SUCCESS":
                            failures.append(index)
                        done_at.append((time.perf_counter(), len(batches[index])))

            peak = [0]
            stop = threading.Event()

            def watch() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], rss_kib(server.process.pid))
                    time.sleep(0.05)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            cpu_began = cpu_seconds(server.process.pid)
            began = time.perf_counter()
            threads = [threading.Thread(target=send) for _ in range(senders)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - began
            cpu_answered = cpu_seconds(server.process.pid)
            # The conversations follow the answers, from the queue in the database: how long
            # after the last answer the last of them is stored.
            lag = conversations_lag(settings, began + elapsed)
            cpu_done = cpu_seconds(server.process.pid)
            total = sum(count for _, count in done_at)
            rates = []
            tenth = max(1, -(-len(done_at) // 10))  # ten windows (fewer when there are fewer requests)
            ordered = sorted(done_at)
            previous = began
            for start in range(0, len(ordered), tenth):
                chunk = ordered[start:start + tenth]
                rates.append(round(sum(c for _, c in chunk) / max(1e-9, chunk[-1][0] - previous)))
                previous = chunk[-1][0]
            stored = stored_spans(settings)
            on_disk = sqlite_bytes(Path(folder) / "bench.sqlite3") if not database_url else None
            steady_rss = peak[0]
            baseline = bulk_baseline(server.url, headers, spans, batch, senders)
            # What the bulk spans added to the file (their spans, idempotency records, counts).
            bulk_on_disk = sqlite_bytes(Path(folder) / "bench.sqlite3") - on_disk if on_disk else None

            # Flood: many raw posts at once, nobody waiting for anybody.
            flood_spans = make_spans(batch * flood, seed=3)
            bodies = [encode_spans(flood_spans[i:i + batch]).SerializeToString()
                      for i in range(0, len(flood_spans), batch)]
            answers: list[int] = []

            def post(body: bytes) -> None:
                response = httpx.post(server.url + "/v1/traces", content=body, timeout=120,
                                      headers={**headers, "Content-Type": "application/x-protobuf"})
                with lock:
                    answers.append(response.status_code)

            peak[0] = 0
            posters = [threading.Thread(target=post, args=(body,)) for body in bodies]
            for thread in posters:
                thread.start()
            for thread in posters:
                thread.join()
            stop.set()
            watcher.join()
            return {"backend": name, "spans": total, "seconds": round(elapsed, 2),
                    "spans_per_s": round(total / elapsed), "bulk_baseline_per_s": round(baseline),
                    "otlp_vs_bulk": round(total / elapsed / baseline, 2), "per_tenth": rates,
                    "stored": stored - len(warm),
                    "failures": len(failures), "rss_mib": round(steady_rss / 1024),
                    "conversations_done_after_s": round(lag, 2),
                    "spans_per_s_with_conversations": round(total / (elapsed + lag)),
                    # The server's CPU time per span until the last answer (receiving, and the
                    # conversation worker's share meanwhile), then until the queue is empty.
                    **({"server_cpu_us_per_span_answered": round((cpu_answered - cpu_began) * 1e6 / total),
                        "server_cpu_us_per_span_with_conversations": round((cpu_done - cpu_began) * 1e6 / total)}
                       if None not in (cpu_began, cpu_answered, cpu_done) else {}),
                    "flood_requests": len(bodies), "flood_429": answers.count(429), "flood_503": answers.count(503),
                    "flood_ok": answers.count(200), "flood_rss_mib": round(peak[0] / 1024),
                    **({"bytes_per_span": round(on_disk / max(1, stored)),
                        "bulk_bytes_per_span": round(bulk_on_disk / spans)} if on_disk and bulk_on_disk else {})}
        finally:
            server.stop()


def conversations_lag(settings: Settings, answered: float) -> float:
    """Seconds from ``answered`` (a perf_counter moment) until no conversation work waits
    in the server's queue (read from its database, as another process would)."""
    import sqlalchemy as sa

    from agentfolio.store.registry_tables import otel_work

    with Store.open(settings) as store:
        while True:
            with store.engine.connect() as connection:
                waiting = connection.execute(sa.select(sa.func.count()).select_from(otel_work)).scalar_one()
            if not waiting:
                return max(0.0, time.perf_counter() - answered)
            time.sleep(0.05)


def stored_spans(settings: Settings) -> int:
    """The span rows in the database, counted exactly (the API's ``item_count`` stops
    counting past a window and answers an estimate)."""
    import sqlalchemy as sa

    engine = sa.create_engine(settings.effective_database_url)
    try:
        with engine.connect() as connection:
            return int(connection.exec_driver_sql("SELECT count(*) FROM registry_spans").scalar_one())
    finally:
        engine.dispose()


def sqlite_bytes(path: Path) -> int:
    """The pages a SQLite database uses, once its write-ahead log is checkpointed into it
    (a log holds old copies of pages until then; free pages are not counted)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(path, timeout=60)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages, free, size = (connection.execute(f"PRAGMA {name}").fetchone()[0]
                             for name in ("page_count", "freelist_count", "page_size"))
    return int((pages - free) * size)


def phoenix_python(chosen: str | None) -> str | None:
    """A Python that can import ``phoenix``: the one named, else this one if it can."""
    for candidate in (chosen, os.environ.get("PHOENIX_PYTHON"), sys.executable):
        if candidate and subprocess.run([candidate, "-c", "import phoenix.server"], capture_output=True).returncode == 0:
            return candidate
    return None


def run_phoenix(python: str, spans: int, batch: int, senders: int) -> dict:
    """Spans/s from the exporter until Phoenix's spans table holds them all, and its bytes per span."""
    import sqlite3

    from tests.storage import free_port

    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        env = {**os.environ, "PHOENIX_WORKING_DIR": folder, "PHOENIX_PORT": str(port),
               "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        process = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 600  # a loaded machine imports Phoenix slowly
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or process.poll() is not None:
                    return {"backend": "phoenix", "skipped": "phoenix serve did not start"}
                time.sleep(0.5)
            database = Path(folder) / "phoenix.db"

            def count() -> int:
                try:
                    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as connection:
                        return int(connection.execute("SELECT count(*) FROM spans").fetchone()[0])
                except sqlite3.Error:
                    return 0

            warm = make_spans(SPANS_PER_TRACE * 4, seed=1)
            OTLPSpanExporter(endpoint=url + "/v1/traces").export(warm)
            while count() < len(warm) and time.monotonic() < deadline:
                time.sleep(0.2)
            prepared = make_spans(spans, seed=2)
            batches = [prepared[i:i + batch] for i in range(0, len(prepared), batch)]
            cursor = iter(batches)
            lock = threading.Lock()

            def send() -> None:
                exporter = OTLPSpanExporter(endpoint=url + "/v1/traces", timeout=120)
                while True:
                    with lock:
                        chunk = next(cursor, None)
                    if chunk is None:
                        return
                    exporter.export(chunk)

            began = time.perf_counter()
            threads = [threading.Thread(target=send) for _ in range(senders)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            target = len(warm) + spans
            limit = time.monotonic() + max(600.0, spans / 5)
            while (done := count()) < target and time.monotonic() < limit:
                time.sleep(0.2)
            elapsed = time.perf_counter() - began
            stored = done - len(warm)
            return {"backend": "phoenix", "spans": stored, "seconds": round(elapsed, 2),
                    "spans_per_s": round(stored / elapsed, 1),
                    "bytes_per_span": round(sqlite_bytes(database) / max(1, done))}
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cpu_per_span(spans: int, batch: int, stored: int = 0, backend: str = "sqlite") -> list[dict]:
    """CPU time this process spends per span, in process (no HTTP, one thread): the
    receiver's work (decode, map, store) and then the conversation worker's.
    CPU time, unlike the rates above, hardly moves with what else the machine runs.
    With ``stored``, the same again once the database holds that many spans (stored rows
    copied in SQL, as ``bench/scale.py`` grows a database): whether the cost is flat.
    On PostgreSQL the database's own work is in its server processes: their CPU time
    (``db_cpu_us_per_span``, read from /proc for this run's connections) is added too."""
    from types import SimpleNamespace

    from agentfolio.app.otlp import OtlpIngest

    with tempfile.TemporaryDirectory() as folder, fresh_database(backend) as url:
        if url is None:
            return [{"in_process": backend, "skipped": "no PostgreSQL server"}]
        tag = f"bench_cpu_{os.getpid()}"
        if backend == "postgresql":
            url += ("&" if "?" in url else "?") + f"application_name={tag}"
        settings = Settings(data_dir=Path(folder), database_url=url)
        with Store.open(settings) as store:
            _token, account = store.accounts.create_token("bench")
            ingest = OtlpIngest(store)
            ingest.export(account, encode_spans(make_spans(SPANS_PER_TRACE * 4, seed=1)).SerializeToString(),
                          encoding="protobuf")
            ingest.drain()

            def database_cpu() -> float:
                return server_cpu_seconds(store.engine, tag) if backend == "postgresql" else 0.0

            def window(seed: int) -> dict:
                made = make_spans(spans, seed=seed)
                bodies = [encode_spans(made[i:i + batch]).SerializeToString() for i in range(0, spans, batch)]
                already = stored_spans(settings)
                began, wall, db_began = time.process_time(), time.perf_counter(), database_cpu()
                for body in bodies:
                    ingest.export(account, body, encoding="protobuf")
                received, received_wall, db_received = time.process_time(), time.perf_counter(), database_cpu()
                ingest.drain()
                built = time.process_time()
                figures = {"in_process": backend, "stored_before": already, "spans": spans,
                           "ingest_cpu_us_per_span": round((received - began) * 1e6 / spans),
                           "ingest_wall_us_per_span": round((received_wall - wall) * 1e6 / spans),
                           "conversations_cpu_us_per_span": round((built - received) * 1e6 / spans),
                           "ingest_spans_per_cpu_s": round(spans / (received - began))}
                if backend == "postgresql":
                    figures["db_cpu_us_per_span"] = round((db_received - db_began) * 1e6 / spans)
                else:
                    figures["bytes_per_span"] = round(sqlite_bytes(Path(url.removeprefix("sqlite:///")))
                                                      / stored_spans(settings))
                return figures

            results = [window(seed=2)]
            if stored:
                from scale import grow  # the same growth as the scale benchmark's flatness section

                grow(SimpleNamespace(url=settings.effective_database_url, name=backend), stored)
                results.append(window(seed=3))
                first, last = results
                for name in ("ingest_cpu_us_per_span", "conversations_cpu_us_per_span", "db_cpu_us_per_span"):
                    if name in first:
                        last[name.replace("_us_per_span", "_vs_first")] = round(last[name] / max(1, first[name]), 2)
    return results


def server_cpu_seconds(engine: object, tag: str) -> float:
    """User + system CPU seconds of the PostgreSQL server processes serving the
    connections named ``tag`` (on this machine: read from /proc; 0 where it cannot be)."""
    import sqlalchemy as sa

    with engine.connect() as connection:  # type: ignore[attr-defined]
        pids = connection.execute(sa.text("SELECT pid FROM pg_stat_activity WHERE application_name = :tag"),
                                  {"tag": tag}).scalars().all()
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of stat)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--flood", type=int, default=64, help="requests posted at once in the back-pressure check")
    parser.add_argument("--backends", default=None, help="default: sqlite,postgresql (with --cpu: sqlite)")
    parser.add_argument("--phoenix-spans", type=int, default=2_000,
                        help="spans sent to Arize Phoenix (0: skip it); it makes ~60 spans/s queryable")
    parser.add_argument("--phoenix-python", help="a Python that can import phoenix (default: PHOENIX_PYTHON, this one)")
    parser.add_argument("--cpu", action="store_true",
                        help="only the CPU time per span, in process (steadier than rates on a busy machine)")
    parser.add_argument("--stored", type=int, default=0,
                        help="with --cpu: measure again once this many spans are stored (flatness)")
    parser.add_argument("--late-roots", type=int, default=None, metavar="RUNS",
                        help="send spans as they end, RUNS runs under way at once (children first, roots "
                             "last: a run's spans span requests); default: each trace whole, root first")
    args = parser.parse_args()
    if args.late_roots is not None and args.late_roots < 1:
        parser.error("--late-roots: at least one run under way")
    global LATE_ROOTS
    LATE_ROOTS = args.late_roots
    args.backends_given = args.backends is not None
    args.backends = args.backends or "sqlite,postgresql"
    if args.cpu:
        # In process, SQLite unless --backends names others.
        chosen = args.backends.split(",") if args.backends_given else ["sqlite"]
        for backend in chosen:
            for result in cpu_per_span(args.spans, args.batch, args.stored, backend):
                print({**result, "load": round(os.getloadavg()[0], 1)}, flush=True)
        return
    ours: dict[str, dict] = {}
    for backend in args.backends.split(","):
        with fresh_database(backend) as url:
            if url is None:
                print({"backend": backend, "skipped": "no PostgreSQL server"})
                continue
            ours[backend] = run_backend(backend, "" if backend == "sqlite" else url, args.spans, args.batch,
                                        args.senders, args.flood)
            print(ours[backend], flush=True)
    if args.phoenix_spans <= 0:
        return
    python = phoenix_python(args.phoenix_python)
    if python is None:
        print({"backend": "phoenix", "skipped": "arize-phoenix is not installed: pip install arize-phoenix "
                                                "(in any virtual environment) and pass --phoenix-python"})
        return
    phoenix = run_phoenix(python, args.phoenix_spans, args.batch, args.senders)
    print(phoenix, flush=True)
    if "spans_per_s" in phoenix:
        print({"versus_phoenix": {backend: {"rate": round(result["spans_per_s"] / max(0.1, phoenix["spans_per_s"]), 1),
                                            **({"bytes": round(result["bytes_per_span"] / phoenix["bytes_per_span"], 2)}
                                               if "bytes_per_span" in result else {})}
                                  for backend, result in ours.items()}}, flush=True)


if __name__ == "__main__":
    main()
