"""The server under the bombs, through a real uvicorn on loopback: a compatibility check
that would run for minutes is stopped at its deadline and answered "too complex", a
template bomb reads as "too large", other requests are answered meanwhile, and SIGTERM
ends the server promptly even while a check runs, leaving no worker behind.

SQLite only: the bounds live above the store, so the backend changes nothing here."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agentfolio.registry.templates import TOO_LARGE_SUMMARY
from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.bombs import EXPLODING, two_big_schemas, within_deadline
from tests.storage import LiveServer

OTHER_SCHEMA = {"parts": [{"name": "/x/**"}]}


def start(tmp_path: Path, compat_timeout: int) -> tuple[LiveServer, str]:
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'agentfolio.sqlite3'}",
                        compat_timeout=compat_timeout)
    store = Store.open(settings)
    try:
        token, _ = store.accounts.create_token("alice")
    finally:
        store.close()
    return LiveServer(settings), token


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LiveServer, httpx.Client]]:
    live, token = start(tmp_path, compat_timeout=4)
    try:
        with httpx.Client(base_url=live.url, timeout=60, headers={
                "Authorization": f"Bearer {token}", "Origin": live.url, "Sec-Fetch-Site": "same-origin"}) as client:
            yield live, client
    finally:
        live.stop()


def post_compat(client: httpx.Client, output: object, input_: object) -> httpx.Response:
    return client.post("/agents/compat", data={"output_schema": orjson.dumps(output).decode(),
                                               "input_schema": orjson.dumps(input_).decode()})


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (its fork server and that server's workers)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def in_background(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def test_a_compat_bomb_is_too_complex_and_the_server_answers_others_meanwhile(server) -> None:
    live, client = server
    assert client.get("/api/v1/ping").status_code == 200
    fine = post_compat(client, {"parts": [{"name": "/a/*"}]}, OTHER_SCHEMA)
    assert fine.status_code == 200 and "compatible" in fine.text
    baseline = descendants(live.process.pid)

    bomb, box = in_background(lambda: post_compat(client, {"parts": [{"name": EXPLODING, "required": True}]},
                                                  OTHER_SCHEMA))
    answered_meanwhile = 0
    while bomb.is_alive():
        with httpx.Client(base_url=live.url, timeout=10, headers=client.headers) as other:
            assert other.get("/api/v1/ping").status_code == 200
            too_big = post_compat(other, *two_big_schemas())
            assert too_big.status_code == 422 and "too complex: it has 2,000 parts" in too_big.text
        answered_meanwhile += 1
        time.sleep(0.2)
    bomb.join()
    response = box["value"]
    assert response.status_code == 422, response.text
    assert "compatibility check took longer than 4 s and was stopped" in response.text
    assert answered_meanwhile >= 3
    # The worker is gone, not left burning a core after the answer.
    end = time.monotonic() + 10
    while descendants(live.process.pid) - baseline and time.monotonic() < end:
        time.sleep(0.1)
    assert not descendants(live.process.pid) - baseline


def test_sigterm_ends_the_server_promptly_while_a_check_runs(tmp_path: Path) -> None:
    live, token = start(tmp_path, compat_timeout=600)
    headers = {"Authorization": f"Bearer {token}", "Origin": live.url, "Sec-Fetch-Site": "same-origin"}
    try:
        with httpx.Client(base_url=live.url, timeout=120, headers=headers) as client:
            assert post_compat(client, {"parts": [{"name": "/a/*"}]}, OTHER_SCHEMA).status_code == 200
            baseline = descendants(live.process.pid)
            bomb, box = in_background(lambda: post_compat(
                client, {"parts": [{"name": EXPLODING, "required": True}]}, OTHER_SCHEMA))
            end = time.monotonic() + 60
            while not descendants(live.process.pid) - baseline and time.monotonic() < end:
                time.sleep(0.05)
            workers = descendants(live.process.pid) - baseline
            assert workers, "the check never started a worker"
            everything = descendants(live.process.pid)

            live.process.send_signal(signal.SIGTERM)
            within_deadline(lambda: live.process.wait(), seconds=15)  # uvicorn waited for ever before
            bomb.join(15)
            assert not bomb.is_alive()
            if "value" in box:  # answered before the connection closed: the reason, not a 500
                assert box["value"].status_code == 503, box["value"].text
                assert "shutting down" in box["value"].text
            else:
                assert isinstance(box["error"], httpx.HTTPError)
            end = time.monotonic() + 10
            while any(alive(pid) for pid in everything) and time.monotonic() < end:
                time.sleep(0.1)
            assert not [pid for pid in everything if alive(pid)], "a worker outlived the server"
    finally:
        live.stop()


SCHEMA_VERSION = {
    "external_identifier": "v1",
    "span_type_schemas": [
        {"name": "fed", "params_schema": {"type": "object"}, "template": "{{ (1..n) | join: ',' | size }}"},
        {"name": "fixed", "params_schema": {"type": "object"}, "template": "{{ (1..20000000) | join: ',' | size }}"},
    ],
}


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json().get("details", response.json())


def test_a_template_bomb_is_invalid_or_too_large_and_others_are_answered(server) -> None:
    live, client = server
    agent = ok(client.post("/api/v1/agent", json={"details": {"name": "bot"}}))["id"]
    instance = ok(client.post("/api/v1/agent_instance/register", json={
        "agent_id": agent, "agent_version": {"name": "bot"}, "agent_schema_version": SCHEMA_VERSION}))["id"]
    version = ok(client.post("/api/v1/agent_schema_version", json={"details": {"agent_id": agent,
                                                                               **SCHEMA_VERSION}}))
    fixed = version["span_type_schemas"]["fixed"]["template_validation"]
    assert fixed["status"] == "error" and "too large to render" in fixed["message"]
    assert version["span_type_schemas"]["fed"]["template_validation"]["status"] == "success"
    span = ok(client.post("/api/v1/agent_spans", json={"details": {
        "agent_instance_id": instance, "schema_name": "fed", "status": "active", "payload": {"n": 20_000_000}}}))
    small = ok(client.post("/api/v1/agent_spans", json={"details": {
        "agent_instance_id": instance, "schema_name": "fed", "status": "active", "payload": {"n": 3}}}))

    def read() -> dict[str, str | None]:
        with httpx.Client(base_url=live.url, timeout=60, headers=client.headers) as reader:
            listed = reader.get("/api/v1/agent_spans", params={"agent_instance_id": instance,
                                                               "include_summaries": "true"})
            assert listed.status_code == 200, listed.text
            return {item["id"]: item["summary"] for item in listed.json()["summaries"]}

    readers = [in_background(read) for _ in range(3)]
    with httpx.Client(base_url=live.url, timeout=10, headers=client.headers) as other:
        for _ in range(5):
            assert other.get("/api/v1/ping").status_code == 200
    for thread, box in readers:
        within_deadline(lambda thread=thread: thread.join(), seconds=20)
        assert "error" not in box, box.get("error")
        assert box["value"][span["id"]] == TOO_LARGE_SUMMARY
        assert box["value"][small["id"]] == "5"
