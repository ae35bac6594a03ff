"""``agentfolio serve --demo`` (what ``make run`` runs) in its own process, with the lines
it printed for the Prefactor SDKs: the tests use nothing else to reach it."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.storage import database_url, free_port, live, postgres_url, settings, store  # noqa: F401

SDK_LINE = re.compile(r'^\s*(api_url|api_token)="([^"]+)",\s*$')


class DemoServer:
    def __init__(self) -> None:
        self.port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTFOLIO_")}
        env.update(AGENTFOLIO_LOG_LEVEL="warning", COLUMNS="200")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentfolio.cli", "serve", "--demo", "--port", str(self.port)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.printed: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(lines,), daemon=True).start()
        #: the two lines printed for the SDK, as printed (what a user pastes)
        self.sdk_lines: dict[str, str] = {}
        self.values: dict[str, str] = {}
        deadline = time.monotonic() + 120
        while len(self.values) < 2:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("serve --demo printed no api_url/api_token lines:\n" + "\n".join(self.printed)
                                   + (self.process.stderr.read()[-2000:] if self.process.stderr else ""))
            found = SDK_LINE.match(line)
            if found:
                self.sdk_lines[found.group(1)] = line.strip()
                self.values[found.group(1)] = found.group(2)
        self.api_url, self.api_token = self.values["api_url"], self.values["api_token"]
        while time.monotonic() < deadline:
            try:
                httpx.get(self.api_url + "/api/v1/ping", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("serve --demo did not answer within 120 s")

    def _pump(self, lines: queue.Queue[str | None]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.printed.append(line.rstrip("\n"))
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.api_url, headers={"Authorization": f"Bearer {self.api_token}"}, timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    server = DemoServer()
    try:
        yield server
    finally:
        server.stop()


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text[:1000]
    body = response.json()
    assert body["status"] == "success", body
    return body


def everything(client: httpx.Client, path: str, **params: str) -> list[dict]:
    """Every item of a list endpoint, following ``next_page_offset``."""
    items: list[dict] = []
    offset: int | None = 0
    while offset is not None:
        body = ok(client.get(path, params={**params, "pagination[offset]": str(offset),
                                           "pagination[page_size]": "100"}))
        items.extend(body["summaries"])
        offset = body["pagination"]["next_page_offset"]
    return items
