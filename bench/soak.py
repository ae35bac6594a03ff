"""Soak: mixed load against a real ``agentfolio serve`` for N minutes, watching the server's
memory and open files (not run in CI).

The server is ``python -m agentfolio.cli serve`` on loopback (uvicorn in that process), on a
fresh SQLite data folder by default or on ``--database-url`` (PostgreSQL: a fresh account
each run, so an old database does no harm).  Worker threads each loop over a weighted mix:

* ``append``   a session created from the sample durable state, turns appended with
               ``If-Match``; every fourth turn carries 80 KiB of text (a blob); every 40
               turns the session is reset or deleted and a new one created, so the server's
               blob sweep (every 20 s here) has garbage to collect while appends race it;
* ``bulk``     100 spans created in one ``POST /api/v1/bulk`` (the Prefactor API);
* ``otlp``     an OTLP/HTTP protobuf export (``opentelemetry-proto``) of 20 GenAI spans;
* ``render``   ``POST /api/v1/render`` of the sample to canonical;
* ``viewer``   the viewer's pages (session list, a session, traces, agents) with a sign-in cookie;
* ``template`` spans read with ``include_summaries=true`` whose template is at the limits:
               a range of exactly 10,000 items, and a range fed a huge ``n`` by the span's
               data (answered "too large" within its render budget); now and then a schema
               version whose constant range bomb must be reported invalid;
* ``glob``     the viewer's compatibility checker with globs of 32 wildcards (the limit),
               8-part schemas, 256-part schemas over 8 globs (the parts limit), 2,000-part
               schemas (over the limit: 422), and now and then 256 parts with 256 distinct
               globs (~6 s on an idle core: decided, or out of time on a loaded machine) and
               an automaton bomb whose worker process is killed at the deadline (422).  A
               check within the limits is answered, or refused with the documented 422 when
               its 10 s deadline passes, running or waiting for one of the two check slots
               (a bomb holds one for the whole deadline); the soak counts those apart.

Every few seconds it samples the server's RSS and open file descriptors from ``/proc`` (and
counts its child processes: compatibility workers) and prints them with request counts,
p50/p95 latency and the 5xx seen so far.  At the end it prints latency by kind and exits 1
when any 5xx happened, when any answer was not the one expected (the soak is only as good as
its checks), or when memory or open files grew beyond a tolerance between the middle and the
last third of the run (the first third is warm-up: caches fill, pools open).  Memory is also
given as the slope of a straight line through the last two thirds' samples (MiB per 10
minutes): what keeps growing shows there, a warm-up that has reached its bounds does not.
The server gives the C allocator's free pages back every minute (agentfolio/server/memory.py),
so its resident size follows the memory in use rather than every arena's high-water mark.

Usage: python bench/soak.py [--minutes 30] [--database-url URL] [--workers 4]
                            [--sample-seconds 5] [--rss-tolerance-mib 48] [--fd-tolerance 12]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentfolio.settings import Settings  # noqa: E402
from agentfolio.store import Store  # noqa: E402

SAMPLE = (ROOT / "agentfolio" / "samples" / "durable-agent-state.sample.json").read_bytes()
BLOB_TEXT = "soak " * (80 * 1024 // 5)  # 80 KiB: over the 64 KiB blob threshold
SWEEP_SECONDS = 20
TURNS_PER_SESSION = 40

# The template limits (agentfolio/registry/liquid_sandbox.py): a range of exactly
# MAX_SEQUENCE_ITEMS items renders; one fed 20 million by the data reads "too large".
AT_LIMIT = "{{ (1..10000) | join: ',' | size }}"
FED = "{{ (1..n) | join: ',' | size }}"
CONSTANT_BOMB = "{{ (1..20000000) | join: ',' | size }}"
TOO_LARGE = "(summary too large: the template went over its render budget)"
SCHEMA_VERSION = {
    "external_identifier": "soak-v1",
    "span_type_schemas": [
        {"name": "limit", "params_schema": {"type": "object"}, "template": AT_LIMIT},
        {"name": "fed", "params_schema": {"type": "object"}, "template": FED},
        {"name": "llm", "params_schema": {"type": "object"}, "template": "{{ model }}: {{ prompt | truncate: 40 }}"},
    ],
}
# The glob limits (agentfolio/body/globs.py, schema.py): 32 wildcards in a glob, 256 parts.
WILD_32 = "/" + "/".join(["*"] * 32)
# 256 parts over 8 name globs: decided in well under a second on an idle core.
WIDE_OUTPUT = {"parts": [{"name": f"/p{i % 8}/*", "required": i % 2 == 0} for i in range(256)]}
WIDE_INPUT = {"parts": [{"name": f"/p{i % 8}/**"} for i in range(256)]}
# 256 parts with 256 distinct globs: ~6 s on an idle core (every glob is an automaton to
# build and split against the others), so past the 10 s deadline on a loaded machine.
DISTINCT_OUTPUT = {"parts": [{"name": f"/p{i}/*", "required": i % 2 == 0} for i in range(256)]}
DISTINCT_INPUT = {"parts": [{"name": f"/p{i}/**"} for i in range(256)]}
#: The checks within the limits that must be decided at least now and then: the cheap ones.
MUST_BE_DECIDED = ("32 wildcards", "8 parts", "256 parts")
NARROW_OUTPUT = {"parts": [{"name": f"/p{i}/*", "required": i % 2 == 0} for i in range(8)]}
NARROW_INPUT = {"parts": [{"name": f"/p{i}/**"} for i in range(8)]}
TOO_MANY = {"parts": [{"name": f"/q{i}/*"} for i in range(2000)]}
EXPLODING = "/x/*a" + "?" * 14  # an automaton of 2^14 states and more: stopped at the deadline


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def entry(text: str) -> dict[str, Any]:
    return {"$type": "request", "createdAt": "2025-11-04T19:40:00Z",
            "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}


def otlp_request(spans: int = 20) -> bytes:
    trace_id = secrets.token_bytes(16)
    now = time.time_ns()

    def attribute(key: str, value: str | int) -> KeyValue:
        any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
        return KeyValue(key=key, value=any_value)

    made = []
    parent = b""
    for index in range(spans):
        span_id = secrets.token_bytes(8)
        made.append(Span(
            trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=f"chat gpt-soak {index}",
            kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=now - 1_000_000 * (spans - index),
            end_time_unix_nano=now - 1_000_000 * (spans - index) + 500_000,
            attributes=[attribute("gen_ai.operation.name", "chat"), attribute("gen_ai.system", "openai"),
                        attribute("gen_ai.request.model", "gpt-soak"),
                        attribute("gen_ai.usage.input_tokens", 10 + index),
                        attribute("gen_ai.usage.output_tokens", 5)]))
        parent = parent or span_id
    resource = ResourceSpans(scope_spans=[ScopeSpans(spans=made)])
    resource.resource.attributes.append(attribute("service.name", "soak"))
    return ExportTraceServiceRequest(resource_spans=[resource]).SerializeToString()


# -- the server and its process ---------------------------------------------------------

class Server:
    def __init__(self, data_dir: Path, database_url: str | None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "AGENTFOLIO_DATA_DIR": str(data_dir), "AGENTFOLIO_LOG_LEVEL": "warning",
               "AGENTFOLIO_BLOB_SWEEP_INTERVAL": str(SWEEP_SECONDS)}
        if database_url:
            env["AGENTFOLIO_DATABASE_URL"] = database_url
        self.settings = Settings.from_env(env)
        self.log = (data_dir / "server.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentfolio.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited at start; see {data_dir / 'server.log'}")
            try:
                httpx.get(self.url + "/openapi.json", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit("the server did not start within 60 s")

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def fd_kinds(self) -> Counter[str]:
        """What the open descriptors are: sockets, pipes, the database's files, blobs, others."""
        kinds: Counter[str] = Counter()
        folder = f"/proc/{self.process.pid}/fd"
        for name in os.listdir(folder):
            try:
                target = os.readlink(f"{folder}/{name}")
            except OSError:
                continue
            if target.startswith(("socket:", "pipe:", "anon_inode:")):
                kinds[target.split(":")[0]] += 1
            elif ".sqlite3" in target:
                kinds["sqlite" + target.split(".sqlite3", 1)[1]] += 1
            elif "/blobs/" in target:
                kinds["blob"] += 1
            else:
                kinds["other"] += 1
        return kinds

    def children(self) -> int:
        pid = str(self.process.pid)
        count = 0
        for entry_ in Path("/proc").iterdir():
            if entry_.name.isdigit():
                try:
                    if (entry_ / "stat").read_text().rsplit(")", 1)[1].split()[1] == pid:
                        count += 1
                except (OSError, IndexError):
                    continue
        return count

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


# -- what was seen ----------------------------------------------------------------------

@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # transport errors: refused, timed out
    clock_budget_hits: int = 0
    #: Checks within the limits refused at their deadline, by (what, why).
    out_of_time: Counter[tuple[str, str]] = field(default_factory=Counter)
    within_limits: Counter[str] = field(default_factory=Counter)

    def record(self, kind: str, seconds: float, response: httpx.Response, expected: Callable[[httpx.Response], bool],
               what: str) -> None:
        # Judge the answer before taking the lock: a judge may count into the tally itself,
        # and the lock is not re-entrant (taking it twice stalled every worker for good).
        as_expected = response.status_code >= 500 or expected(response)
        with self.lock:
            self.latencies[kind].append(seconds)
            self.statuses[response.status_code] += 1
            if response.status_code >= 500:
                self.server_errors.append(f"{kind} {what}: {response.status_code} {response.text[:300]}")
            elif not as_expected:
                self.unexpected.append(f"{kind} {what}: {response.status_code} {response.text[:300]}")

    def requests(self) -> int:
        with self.lock:
            return sum(self.statuses.values())

    def all_latencies(self) -> list[float]:
        with self.lock:
            return [value for values in self.latencies.values() for value in values]


def quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (0.0, 0.0)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[94]


def status(*codes: int) -> Callable[[httpx.Response], bool]:
    return lambda response: response.status_code in codes


#: The two ways a check within the limits may be refused, as docs/security.md documents
#: them: stopped at its deadline while running, or still waiting for a check slot then.
OUT_OF_TIME = {"took longer than": "ran out of time", "did not start within": "waited for a slot"}


def out_of_time(response: httpx.Response) -> str | None:
    if response.status_code != 422:
        return None
    return next((why for words, why in OUT_OF_TIME.items() if words in response.text), None)


def decided_or_out_of_time(response: httpx.Response) -> bool:
    """A check within the limits is answered, or, on a machine too busy to finish it, stopped
    at its deadline with that reason (never another refusal)."""
    return response.status_code == 200 or out_of_time(response) is not None


# -- the load -------------------------------------------------------------------------

class Worker:
    def __init__(self, number: int, server: Server, token: str, instances: dict[str, str], tally: Tally,
                 stop_at: float) -> None:
        self.number = number
        self.server = server
        self.tally = tally
        self.stop_at = stop_at
        self.instances = instances
        self.random = random.Random(number)
        headers = {"Authorization": f"Bearer {token}"}
        self.api = httpx.Client(base_url=server.url, headers=headers, timeout=120)
        # A browser on the viewer's own pages: a sign-in cookie and same-origin fetch metadata.
        self.browser = httpx.Client(base_url=server.url, timeout=120,
                                    headers={"Sec-Fetch-Site": "same-origin", "Origin": server.url})
        signed_in = self.browser.post("/login", data={"token": token, "next": "/"})
        if signed_in.status_code != 303 or "agentfolio_session" not in self.browser.cookies:
            raise SystemExit(f"viewer sign-in failed: {signed_in.status_code} {signed_in.text[:300]}")
        self.session: str | None = None
        self.version = 0
        self.turns = 0
        self.sessions_made = 0
        self.spans_made = 0

    def timed(self, kind: str, what: str, expected: Callable[[httpx.Response], bool],
              call: Callable[[], httpx.Response]) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = call()
        except httpx.HTTPError as error:
            with self.tally.lock:
                self.tally.failures.append(f"{kind} {what}: {type(error).__name__}: {error}")
            return None
        self.tally.record(kind, time.perf_counter() - started, response, expected, what)
        return response

    def new_session(self) -> None:
        self.sessions_made += 1
        session = f"soak-w{self.number}-{self.sessions_made}-{secrets.token_hex(3)}"
        created = self.timed("append", "create", status(201), lambda: self.api.post(
            "/api/v1/sessions", params={"id": session, "agent": f"soak-agent-{self.number}"}, content=SAMPLE,
            headers={"Content-Type": "application/json"}))
        if created is not None and created.status_code == 201:
            self.session, self.version, self.turns = session, int(created.headers["etag"].strip('"')), 0

    def append(self) -> None:
        if self.session is None:
            self.new_session()
            return
        self.turns += 1
        if self.turns > TURNS_PER_SESSION:
            session, self.session = self.session, None
            if self.random.random() < 0.5:
                self.timed("append", "delete", status(200), lambda: self.api.delete(f"/api/v1/sessions/{session}"))
            else:
                reset = self.timed("append", "reset", status(200), lambda: self.api.post(
                    f"/api/v1/sessions/{session}/reset", headers={"If-Match": f'"{self.version}"'}))
                if reset is not None and reset.status_code == 200:
                    self.session, self.turns = session, 0
                    self.version = int(reset.headers.get("etag", f'"{self.version + 1}"').strip('"'))
            return
        text = BLOB_TEXT if self.turns % 4 == 0 else f"turn {self.turns} of worker {self.number}"
        appended = self.timed("append", "entry", status(201), lambda: self.api.post(
            f"/api/v1/sessions/{self.session}/entries", json=entry(text),
            headers={"If-Match": f'"{self.version}"'}))
        if appended is not None and appended.status_code == 201:
            self.version = int(appended.headers["etag"].strip('"'))

    def bulk(self) -> None:
        instance = self.instances["bulk"]
        items = []
        for _ in range(100):
            self.spans_made += 1
            items.append({"_type": "agent_spans/create", "idempotency_key": f"soak-{self.number}-{self.spans_made}",
                          "agent_instance_id": instance, "schema_name": "llm", "status": "active",
                          "payload": {"model": "gpt-soak", "prompt": f"span {self.spans_made} " * 8}})

        def done(response: httpx.Response) -> bool:
            if response.status_code == 429:  # back-pressure: other workers' bulk requests were in progress
                return "retry-after" in response.headers
            return response.status_code == 200 and all(
                output.get("status") == "success" for output in response.json()["outputs"].values())

        self.timed("bulk", "100 spans", done, lambda: self.api.post("/api/v1/bulk", json={"items": items}))

    def otlp(self) -> None:
        body = otlp_request()
        self.timed("otlp", "20 spans", status(200, 429), lambda: self.api.post(
            "/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}))

    def render(self) -> None:
        self.timed("render", "sample", status(200), lambda: self.api.post(
            "/api/v1/render", params={"to": "canonical"}, content=SAMPLE,
            headers={"Content-Type": "application/json"}))

    def viewer(self) -> None:
        pages = ["/sessions", "/traces", "/agents", f"/traces/{self.instances['template']}"]
        if self.session:
            pages.append(f"/sessions/{self.session}")
        page = self.random.choice(pages)
        self.timed("viewer", page.split("/")[1] or "/", status(200), lambda: self.browser.get(page))

    def template(self) -> None:
        roll = self.random.random()
        instance = self.instances["template"]
        if roll < 0.1:
            def bomb_reported(response: httpx.Response) -> bool:
                if response.status_code != 200:
                    return False
                found = response.json()["details"]["span_type_schemas"]["bomb"]["template_validation"]
                return bool(found["status"] == "error" and "too large" in found["message"])

            self.timed("template", "create-time bomb", bomb_reported, lambda: self.api.post(
                "/api/v1/agent_schema_version", json={"details": {
                    "agent_id": self.instances["agent"], "external_identifier": f"bomb-{secrets.token_hex(4)}",
                    "span_type_schemas": [{"name": "bomb", "params_schema": {"type": "object"},
                                           "template": CONSTANT_BOMB}]}}))
            return

        def summaries_right(response: httpx.Response) -> bool:
            if response.status_code != 200:
                return False
            for item in response.json()["summaries"]:
                name, summary = item.get("schema_name"), item.get("summary")
                if name == "limit" and summary == TOO_LARGE:
                    # Within the item bounds, but the render's wall clock (0.5 s) ran out on
                    # a machine this busy: allowed, and counted.
                    with self.tally.lock:
                        self.tally.clock_budget_hits += 1
                elif name in ("limit", "fed") and summary != {"limit": "48893", "fed": TOO_LARGE}[name]:
                    return False
            return True

        self.timed("template", "summaries", summaries_right, lambda: self.api.get(
            "/api/v1/agent_spans", params={"agent_instance_id": instance, "include_summaries": "true"}))

    def glob(self) -> None:
        roll = self.random.random()
        deadline = status(422)
        if roll < 0.03:
            output, input_, expected, what = ({"parts": [{"name": EXPLODING, "required": True}]},
                                              {"parts": [{"name": "/x/**"}]}, deadline, "automaton bomb")
        elif roll < 0.05:
            output, input_, expected, what = (DISTINCT_OUTPUT, DISTINCT_INPUT, decided_or_out_of_time,
                                              "256 distinct globs")
        elif roll < 0.12:
            output, input_, expected, what = WIDE_OUTPUT, WIDE_INPUT, decided_or_out_of_time, "256 parts"
        elif roll < 0.3:
            output, input_, expected, what = TOO_MANY, TOO_MANY, deadline, "2,000 parts"
        elif roll < 0.5:
            output, input_, expected, what = NARROW_OUTPUT, NARROW_INPUT, decided_or_out_of_time, "8 parts"
        else:
            output, input_, expected, what = ({"parts": [{"name": WILD_32, "required": True}]},
                                              {"parts": [{"name": "/**"}]}, decided_or_out_of_time, "32 wildcards")
        response = self.timed("glob", what, expected, lambda: self.browser.post("/agents/compat", data={
            "output_schema": orjson.dumps(output).decode(), "input_schema": orjson.dumps(input_).decode()}))
        if response is None or expected is not decided_or_out_of_time:
            return
        with self.tally.lock:
            self.tally.within_limits[what] += 1
            why = out_of_time(response)
            if why:
                self.tally.out_of_time[(what, why)] += 1

    def run(self) -> None:
        kinds: list[tuple[Callable[[], None], int]] = [
            (self.append, 30), (self.bulk, 10), (self.otlp, 12), (self.render, 10),
            (self.viewer, 18), (self.template, 10), (self.glob, 10)]
        actions = [action for action, _ in kinds]
        weights = [weight for _, weight in kinds]
        try:
            while time.monotonic() < self.stop_at:
                self.random.choices(actions, weights)[0]()
        finally:
            self.api.close()
            self.browser.close()


def prepare(server: Server, account: str) -> tuple[str, dict[str, str]]:
    """An account token, an agent with the soak schema version, and two instances: one that
    bulk spans go to, one whose few spans carry the templates at the limits."""
    store = Store.open(server.settings)
    try:
        token, _ = store.accounts.create_token(account)
    finally:
        store.close()
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        def ok(response: httpx.Response) -> Any:
            if response.status_code != 200:
                raise SystemExit(f"set-up failed: {response.status_code} {response.text[:500]}")
            return response.json().get("details", response.json())

        agent = ok(client.post("/api/v1/agent", json={"details": {"name": "soak"}}))["id"]
        instances = {"agent": agent}
        for name in ("bulk", "template"):
            instances[name] = ok(client.post("/api/v1/agent_instance/register", json={
                "agent_id": agent, "agent_version": {"name": "soak"}, "agent_schema_version": SCHEMA_VERSION}))["id"]
        for schema_name, payload in (("limit", {}), ("fed", {"n": 20_000_000}), ("fed", {"n": 20_000_000}),
                                     ("llm", {"model": "m", "prompt": "hello"})):
            ok(client.post("/api/v1/agent_spans", json={"details": {
                "agent_instance_id": instances["template"], "schema_name": schema_name, "status": "active",
                "payload": payload}}))
    return token, instances


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--database-url", default=None, help="e.g. postgresql+psycopg://… (default: SQLite)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--rss-tolerance-mib", type=float, default=48.0,
                        help="RSS growth allowed from the middle to the last third of the run")
    parser.add_argument("--fd-tolerance", type=int, default=12,
                        help="open-file growth allowed from the middle to the last third of the run")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        print("the soak reads the server's memory and open files from /proc (Linux only)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="agentfolio-soak-") as folder:
        server = Server(Path(folder), args.database_url)
        try:
            token, instances = prepare(server, f"soak-{secrets.token_hex(4)}")
            tally = Tally()
            started = time.monotonic()
            stop_at = started + args.minutes * 60
            workers = [Worker(n, server, token, instances, tally, stop_at) for n in range(args.workers)]
            threads = [threading.Thread(target=worker.run, daemon=True) for worker in workers]
            for thread in threads:
                thread.start()
            samples: list[tuple[float, int, int]] = []
            fd_kinds: Counter[str] = Counter()
            print(f"soak: {args.minutes:g} min, {args.workers} workers, "
                  f"{'PostgreSQL' if args.database_url else 'SQLite'}, server pid {server.process.pid}")
            print(f"{'t(s)':>6} {'RSS MiB':>8} {'FDs':>4} {'kids':>4} {'requests':>8} {'p50 ms':>7} "
                  f"{'p95 ms':>7} {'5xx':>4} {'unexp':>5}")
            while any(thread.is_alive() for thread in threads):
                time.sleep(args.sample_seconds)
                if server.process.poll() is not None:
                    print("the server died", file=sys.stderr)
                    return 1
                elapsed = time.monotonic() - started
                rss, fds = server.rss_kib(), server.open_fds()
                samples.append((elapsed, rss, fds))
                fd_kinds = server.fd_kinds()
                p50, p95 = quantiles(tally.all_latencies())
                print(f"{elapsed:6.0f} {rss / 1024:8.1f} {fds:4d} {server.children():4d} {tally.requests():8d} "
                      f"{p50 * 1000:7.1f} {p95 * 1000:7.1f} {len(tally.server_errors):4d} "
                      f"{len(tally.unexpected):5d}", flush=True)
            for thread in threads:
                thread.join()
            print("open FDs at the last sample: " + ", ".join(f"{kind} {count}" for kind, count in
                                                                sorted(fd_kinds.items())))
        finally:
            server.stop()
        return verdict(args, tally, samples, time.monotonic() - started, Path(folder) / "server.log")


def verdict(args: argparse.Namespace, tally: Tally, samples: list[tuple[float, int, int]], seconds: float,
            log: Path) -> int:
    print(f"\n{'kind':<9} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for kind, values in sorted(tally.latencies.items()):
        p50, p95 = quantiles(values)
        print(f"{kind:<9} {len(values):8d} {p50 * 1000:8.1f} {p95 * 1000:8.1f}")
    total = tally.requests()
    print(f"{'all':<9} {total:8d}   ({total / seconds:.1f} requests/s)  statuses: "
          + ", ".join(f"{code}×{count}" for code, count in sorted(tally.statuses.items())))

    if tally.clock_budget_hits:
        print(f"the at-limit template read as 'too large' {tally.clock_budget_hits} time(s): its 0.5 s render "
              "clock ran out on this busy machine (the item bounds are not the cause)")
    failed = []
    for what, tried in sorted(tally.within_limits.items()):
        refused = {why: count for (of, why), count in tally.out_of_time.items() if of == what}
        print(f"glob checks within the limits, {what}: {tried}, refused at the 10 s deadline: "
              + (", ".join(f"{count} {why}" for why, count in sorted(refused.items())) or "none"))
        if what in MUST_BE_DECIDED and tried >= 10 and sum(refused.values()) == tried:
            failed.append(f"no glob check of {what} was ever decided")
    third = max(1, len(samples) // 3)
    middle, last = samples[third:2 * third], samples[2 * third:]
    if middle and last:
        rss_middle = statistics.median(s[1] for s in middle) / 1024
        rss_last = statistics.median(s[1] for s in last) / 1024
        fd_middle, fd_last = max(s[2] for s in middle), max(s[2] for s in last)
        rss_first = statistics.median(s[1] for s in samples[:third]) / 1024
        print(f"RSS MiB: start {samples[0][1] / 1024:.1f}, first third median {rss_first:.1f}, middle third median "
              f"{rss_middle:.1f}, last third median {rss_last:.1f}, end {samples[-1][1] / 1024:.1f} "
              f"(middle to last {rss_last - rss_middle:+.1f}, tolerance {args.rss_tolerance_mib:g})")
        settled = samples[third:]
        if len(settled) >= 2:
            slope = statistics.linear_regression([s[0] for s in settled], [s[1] / 1024 for s in settled]).slope
            print(f"RSS slope over the last two thirds: {slope * 600:+.1f} MiB per 10 minutes")
        print(f"open FDs: first {samples[0][2]}, middle third max {fd_middle}, last third max {fd_last} "
              f"(growth {fd_last - fd_middle:+d}, tolerance {args.fd_tolerance})")
        if rss_last - rss_middle > args.rss_tolerance_mib:
            failed.append("memory grew")
        if fd_last - fd_middle > args.fd_tolerance:
            failed.append("open files grew")
    else:
        failed.append("too few samples to judge memory and open files")
    for title, found in (("5xx", tally.server_errors), ("unexpected answers", tally.unexpected),
                         ("transport errors", tally.failures)):
        if found:
            failed.append(f"{len(found)} {title}")
            print(f"{title} ({len(found)}), first ones:")
            for line in found[:5]:
                print("  " + line)
    if failed:
        print("FAIL: " + "; ".join(failed))
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        if tail.strip():
            print("server log (end):\n" + tail)
        return 1
    print("PASS: no 5xx, every answer as expected, memory and open files flat")
    return 0


if __name__ == "__main__":
    sys.exit(main())
