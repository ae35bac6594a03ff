"""Failures answer a clear status in the error envelope, and the connection stays open.

The server runs in this process (uvicorn in a thread) so a test can make the blob store's
disk fill up: an ``OSError(ENOSPC)`` raised where the store writes, as a full disk raises it.
``tests/api/test_storage_full.py`` fills a real (tmpfs) disk where one can be mounted.
"""

from __future__ import annotations

import errno
import http.client
from collections.abc import Iterator

import orjson
import pytest

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store
from tests.storage import InProcessServer


class FullDisk:
    """A blob store whose disk is full while ``full`` is set: every write fails with ENOSPC."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.full = False

    def put(self, key: str, data: bytes) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.inner.put(key, data)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


@pytest.fixture
def served(settings, store: Store) -> Iterator[tuple[InProcessServer, FullDisk, str]]:
    disk = FullDisk(store.blobs)
    faulty = Store(store.settings.with_(blob_threshold=1000), store.engine, disk)
    app = create_server(folio=Agentfolio(faulty, owned=False))

    @app.get("/test-only/boom", include_in_schema=False)
    async def boom() -> None:
        raise RuntimeError("a bug the route did not expect")

    token, _ = faulty.accounts.create_token("errors")
    server = InProcessServer(app)
    try:
        yield server, disk, token
    finally:
        server.stop()


def _ask(connection: http.client.HTTPConnection, method: str, path: str, token: str,
         body: object = None, headers: dict[str, str] | None = None) -> tuple[int, dict, bool]:
    sent = {"Authorization": f"Bearer {token}", **(headers or {})}
    if body is not None:
        sent["Content-Type"] = "application/json"
    connection.request(method, path, body=None if body is None else orjson.dumps(body), headers=sent)
    response = connection.getresponse()
    data = response.read()
    parsed = orjson.loads(data) if response.getheader("content-type", "").startswith("application/json") else {}
    return response.status, parsed, response.will_close


def _big_entry(text: str) -> dict:
    return {"$type": "response", "messages": [{"role": "tool", "contents": [
        {"$type": "functionResult", "callId": "c", "result": text * 2000}]}]}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_bad_requests_and_failures_answer_clearly_on_a_connection_that_stays_open(served) -> None:
    server, disk, token = served
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    empty = {"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}
    assert _ask(connection, "POST", "/api/v1/sessions?id=s", token, empty)[0] == 201
    assert _ask(connection, "POST", "/api/v1/sessions/s/entries", token, _big_entry("kept "),
                {"If-Match": "*"})[0] == 201
    socket_before = connection.sock

    status, body, closes = _ask(connection, "GET", "/api/v1/agent?pagination[offset]=9223372036854775808", token)
    assert (status, body.get("code"), closes) == (422, "invalid_value", False), body
    assert "pagination[offset]" in body["message"]
    status, body, closes = _ask(connection, "GET", "/api/v1/agent?pagination[offset]=" + "9" * 5000, token)
    assert (status, closes) == (422, False), body
    status, _, closes = _ask(connection, "GET", "/static/viewer.js%00.css", token)
    assert (status, closes) == (404, False)

    status, body, closes = _ask(connection, "GET", "/test-only/boom", token)
    assert (status, body.get("code"), closes) == (500, "internal_error", False), body
    assert "Traceback" not in body["message"] and "RuntimeError" not in body["message"]

    disk.full = True
    status, body, closes = _ask(connection, "POST", "/api/v1/sessions/s/entries", token, _big_entry("lost "),
                                {"If-Match": "*"})
    assert (status, body.get("code"), closes) == (507, "insufficient_storage", False), body
    assert "full" in body["message"] and "nothing was stored" in body["message"]
    status, body, _ = _ask(connection, "POST", "/api/v1/sessions?id=t", token,
                           {**empty, "data": {"conversationHistory": [_big_entry("lost ")]}})
    assert (status, body.get("code")) == (507, "insufficient_storage"), body

    # Nothing half-written: the session is as it was, the refused one does not exist.
    status, document, closes = _ask(connection, "GET", "/api/v1/sessions/s", token)
    assert (status, closes) == (200, False)
    assert document["data"]["conversationHistory"] == [_big_entry("kept ")]
    assert _ask(connection, "GET", "/api/v1/sessions/t", token)[0] == 404
    disk.full = False
    assert _ask(connection, "POST", "/api/v1/sessions/s/entries", token, _big_entry("after "),
                {"If-Match": "*"})[0] == 201
    assert connection.sock is socket_before, "the server closed the connection after an error"
    connection.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_database_locked_past_its_wait_answers_503_with_retry_after_and_stores_nothing(settings, store: Store) -> None:
    """Another process holds SQLite's write lock longer than the server waits for it (many
    writers at once): the request is told to come back, not answered 500, and the
    session it would have created does not exist; once the lock is free the same request
    succeeds."""
    import sqlite3

    import sqlalchemy as sa

    from agentfolio.store.engine import create_engine

    engine = create_engine(store.settings.database_url)

    @sa.event.listens_for(engine, "connect")
    def _short_wait(dbapi_connection, _record) -> None:  # after the store's own PRAGMAs
        dbapi_connection.execute("PRAGMA busy_timeout=200")

    impatient = Store(store.settings, engine, store.blobs)
    token, _ = impatient.accounts.create_token("busy")
    server = InProcessServer(create_server(folio=Agentfolio(impatient, owned=False)))
    holder = sqlite3.connect(engine.url.database, isolation_level=None)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        empty = {"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}
        holder.execute("BEGIN IMMEDIATE")
        connection.request("POST", "/api/v1/sessions?id=busy", body=orjson.dumps(empty),
                           headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        response = connection.getresponse()
        answer = orjson.loads(response.read())
        assert (response.status, answer["code"], response.will_close) == (503, "service_unavailable", False), answer
        assert response.getheader("Retry-After") == "1"
        assert "retry" in answer["message"]
        holder.execute("ROLLBACK")
        assert _ask(connection, "GET", "/api/v1/sessions/busy", token)[0] == 404
        assert _ask(connection, "POST", "/api/v1/sessions?id=busy", token, empty)[0] == 201
    finally:
        holder.close()
        server.stop()
        engine.dispose()


class _DriverError(Exception):
    def __init__(self, *, sqlstate: str | None = None, sqlite_errorcode: int | None = None) -> None:
        super().__init__("driver error")
        self.sqlstate = sqlstate
        self.sqlite_errorcode = sqlite_errorcode


@pytest.mark.parametrize(("driver", "busy"), [
    (_DriverError(sqlite_errorcode=5), True),          # SQLITE_BUSY
    (_DriverError(sqlite_errorcode=5 | 2 << 8), True),  # SQLITE_BUSY_SNAPSHOT: an extended code
    (_DriverError(sqlite_errorcode=6), True),          # SQLITE_LOCKED
    (_DriverError(sqlite_errorcode=1), False),         # a bad statement is a bug, not a busy database
    (_DriverError(sqlstate="55P03"), True),            # lock_not_available
    (_DriverError(sqlstate="40P01"), True),            # deadlock_detected
    (_DriverError(sqlstate="57P01"), True),            # admin_shutdown
    (_DriverError(sqlstate="08006"), True),            # connection_failure
    (_DriverError(sqlstate="23505"), False),           # unique_violation
    (_DriverError(sqlstate="42P01"), False),           # undefined_table
])
def test_a_busy_or_absent_database_is_told_apart_from_a_bug(driver: _DriverError, busy: bool) -> None:
    import sqlalchemy as sa

    from agentfolio.api.errors import database_busy

    wrapped = sa.exc.OperationalError("INSERT ...", {}, driver)
    assert database_busy(wrapped) is busy
