"""8 clients append to one session with If-Match against a real uvicorn, 12 appends each,
all starting from the same version: the history holds exactly the acknowledged appends, in
the positions acknowledged, and every stale If-Match is refused."""

from __future__ import annotations

import os
import threading

import httpx

from agentfolio.store import Store
from tests.storage import LiveServer

CLIENTS = 8
APPENDS = int(os.environ.get("AGENTFOLIO_TEST_CONCURRENCY_APPENDS", "12"))


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
    # Every client's first append names version 1 at the same moment: one of them wins,
    # the others must be refused, whatever the timing.
    start = threading.Barrier(CLIENTS)

    def client(number: int) -> None:
        version = "1"
        sequence = 0
        with httpx.Client(base_url=live.url, headers=headers, timeout=30) as http:
            start.wait()
            while sequence < APPENDS:
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
    assert len(acknowledged) == CLIENTS * APPENDS
    assert sum(conflicts) >= CLIENTS - 1, conflicts
    print(f"{len(acknowledged)} appends acknowledged, {sum(conflicts)} stale If-Match refused")


# -- blobs under racing writes ------------------------------------------------------------------

RACING_PAIRS = int(os.environ.get("AGENTFOLIO_TEST_RACING_PAIRS", "100"))
BIG = 70 * 1024  # past the default blob threshold (64 KiB), so the content goes to the blob store


def _big_entry(label: str, shared: bool) -> dict:
    # Half the entries carry the same content, so one blob is shared by many sessions.
    filler = ("shared " if shared else f"{label} ") * (BIG // 8)
    return {"$type": "response", "messages": [{"role": "tool", "contents": [
        {"$type": "functionResult", "callId": label, "result": filler}]}]}


def _history_is_whole(document: dict, expected: dict[str, dict]) -> list[str]:
    wrong = []
    for entry in document["data"]["conversationHistory"]:
        label = entry["messages"][0]["contents"][0]["callId"]
        if entry != expected[label]:
            wrong.append(label)
    return wrong


def test_racing_resets_deletes_and_creates_keep_every_acknowledged_blob(settings, store: Store) -> None:
    """(reset ‖ append of a >64 KiB entry) and (delete ‖ create with one) race in pairs, while
    the server's own sweep and a sweep in this process collect blobs: every write that
    committed answers 2xx, and every session acknowledged reads back whole."""
    from concurrent.futures import ThreadPoolExecutor

    server = LiveServer(settings.with_(blob_sweep_interval=1))
    token, _ = store.accounts.create_token("blobs")
    headers = {"Authorization": f"Bearer {token}"}
    empty = {"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}
    expected: dict[str, dict] = {}
    failures: list[str] = []
    sweeping = threading.Event()
    swept = [0]

    def sweep_meanwhile() -> None:
        while not sweeping.is_set():
            swept[0] += store.sweep_blobs().deleted

    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
            def check(response: httpx.Response, what: str, status: int) -> bool:
                if response.status_code != status:
                    failures.append(f"{what}: {response.status_code} {response.text[:200]}")
                    return False
                return True

            def reset_and_append(number: int) -> None:
                session = f"ra-{number}"
                # A blob already there gives the reset something to leave for the sweep.
                earlier = [_big_entry(f"{session}-0", shared=False)]
                expected[f"{session}-0"] = earlier[0]
                check(http.post("/api/v1/sessions", params={"id": session},
                                json={**empty, "data": {"conversationHistory": earlier}}), f"create {session}", 201)
                entry = _big_entry(session, shared=number % 2 == 0)
                expected[session] = entry
                with ThreadPoolExecutor(2) as pair:
                    reset = pair.submit(http.post, f"/api/v1/sessions/{session}/reset")
                    append = pair.submit(http.post, f"/api/v1/sessions/{session}/entries", json=entry,
                                         headers={"If-Match": "*"})
                check(reset.result(), f"reset {session}", 200)
                check(append.result(), f"append {session}", 201)

            def delete_and_create(number: int) -> None:
                doomed, fresh = f"dc-old-{number}", f"dc-new-{number}"
                first = _big_entry(doomed, shared=number % 2 == 0)
                second = _big_entry(fresh, shared=number % 2 == 0)
                expected[doomed], expected[fresh] = first, second
                check(http.post("/api/v1/sessions", params={"id": doomed},
                                json={**empty, "data": {"conversationHistory": [first]}}), f"create {doomed}", 201)
                with ThreadPoolExecutor(2) as pair:
                    delete = pair.submit(http.delete, f"/api/v1/sessions/{doomed}")
                    create = pair.submit(http.post, "/api/v1/sessions", params={"id": fresh},
                                         json={**empty, "data": {"conversationHistory": [second]}})
                check(delete.result(), f"delete {doomed}", 200)
                check(create.result(), f"create {fresh}", 201)

            sweeper = threading.Thread(target=sweep_meanwhile)
            sweeper.start()
            try:
                with ThreadPoolExecutor(4) as pool:
                    jobs = [pool.submit(reset_and_append, n) for n in range(RACING_PAIRS)]
                    jobs += [pool.submit(delete_and_create, n) for n in range(RACING_PAIRS)]
                    for job in jobs:
                        job.result()
            finally:
                sweeping.set()
                sweeper.join()
            swept[0] += store.sweep_blobs().deleted

            unreadable = []
            sessions = [f"ra-{n}" for n in range(RACING_PAIRS)] + [f"dc-new-{n}" for n in range(RACING_PAIRS)]
            for session in sessions:
                answer = http.get(f"/api/v1/sessions/{session}")
                if answer.status_code != 200:
                    unreadable.append(f"{session}: {answer.status_code} {answer.text[:120]}")
                    continue
                unreadable += [f"{session}: entry {label} changed" for label in
                               _history_is_whole(answer.json(), expected)]
            gone = [f"dc-old-{n}" for n in range(RACING_PAIRS)
                    if http.get(f"/api/v1/sessions/dc-old-{n}").status_code != 404]
    finally:
        server.stop()
    assert failures == [], f"{len(failures)} writes not answered 2xx, first: {failures[:5]}"
    assert unreadable == [], f"{len(unreadable)} acknowledged sessions unreadable, first: {unreadable[:5]}"
    assert gone == []
    # Reset and delete left garbage that the sweeps collected.
    assert swept[0] > 0
