"""/metrics: who may read it, and what it counts (route templates, ingest rejections)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

LOOPBACK = ("127.0.0.1", 40000)


def client(store: Store, *, address: tuple[str, int] = LOOPBACK, token: str | None = None) -> TestClient:
    folio = Agentfolio(store, owned=False)
    folio.settings = folio.settings.with_(metrics_token=token)
    return TestClient(create_server(folio=folio), client=address)


def value(text: str, name: str, **labels: str) -> float:
    """One sample of the exposition (0 when it has none yet)."""
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if match and match[1] == name:
            found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match[2] or ""))
            if all(found.get(key) == wanted for key, wanted in labels.items()):
                return float(match[3])
    return 0.0


def test_metrics_are_served_to_this_machine_and_to_the_token_only(store: Store) -> None:
    with client(store) as http:
        assert http.get("/metrics").status_code == 200
        forwarded = http.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
        assert forwarded.status_code == 403 and forwarded.json()["code"] == "not_permitted"
    with client(store, address=("203.0.113.9", 40000)) as http:
        assert http.get("/metrics").status_code == 403
    with client(store, address=("203.0.113.9", 40000), token="s3cret-metrics") as http:
        assert http.get("/metrics").status_code == 403
        assert http.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403
        answer = http.get("/metrics", headers={"Authorization": "Bearer s3cret-metrics"})
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")


def test_requests_are_counted_by_route_template_never_by_raw_path(store: Store) -> None:
    token, _ = store.accounts.create_token("metrics")
    route = "/api/v1/sessions/{session_id}"
    with client(store) as http:
        before = http.get("/metrics").text
        for name in ("a", "b", "script-x", "c" * 150):
            assert http.get(f"/api/v1/sessions/{name}", headers={"Authorization": f"Bearer {token}"}
                            ).status_code == 404
        http.get("/no/such/page/at/all")
        after = http.get("/metrics").text
    assert value(after, "agentfolio_http_requests_total", method="GET", route=route, status="404") \
        - value(before, "agentfolio_http_requests_total", method="GET", route=route, status="404") == 4
    assert value(after, "agentfolio_http_request_duration_seconds_count", method="GET", route=route) \
        - value(before, "agentfolio_http_request_duration_seconds_count", method="GET", route=route) == 4
    assert "script-x" not in after and "c" * 150 not in after
    assert value(after, "agentfolio_http_requests_total", route="unmatched", status="404") >= 1


def test_rejected_ingest_batches_are_counted_by_endpoint_and_status(store: Store) -> None:
    with client(store) as http:
        before = http.get("/metrics").text
        assert http.post("/v1/traces", content=b"{}", headers={"Content-Type": "application/json"}
                         ).status_code == 401
        assert http.post("/api/v1/bulk", json={"items": []}).status_code == 401
        after = http.get("/metrics").text
    for endpoint in ("otlp", "bulk"):
        assert value(after, "agentfolio_ingest_rejected_batches_total", endpoint=endpoint, status="401") \
            - value(before, "agentfolio_ingest_rejected_batches_total", endpoint=endpoint, status="401") == 1
    assert value(after, "agentfolio_ingest_queue_depth") == 0
