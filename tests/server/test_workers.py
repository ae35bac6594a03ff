"""``agentfolio serve --workers 2``: two processes on one port behave as one server — the
metrics of both are added up at /metrics, and each background job runs in one of them."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.server.test_metrics import value
from tests.storage import LiveServer

REQUESTS = 30


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_two_workers_add_up_their_metrics_and_share_their_jobs(settings: Settings, store: Store) -> None:
    server = LiveServer(settings, cli_serve=True, serve_args=("--workers", "2"))
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            # Every worker asks for each job as it starts; wait until both have.
            deadline = time.monotonic() + 180
            while True:
                text = http.get("/metrics").text
                asked = sum(value(text, "agentfolio_background_job_runs_total", job="expire-viewer-files",
                                  outcome=outcome) for outcome in ("ran", "skipped"))
                if asked >= 2 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert asked >= 2, "the second worker never started"
            before = value(text, "agentfolio_http_requests_total", method="GET", route="/healthz", status="200")
            for _ in range(REQUESTS):
                with httpx.Client(base_url=server.url, timeout=60) as fresh:  # a new connection each time
                    assert fresh.get("/healthz").status_code == 200
            text = http.get("/metrics").text
        # Whichever worker answered /metrics counted both workers' requests.
        assert value(text, "agentfolio_http_requests_total", method="GET", route="/healthz", status="200") \
            - before == REQUESTS
        for job in ("expire-sessions", "sweep-blobs", "expire-viewer-files"):  # periods far longer than this test
            assert value(text, "agentfolio_background_job_runs_total", job=job, outcome="ran") == 1, job
            assert value(text, "agentfolio_background_job_runs_total", job=job, outcome="skipped") >= 1, job
        state = store.jobs.state("sweep-blobs")
        assert state is not None and state.runs == 1
    finally:
        server.process.terminate()
        try:
            server.process.wait(60)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
