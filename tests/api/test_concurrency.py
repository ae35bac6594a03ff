"""8 clients append to one session with If-Match for 10 seconds against a real uvicorn:
the history holds exactly the acknowledged appends, in the positions acknowledged."""

from __future__ import annotations

import os
import threading
import time

import httpx

from agentfolio.store import Store
from tests.storage import LiveServer

CLIENTS = 8
SECONDS = float(os.environ.get("AGENTFOLIO_TEST_CONCURRENCY_SECONDS", "10"))


def test_concurrent_appends_lose_and_duplicate_nothing(live: LiveServer, store: Store) -> None:
    token, _ = store.accounts.create_token("race")
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(live.url + "/api/v1/sessions", params={"id": "race"}, headers=headers,
                         json={"schemaVersion": "1.1.0", "data": {"conversationHistory": []}})
    assert created.status_code == 201, created.text

    acknowledged: list[tuple[int, str]] = []
    conflicts = [0] * CLIENTS
    failures: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + SECONDS

    def client(number: int) -> None:
        version = "1"
        sequence = 0
        with httpx.Client(base_url=live.url, headers=headers, timeout=30) as http:
            while time.monotonic() < deadline:
                marker = f"client {number} append {sequence}"
                entry = {"$type": "request", "messages": [{"role": "user", "contents": [
                    {"$type": "text", "text": marker}]}]}
                response = http.post("/api/v1/sessions/race/entries", json=entry, headers={"If-Match": f'"{version}"'})
                if response.status_code == 201:
                    with lock:
                        acknowledged.append((response.json()["details"]["position"], marker))
                    version = response.headers["etag"].strip('"')
                    sequence += 1
                elif response.status_code == 412:
                    conflicts[number] += 1
                    assert response.json()["code"] == "version_conflict"
                    version = response.headers["etag"].strip('"')
                else:
                    with lock:
                        failures.append(f"{response.status_code} {response.text[:200]}")
                    return

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []

    final = httpx.get(live.url + "/api/v1/sessions/race", headers=headers)
    history = final.json()["data"]["conversationHistory"]
    stored = [entry["messages"][0]["contents"][0]["text"] for entry in history]
    assert len(stored) == len(set(stored)), "an append was stored twice"
    assert sorted(acknowledged) == list(enumerate(stored)), "history differs from the acknowledged appends"
    assert final.headers["etag"] == f'"{1 + len(acknowledged)}"'
    assert len(acknowledged) > CLIENTS and sum(conflicts) > 0, (len(acknowledged), conflicts)
    print(f"{len(acknowledged)} appends acknowledged, {sum(conflicts)} stale If-Match refused")
