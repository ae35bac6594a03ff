"""Three server processes on one PostgreSQL database and one S3 store (moto's server),
driven round-robin, behave as one server:

* concurrent appends with ``If-Match`` to one session from every server: the history is
  exactly the acknowledged appends, in their acknowledged positions;
* the same bulk batch and the same OTLP batch sent to all three at once: every span once;
* a viewer sign-in and an opened file move between servers; signing out on one ends it on all;
* a server killed mid-load: every acknowledged write is there exactly once, and writes
  whose answer was lost are there at most once (clients retry on another server, with the
  same idempotency keys, span ids and ``If-Match``);
* the background jobs (the blob sweep, every two seconds here, racing the writes) run on
  one server per period, and no acknowledged blob goes missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.store.registry_tables import registry_spans
from tests.otlp_support import settle
from tests.storage import LiveServer, free_port

SERVERS = 3
SWEEP_SECONDS = 2
BLOB_THRESHOLD = 2048  # entries larger than this put their contents in S3
NOW_NS = 1_760_000_000 * 10**9


# -- the cluster --------------------------------------------------------------------------------

def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the shared-store test cannot run on CI: {reason}")
    pytest.skip(f"the shared-store test is skipped: {reason}")


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """``moto_server`` (moto's S3 server, a dev dependency) in its own process on a free port."""
    executable = Path(sys.executable).with_name("moto_server")
    command = [str(executable)] if executable.exists() else [sys.executable, "-m", "moto.server"]
    port = free_port()
    try:
        process = subprocess.Popen([*command, "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as error:
        _unavailable(f"moto_server does not start: {error}")
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                _unavailable(f"moto_server exited: {process.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
            try:
                httpx.get(url + "/", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    _unavailable("moto_server did not answer within 120 s")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Cluster:
    servers: list[LiveServer]
    store: Store
    token: str
    started: float
    dead: set[int] = field(default_factory=set)

    def urls(self) -> list[str]:
        return [server.url for index, server in enumerate(self.servers) if index not in self.dead]

    def client(self, index: int, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.servers[index].url, timeout=60,
                            headers={"Authorization": f"Bearer {self.token}"}, **options)

    def kill(self, index: int) -> None:
        self.dead.add(index)
        self.servers[index].process.kill()
        self.servers[index].process.wait()


@pytest.fixture
def cluster(settings: Settings, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with moto_server() as s3_url:
        import boto3

        boto3.client("s3", endpoint_url=s3_url).create_bucket(Bucket="agentfolio")
        shared = settings.with_(blob_url="s3://agentfolio/blobs", s3_endpoint_url=s3_url,
                                blob_threshold=BLOB_THRESHOLD, blob_sweep_interval=SWEEP_SECONDS)
        store = Store.open(shared)  # migrated once here; the servers find it current
        token, _ = store.accounts.create_token("shared")
        started = time.time()
        with ThreadPoolExecutor(SERVERS) as pool:  # a loaded machine starts each in tens of seconds
            starting = [pool.submit(LiveServer, shared) for _ in range(SERVERS)]
            servers = [future.result() for future in starting]
        made = Cluster(servers, store, token, started)
        try:
            yield made
        finally:
            for server in servers:
                server.stop()
            store.close()


# -- what the clients send ----------------------------------------------------------------------

def entry(marker: str, *, big: bool = False) -> dict[str, Any]:
    text = marker + (" " + "x" * (BLOB_THRESHOLD * 2) if big else "")
    return {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}


def markers_of(document: dict[str, Any]) -> list[str]:
    return [item["messages"][0]["contents"][0]["text"].split(" ", 1)[0]
            for item in document["data"]["conversationHistory"]]


def otlp_batch(conversation: str, first_span: int, count: int) -> dict[str, Any]:
    """An OTLP/JSON request: ``count`` chat spans of one conversation, span ids from ``first_span``."""
    spans = []
    for number in range(first_span, first_span + count):
        history = [{"role": "user", "parts": [{"type": "text", "content": f"{conversation} question {number}"}]}]
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"{conversation} answer {number}"}]}]
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                      "gen_ai.conversation.id": conversation,
                      "gen_ai.input.messages": json.dumps(history), "gen_ai.output.messages": json.dumps(answer)}
        spans.append({"traceId": hashlib.sha256(conversation.encode()).hexdigest()[:32],
                      "spanId": f"{number + 1:016x}", "name": f"chat {conversation} {number}",
                      "startTimeUnixNano": str(NOW_NS + number * 10**6),
                      "endTimeUnixNano": str(NOW_NS + number * 10**6 + 1000),
                      "attributes": [{"key": key, "value": {"stringValue": value}}
                                     for key, value in attributes.items()]})
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "shared-store-test"}}]},
        "scopeSpans": [{"scope": {"name": "tests"}, "spans": spans}]}]}


def bulk_batch(instance: str, label: str, count: int) -> dict[str, Any]:
    return {"items": [{"_type": "agent_spans/create", "idempotency_key": f"{label}-{n}",
                       "agent_instance_id": instance, "schema_name": "step", "status": "complete",
                       "payload": {"marker": f"{label}-{n}"}} for n in range(count)]}


def stored_markers(store: Store) -> Counter[str]:
    """How many stored registry spans carry each bulk marker (read from the database itself)."""
    with store.engine.connect() as connection:
        # Through the table, whose column type reads the payloads back whole (stored compressed).
        payloads = connection.execute(sa.select(registry_spans.c.payload).where(registry_spans.c.schema_name == "step"))
        return Counter(json.loads(payload).get("marker") for payload in payloads.scalars())


def stored_otlp_spans(store: Store) -> Counter[str]:
    with store.engine.connect() as connection:
        payloads = connection.execute(sa.select(registry_spans.c.payload).where(registry_spans.c.schema_name != "step"))
        return Counter(json.loads(payload).get("name") for payload in payloads.scalars())


def retrying(cluster: Cluster, first: int, method: str, path: str, attempts: int = 12,
             **options: Any) -> httpx.Response:
    """Send to server ``first``, and on a lost answer (a server killed) to the next one: what a
    client behind a load balancer sees."""
    for attempt in range(attempts):
        index = (first + attempt) % SERVERS
        if index in cluster.dead:
            continue
        try:
            with cluster.client(index) as http:
                answer = http.request(method, path, **options)
        except httpx.TransportError:
            continue
        if answer.status_code not in (429, 502, 503):
            return answer
        time.sleep(float(answer.headers.get("retry-after", "1")))
    raise AssertionError("no server took the request")


def register_instance(cluster: Cluster) -> str:
    with cluster.client(0) as http:
        answer = http.post("/api/v1/agent_instance/register",
                           json={"agent_version": {"name": "shared-agent"}, "idempotency_key": "register-shared"})
    assert answer.status_code == 200, answer.text
    instance: str = answer.json()["details"]["id"]
    return instance


# -- the test ------------------------------------------------------------------------------------

@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_three_servers_on_one_database_and_one_s3_store_behave_as_one(cluster: Cluster) -> None:
    instance = register_instance(cluster)
    concurrent_appends_with_if_match(cluster)
    the_same_batches_everywhere_at_once(cluster, instance)
    a_viewer_moves_between_servers(cluster)
    expected = a_server_killed_mid_load(cluster, instance)
    background_jobs_once_per_period(cluster, expected)


def concurrent_appends_with_if_match(cluster: Cluster) -> None:
    with cluster.client(0) as http:
        assert http.post("/api/v1/sessions", params={"id": "shared"},
                         json={"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}).status_code == 201
    acknowledged: list[tuple[int, str]] = []
    refused = Counter[int]()
    lock = threading.Lock()

    def writer(number: int) -> None:
        version, written = "1", 0
        for attempt in range(400):
            if written == 6:
                return
            marker = f"w{number}.{written}"
            with cluster.client((number + attempt) % SERVERS) as http:  # round-robin over the servers
                answer = http.post("/api/v1/sessions/shared/entries", json=entry(marker, big=written % 2 == 0),
                                   headers={"If-Match": f'"{version}"'})
            if answer.status_code == 201:
                with lock:
                    acknowledged.append((answer.json()["details"]["position"], marker))
                written += 1
            else:
                assert answer.status_code == 412 and answer.json()["code"] == "version_conflict", answer.text
                refused[number] += 1
            version = answer.headers["etag"].strip('"')
        raise AssertionError(f"writer {number} got no turn in 400 attempts")

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(writer, range(6)))
    documents = []
    for index in range(SERVERS):
        with cluster.client(index) as http:
            answer = http.get("/api/v1/sessions/shared")
            assert answer.status_code == 200
            documents.append(answer.content)
    assert documents[0] == documents[1] == documents[2], "the servers answer the same session differently"
    stored = markers_of(json.loads(documents[0]))
    assert sorted(acknowledged) == list(enumerate(stored)), "the history is not the acknowledged appends"
    assert sum(refused.values()) > 0, "no append was ever stale: the writers did not overlap"


def the_same_batches_everywhere_at_once(cluster: Cluster, instance: str) -> None:
    bulk = bulk_batch(instance, "everywhere", 20)
    otlp = otlp_batch("everywhere", 0, 10)
    start = threading.Barrier(SERVERS * 2)

    def send_bulk(index: int) -> httpx.Response:
        with cluster.client(index) as http:
            start.wait()
            return http.post("/api/v1/bulk", json=bulk)

    def send_otlp(index: int) -> httpx.Response:
        with cluster.client(index) as http:
            start.wait()
            return http.post("/v1/traces", json=otlp)

    with ThreadPoolExecutor(SERVERS * 2) as pool:
        bulk_answers = [pool.submit(send_bulk, index) for index in range(SERVERS)]
        otlp_answers = [pool.submit(send_otlp, index) for index in range(SERVERS)]
        bulk_results = [future.result() for future in bulk_answers]
        otlp_results = [future.result() for future in otlp_answers]
    for answer in bulk_results + otlp_results:
        assert answer.status_code == 200, answer.text
    outputs = [answer.json()["outputs"] for answer in bulk_results]
    span_ids = [{key: output["details"]["id"] for key, output in found.items()} for found in outputs]
    assert span_ids[0] == span_ids[1] == span_ids[2], "the same keys answered with different spans"
    markers = stored_markers(cluster.store)
    assert {marker: markers[marker] for marker in markers if marker.startswith("everywhere")} == \
        {f"everywhere-{n}": 1 for n in range(20)}
    spans = stored_otlp_spans(cluster.store)
    assert {name: spans[name] for name in spans if "everywhere" in name} == \
        {f"chat everywhere {n}": 1 for n in range(10)}
    settle(cluster.store, cluster.store.accounts.authenticate(cluster.token))  # conversations follow the spans
    with cluster.client(1) as http:
        session = http.get("/api/v1/sessions/otel:everywhere")
    assert session.status_code == 200, session.text
    texts = [message["contents"][0]["text"] for item in session.json()["data"]["conversationHistory"]
             for message in item["messages"]]
    for number in range(10):
        assert texts.count(f"everywhere answer {number}") == 1, texts


def a_viewer_moves_between_servers(cluster: Cluster) -> None:
    urls = [server.url for server in cluster.servers]
    with httpx.Client(timeout=60, follow_redirects=False) as browser:
        signed = browser.post(urls[0] + "/login", data={"token": cluster.token, "next": "/sessions"})
        assert signed.status_code == 303, signed.text
        cookie = {"Cookie": f"agentfolio_session={signed.cookies['agentfolio_session']}"}
        listed = browser.get(urls[1] + "/sessions", headers=cookie)
        assert listed.status_code == 200 and "otel:everywhere" in listed.text
        opened = browser.post(urls[2] + "/open", headers=cookie, files={"file": (
            "moved.json", json.dumps({"schemaVersion": "1.2.0", "data": {"conversationHistory": [
                entry("opened-file-entry")]}}).encode(), "application/json")})
        assert opened.status_code == 303, opened.text
        page = opened.headers["location"]
        for url in urls:  # the file opened on the third server is shown by each
            shown = browser.get(url + page, headers=cookie)
            assert shown.status_code == 200 and "opened-file-entry" in shown.text, url
        assert browser.post(urls[1] + "/logout", headers=cookie).status_code == 303
        for url in urls:  # signed out on one server: on every server
            assert browser.get(url + "/sessions", headers=cookie).status_code == 303


def a_server_killed_mid_load(cluster: Cluster, instance: str) -> dict[int, list[str]]:
    """Each client keeps its own session, a bulk label and an OTLP conversation; server 1 is
    killed once a third of the rounds are done.  A client whose answer was lost learns from
    another server whether its append was stored (the last entry), and re-sends its batches
    unchanged: idempotency keys and span ids make the retry a replay."""
    clients, rounds = 4, 9
    for number in range(clients):
        with cluster.client(0) as http:
            assert http.post("/api/v1/sessions", params={"id": f"load-{number}"}, json={
                "schemaVersion": "1.2.0", "data": {"conversationHistory": []}}).status_code == 201
    progress = threading.Semaphore(0)
    expected: dict[int, list[str]] = {}

    def client(number: int) -> None:
        session, version, stored = f"load-{number}", "1", []
        for round_ in range(rounds):
            marker = f"c{number}.{round_}"
            first = (number + round_) % SERVERS
            while first in cluster.dead:  # the load balancer's health check took it out
                first = (first + 1) % SERVERS
            try:
                with cluster.client(first) as http:
                    answer = http.post(f"/api/v1/sessions/{session}/entries", json=entry(marker, big=round_ % 3 == 0),
                                       headers={"If-Match": f'"{version}"'})
            except httpx.TransportError:
                answer = None  # the answer was lost: was it stored?
            if answer is not None and answer.status_code == 201:
                stored.append(marker)
                version = answer.headers["etag"].strip('"')
            else:
                assert answer is None, answer.text
                current = retrying(cluster, first + 1, "GET", f"/api/v1/sessions/{session}")
                found = markers_of(current.json())
                assert found[:len(stored)] == stored and len(found) - len(stored) <= 1, (found, stored)
                if len(found) > len(stored):
                    stored.append(marker)  # it committed before the server died
                version = current.headers["etag"].strip('"')
            bulk = retrying(cluster, first, "POST", "/api/v1/bulk",
                            json=bulk_batch(instance, f"load-{number}-{round_}", 5))
            assert bulk.status_code == 200 and all(
                output["status"] == "success" for output in bulk.json()["outputs"].values()), bulk.text
            otlp = retrying(cluster, first, "POST", "/v1/traces", json=otlp_batch(f"load-{number}", round_ * 2, 2))
            assert otlp.status_code == 200, otlp.text
            progress.release()
        expected[number] = stored

    def killer() -> None:
        for _ in range(clients * rounds // 3):
            progress.acquire()
        cluster.kill(1)

    with ThreadPoolExecutor(clients + 1) as pool:
        running = [pool.submit(client, number) for number in range(clients)]
        pool.submit(killer).result()
        for future in running:
            future.result()
    assert cluster.dead == {1}
    for number in range(clients):
        answer = retrying(cluster, 0, "GET", f"/api/v1/sessions/load-{number}")
        assert markers_of(answer.json()) == expected[number], "an acknowledged append is missing or doubled"
        assert len(expected[number]) >= rounds - 1  # only an append in flight at the kill may be lost
    markers = stored_markers(cluster.store)
    for number in range(clients):
        for round_ in range(rounds):
            for n in range(5):
                assert markers[f"load-{number}-{round_}-{n}"] == 1, f"load-{number}-{round_}-{n}"
    spans = stored_otlp_spans(cluster.store)
    # The conversations follow the spans, from the queue in the database: the work the
    # killed server held comes back when its lease ends, and a live server does it.
    settle(cluster.store, cluster.store.accounts.authenticate(cluster.token))
    for number in range(clients):
        names = [f"chat load-{number} {n}" for n in range(rounds * 2)]
        assert [spans[name] for name in names] == [1] * len(names), number
        answer = retrying(cluster, 0, "GET", f"/api/v1/sessions/otel:load-{number}")
        texts = [message["contents"][0]["text"] for item in answer.json()["data"]["conversationHistory"]
                 for message in item["messages"]]
        for n in range(rounds * 2):
            assert texts.count(f"load-{number} answer {n}") == 1, (number, n, texts)
    return expected


def background_jobs_once_per_period(cluster: Cluster, expected: dict[int, list[str]]) -> None:
    """The sweep ran, on one server per period: never more often than the period allows
    (whichever servers were up); and after one more sweep every acknowledged entry, its
    contents in S3 or not, still reads back whole from every server alive."""
    state = cluster.store.jobs.state("sweep-blobs")
    elapsed = time.time() - cluster.started
    assert state is not None and state.runs >= 2, state
    assert state.runs <= elapsed / SWEEP_SECONDS + 1, (state.runs, elapsed)
    cluster.store.sweep_blobs()
    for index in range(SERVERS):
        if index in cluster.dead:
            continue
        with cluster.client(index) as http:
            for number, markers in expected.items():
                answer = http.get(f"/api/v1/sessions/load-{number}")
                assert answer.status_code == 200 and markers_of(answer.json()) == markers
                big = [item for item in answer.json()["data"]["conversationHistory"]
                       if len(item["messages"][0]["contents"][0]["text"]) > BLOB_THRESHOLD]
                assert big and all(item["messages"][0]["contents"][0]["text"].endswith("x" * 100) for item in big)
