"""A real full disk: the data folder on a 3 MiB tmpfs, filled by appends until the server
answers 507; everything acknowledged before reads back whole, the SQLite file passes its
integrity check, and once space is freed writes succeed again.

Mounting needs root (CAP_SYS_ADMIN), which CI has: there a failed mount fails the test;
elsewhere it skips, and ``tests/api/test_errors.py`` covers the same answer with an
injected ENOSPC.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import LiveServer


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        message = (f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); "
                   "tests/api/test_errors.py injects ENOSPC instead")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_full_disk_answers_507_and_corrupts_nothing(small_disk: Path) -> None:
    settings = Settings(data_dir=small_disk / "data", blob_threshold=1000, blob_sweep_interval=0)
    with Store.open(settings) as store:
        token, _ = store.accounts.create_token("full")
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * 512 * 1024)  # freed at the end, to show writes work again
    server = LiveServer(settings)
    acknowledged: list[dict] = []
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            created = http.post("/api/v1/sessions", params={"id": "s"},
                                json={"schemaVersion": "1.2.0", "data": {"conversationHistory": []}})
            assert created.status_code == 201, created.text
            answer = None
            for number in range(200):
                entry = {"$type": "response", "messages": [{"role": "tool", "contents": [
                    {"$type": "functionResult", "callId": f"c{number}", "result": f"{number:04d} " * 12_000}]}]}
                answer = http.post("/api/v1/sessions/s/entries", json=entry, headers={"If-Match": "*"})
                if answer.status_code != 201:
                    break
                acknowledged.append(entry)
            assert answer is not None and answer.status_code == 507, answer.text
            assert answer.json()["code"] == "insufficient_storage" and "full" in answer.json()["message"]
            assert acknowledged, "the disk was full before the first append"

            document = http.get("/api/v1/sessions/s")
            assert document.status_code == 200
            assert document.json()["data"]["conversationHistory"] == acknowledged

            ballast.unlink()
            entry = {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": "x"}]}]}
            assert http.post("/api/v1/sessions/s/entries", json=entry, headers={"If-Match": "*"}).status_code == 201
    finally:
        server.stop()
    with sqlite3.connect(settings.data_dir / "agentfolio.sqlite3") as database:
        assert database.execute("PRAGMA integrity_check").fetchone() == ("ok",)
