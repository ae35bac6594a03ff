"""/healthz and /readyz: what a load balancer asks before it sends a server traffic."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from agentfolio import _deadline
from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.store.engine import migrate


def client(store: Store) -> TestClient:
    return TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False))


def test_a_server_on_a_migrated_store_is_live_and_ready_without_a_token(store: Store) -> None:
    with client(store) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.head("/healthz").status_code == 200
        assert http.get("/readyz").json() == {"status": "ready"}


def test_a_database_behind_the_code_is_not_ready_until_upgraded(settings: Settings) -> None:
    with Store.open(settings.with_(migrate="off")) as store, client(store) as http:
        answer = http.get("/readyz")
        assert answer.status_code == 503 and answer.headers["retry-after"]
        assert answer.json()["code"] == "not_ready" and "agentfolio db upgrade" in answer.json()["message"]
        assert http.get("/healthz").status_code == 200  # alive all the same: do not restart it
        migrate(store.engine)
        assert http.get("/readyz").status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_blob_store_that_does_not_answer_is_not_ready(settings: Settings, s3_server: str) -> None:
    missing_bucket = settings.with_(blob_url="s3://no-such-bucket/blobs", s3_endpoint_url=s3_server)
    with Store.open(missing_bucket) as store, client(store) as http:
        answers = [http.get("/readyz") for _ in range(3)]  # the first may time out: moto starts lazily
    assert {answer.status_code for answer in answers} == {503}
    assert answers[-1].json()["message"] == "blob store: not reachable"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_database_that_does_not_answer_is_not_ready_and_the_answer_names_no_address(settings: Settings) -> None:
    with Store.open(settings) as store, client(store) as http:
        store.engine.dispose()
        store.engine.pool._creator = _refuse  # type: ignore[attr-defined]  # the database went away
        answer = http.get("/readyz")
    assert answer.status_code == 503 and answer.json()["message"] == "database: not reachable"


def _refuse() -> None:
    raise ConnectionRefusedError("connection to 10.0.0.7:5432 refused")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_server_shutting_down_is_not_ready(store: Store) -> None:
    with client(store) as http:
        _deadline.cancel_all()
        try:
            answer = http.get("/readyz")
        finally:
            _deadline.reset_after_shutdown()
    assert answer.status_code == 503 and answer.json()["message"] == "shutting down"
