"""Back-pressure on ``POST /api/v1/bulk``, through uvicorn on loopback: past the process's
limit a request is answered 429 with ``Retry-After`` before its body is read, nothing of
it is stored, and the same request sent again once a place is free is taken."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store
from tests.storage import InProcessServer

T = TypeVar("T")
LIMIT = 2
#: How long a step may take before the test gives up (a hang is a failure, not a timing).
PATIENCE = 60


class HeldWrites:
    """A test double at the store boundary: while ``holding``, every registry write waits
    at the door of its transaction until :meth:`release`, counting who arrived."""

    def __init__(self, write: Callable[..., T]) -> None:
        self._write = write
        self.holding = False
        self.arrived = threading.Semaphore(0)
        self.released = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.holding:
            self.arrived.release()
            self.released.wait(PATIENCE * 2)
        return self._write(*args, **kwargs)

    def wait_for(self, count: int) -> None:
        for _ in range(count):
            assert self.arrived.acquire(timeout=PATIENCE), "a request never reached the store"

    def release(self) -> None:
        self.holding = False
        self.released.set()


@dataclass
class Served:
    url: str
    token: str
    headers: dict[str, str]
    held: HeldWrites
    app: Any


@pytest.fixture
def serve(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Served]]:
    """Start a server whose bulk route admits ``LIMIT`` requests and lets ``waiters`` more
    wait up to ``wait_ms`` for a place."""
    started: list[tuple[HeldWrites, InProcessServer]] = []

    def start(*, waiters: int = 0, wait_ms: int = 0) -> Served:
        limited = Store(store.settings.with_(bulk_queue_size=LIMIT, otlp_queue_size=LIMIT, bulk_waiters=waiters,
                                             bulk_wait_ms=wait_ms), store.engine, store.blobs)
        held = HeldWrites(limited.registry.write)
        monkeypatch.setattr(limited.registry, "write", held)
        token, _ = store.accounts.create_token("gate")
        app = create_server(folio=Agentfolio(limited, owned=False), viewer=False)
        server = InProcessServer(app, log_level="warning")
        started.append((held, server))
        return Served(server.url, token, {"Authorization": f"Bearer {token}"}, held, app)

    try:
        yield start
    finally:
        for held, server in started:
            held.release()  # whatever failed, let the held requests end so the server stops
            server.stop()


@pytest.fixture
def served(serve: Callable[..., Served]) -> Served:
    """No waiting room: past the limit, 429 at once."""
    return serve()


def _instance(api: httpx.Client) -> str:
    agent = api.post("/api/v1/agent", json={"details": {"name": "gated"}})
    assert agent.status_code == 200, agent.text
    instance = api.post("/api/v1/agent_instance/register",
                        json={"agent_id": agent.json()["details"]["id"], "agent_version": {"name": "v1"}})
    assert instance.status_code == 200, instance.text
    return str(instance.json()["details"]["id"])


def _batch(instance: str, name: str, count: int = 3) -> dict[str, Any]:
    return {"items": [{"_type": "agent_spans/create", "idempotency_key": f"{name}-{i}",
                       "details": {"agent_instance_id": instance, "schema_name": "step", "status": "complete",
                                   "payload": {"batch": name, "i": i}}} for i in range(count)]}


def _stored_batches(api: httpx.Client) -> list[str]:
    listed = api.get("/api/v1/agent_spans", params={"pagination[page_size]": 100})
    assert listed.status_code == 200, listed.text
    return sorted(summary["payload"]["batch"] for summary in listed.json()["summaries"])


def _send_headers_only(url: str, token_headers: dict[str, str], length: int) -> bytes:
    """A bulk request whose headers promise ``length`` body bytes that never come: the
    answer, read before any of the body is sent."""
    host, port = url.removeprefix("http://").split(":")
    head = (f"POST /api/v1/bulk HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\nAuthorization: {token_headers['Authorization']}\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=PATIENCE) as connection:
        connection.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def _send_in_background(served: Served, instance: str, name: str,
                        answers: dict[str, httpx.Response]) -> threading.Thread:
    """Post the batch ``name`` from a thread of its own; its answer lands in ``answers``."""
    def send() -> None:
        with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE * 2) as own:
            answers[name] = own.post("/api/v1/bulk", json=_batch(instance, name))

    sender = threading.Thread(target=send)
    sender.start()
    return sender


def _fill(served: Served, instance: str, names: tuple[str, ...]) -> tuple[list[threading.Thread],
                                                                           dict[str, httpx.Response]]:
    """Send one bulk request per name and wait until each holds a place, inside its write."""
    answers: dict[str, httpx.Response] = {}
    served.held.holding = True
    senders = [_send_in_background(served, instance, name, answers) for name in names]
    served.held.wait_for(len(names))
    return senders, answers


def _assert_refused(served: Served, answer: httpx.Response) -> None:
    """``answer`` is the 429 with ``Retry-After``, and so is a request whose body never
    comes (refused from its headers)."""
    assert answer.status_code == 429, answer.text
    assert answer.headers["retry-after"] == "1" and answer.json()["code"] == "too_many_requests"
    early = _send_headers_only(served.url, served.headers, 10_000)
    assert early.startswith(b"HTTP/1.1 429"), early[:200]


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait until ``condition`` holds (a hang is a failure, not a timing)."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def test_bulk_requests_past_the_limit_are_refused_429_until_a_place_is_free(served: Served) -> None:
    url, headers, held = served.url, served.headers, served.held
    with httpx.Client(base_url=url, headers=headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))

        refused = api.post("/api/v1/bulk", json=_batch(instance, "third"))
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["status"] == "error" and refused.json()["code"] == "too_many_requests"

        # Refused from its headers: the server answers without waiting for a body.
        early = _send_headers_only(url, headers, 10_000)
        assert early.startswith(b"HTTP/1.1 429"), early[:200]
        assert b"retry-after: 1" in early.lower()

        held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
        assert [answers[name].status_code for name in ("first", "second")] == [200, 200], answers
        assert _stored_batches(api) == ["first"] * 3 + ["second"] * 3  # nothing of the refused one

        again = api.post("/api/v1/bulk", json=_batch(instance, "third"))
        assert again.status_code == 200, again.text
        assert sorted(json.loads(again.content)["outputs"]) == ["third-0", "third-1", "third-2"]
        assert _stored_batches(api) == ["first"] * 3 + ["second"] * 3 + ["third"] * 3


def test_every_place_is_given_back_after_refusals_and_failures(served: Served) -> None:
    """Requests that fail (bad bodies, refused items) free their place: more of them than
    the limit, one after another, never turn into 429s."""
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        for _ in range(LIMIT * 3):
            assert api.post("/api/v1/bulk", content=b"{not json",
                            headers={"Content-Type": "application/json"}).status_code == 400
            assert api.post("/api/v1/bulk", json={"items": []}).status_code == 422
        taken = api.post("/api/v1/bulk", json=_batch(instance, "after"))
        assert taken.status_code == 200, taken.text


def test_the_prefactor_http_client_waits_out_a_full_server_unmodified(served: Served,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The published SDK's bulk call, sent while every place is taken, is refused 429, retries
    on its own (same body, same keys) and is stored once a place is free."""
    from prefactor_http import HttpClientConfig, PrefactorHttpClient
    from prefactor_http.models.bulk import BulkItem, BulkRequest

    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))
        gate = served.app.state.bulk_gate
        refused = threading.Event()
        enter = gate.enter

        async def watched_enter() -> bool:
            taken = await enter()
            if not taken:
                refused.set()
            return bool(taken)

        monkeypatch.setattr(gate, "enter", watched_enter)
        outcome: dict[str, Any] = {}

        async def through_the_sdk() -> Any:
            items = [BulkItem(_type="agent_spans/create", idempotency_key=f"sdk-item-{i}",  # type: ignore[call-arg]
                              details={"agent_instance_id": instance, "schema_name": "step", "status": "complete",
                                       "payload": {"batch": "sdk", "i": i}}) for i in range(3)]
            async with PrefactorHttpClient(HttpClientConfig(api_url=served.url, api_token=served.token)) as client:
                return await client.bulk.execute(BulkRequest(items=items))

        def run_sdk() -> None:
            try:
                outcome["answer"] = asyncio.run(through_the_sdk())
            except Exception as error:  # reported below, in the test's thread
                outcome["error"] = error

        sdk = threading.Thread(target=run_sdk)
        sdk.start()
        assert refused.wait(PATIENCE), f"the SDK's request was never refused: {outcome}"
        served.held.release()
        for thread in (*senders, sdk):
            thread.join(PATIENCE * 2)
        assert "error" not in outcome, outcome
        assert {key: output.status for key, output in outcome["answer"].outputs.items()} == {
            "sdk-item-0": "success", "sdk-item-1": "success", "sdk-item-2": "success"}
        assert [answers[name].status_code for name in ("first", "second")] == [200, 200]
        assert _stored_batches(api) == ["first"] * 3 + ["sdk"] * 3 + ["second"] * 3


def test_a_request_waiting_for_a_place_is_served_when_one_is_given_back(serve: Callable[..., Served]) -> None:
    served = serve(waiters=1, wait_ms=PATIENCE * 1000)
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))
        gate = served.app.state.bulk_gate
        senders.append(_send_in_background(served, instance, "third", answers))
        _until(lambda: gate.waiting == 1, "the third request waits for a place")
        assert gate.admitted == LIMIT and "third" not in answers

        served.held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
        assert [answers[name].status_code for name in ("first", "second", "third")] == [200, 200, 200], answers
        assert _stored_batches(api) == ["first"] * 3 + ["second"] * 3 + ["third"] * 3
        assert (gate.admitted, gate.waiting) == (0, 0)


def test_the_waiting_room_is_bounded_and_a_request_past_it_is_refused_at_once(serve: Callable[..., Served]) -> None:
    """With its waiters waiting (their deadline far off), one more request is answered 429
    straight away, from its headers, and nothing of it is stored."""
    served = serve(waiters=2, wait_ms=PATIENCE * 1000)
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))
        gate = served.app.state.bulk_gate
        senders += [_send_in_background(served, instance, name, answers) for name in ("w1", "w2")]
        _until(lambda: gate.waiting == 2, "two requests wait for a place")

        _assert_refused(served, api.post("/api/v1/bulk", json=_batch(instance, "third")))
        assert (gate.admitted, gate.waiting) == (LIMIT, 2)

        served.held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
        assert {name: answers[name].status_code for name in ("first", "second", "w1", "w2")} == dict.fromkeys(
            ("first", "second", "w1", "w2"), 200)
        assert _stored_batches(api) == sorted(["first", "second", "w1", "w2"] * 3)  # nothing of "third"


def test_a_waiter_past_its_deadline_is_refused_429_with_retry_after(serve: Callable[..., Served]) -> None:
    served = serve(waiters=1, wait_ms=200)
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))  # held until released below
        gate = served.app.state.bulk_gate

        # Waiting from its headers alone: a body that never comes changes nothing.
        _assert_refused(served, api.post("/api/v1/bulk", json=_batch(instance, "late")))
        assert (gate.admitted, gate.waiting) == (LIMIT, 0)

        served.held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
        assert _stored_batches(api) == ["first"] * 3 + ["second"] * 3  # nothing of the late one
        again = api.post("/api/v1/bulk", json=_batch(instance, "late"))
        assert again.status_code == 200, again.text


def test_a_waiter_whose_client_went_away_gives_its_place_back(serve: Callable[..., Served]) -> None:
    """A client that sends its whole request, then disconnects while it waits: when a place
    comes to it, it finds nobody there, stores nothing and hands the place on."""
    served = serve(waiters=1, wait_ms=PATIENCE * 1000)
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=PATIENCE) as api:
        instance = _instance(api)
        senders, answers = _fill(served, instance, ("first", "second"))
        gate = served.app.state.bulk_gate
        body = json.dumps(_batch(instance, "gone")).encode()
        host, port = served.url.removeprefix("http://").split(":")
        head = (f"POST /api/v1/bulk HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nAuthorization: {served.headers['Authorization']}\r\n\r\n")
        with socket.create_connection((host, int(port)), timeout=PATIENCE) as connection:
            connection.sendall(head.encode() + body)
            _until(lambda: gate.waiting == 1, "the request waits for a place")
        # ... and the client is gone.

        served.held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
        _until(lambda: (gate.admitted, gate.waiting) == (0, 0), "every place is given back")
        after = api.post("/api/v1/bulk", json=_batch(instance, "after"))
        assert after.status_code == 200, after.text
        assert [answers[name].status_code for name in ("first", "second")] == [200, 200]
        assert _stored_batches(api) == sorted(["first", "second", "after"] * 3)  # nothing of "gone"


def test_the_openapi_document_names_the_429_and_its_retry_after(served: Served) -> None:
    document = httpx.get(served.url + "/openapi.json", timeout=PATIENCE).json()
    refused = document["paths"]["/api/v1/bulk"]["post"]["responses"]["429"]
    assert refused["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}
    assert refused["headers"]["Retry-After"]["schema"]["type"] == "integer"
    assert "too_many_requests" in refused["description"]


def test_the_otlp_receiver_shares_the_gate_and_refuses_past_its_queue(served: Served,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The same count at ``/v1/traces``: with its places taken by requests held at the
    store, one more is 429 with ``Retry-After`` (an OTLP Status body) and stores nothing;
    sent again after, it is stored."""
    from tests.api.test_otlp import request_with
    from tests.otlp_support import spans_of

    def export(trace: int) -> httpx.Response:
        body = request_with({"trace_id": bytes([trace]) * 16}).SerializeToString()
        return httpx.post(served.url + "/v1/traces", content=body, timeout=PATIENCE * 2,
                          headers={**served.headers, "Content-Type": "application/x-protobuf"})

    assert export(1).status_code == 200  # the receiver exists now, with its gate
    ingest = served.app.state.otlp_ingest
    held = HeldWrites(ingest._store_spans)
    monkeypatch.setattr(ingest, "_store_spans", held)
    held.holding = True
    answers: dict[int, httpx.Response] = {}

    def send(trace: int) -> None:
        answers[trace] = export(trace)

    senders = [threading.Thread(target=send, args=(trace,)) for trace in (2, 3)]
    try:
        for sender in senders:
            sender.start()
        held.wait_for(LIMIT)
        refused = export(4)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1", refused.content
    finally:
        held.release()
        for sender in senders:
            sender.join(PATIENCE * 2)
    assert [answers[trace].status_code for trace in (2, 3)] == [200, 200]
    assert len(spans_of(served.url, served.token)) == 3  # nothing of the refused one
    assert export(4).status_code == 200
    assert len(spans_of(served.url, served.token)) == 4
