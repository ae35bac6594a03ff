"""Fixtures for the store and service tests: each test gets its own database on every backend.

SQLite: a fresh file.  PostgreSQL: a fresh schema in the test database (dropped after),
from ``AGENTFOLIO_TEST_POSTGRES_URL`` or, when unset, ``scripts/ensure-postgres.sh``.
Without a server the PostgreSQL tests skip, unless ``CI`` is set: then they fail.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["sqlite", "postgresql"]


def _find_postgres() -> tuple[str | None, str]:
    url = os.environ.get("AGENTFOLIO_TEST_POSTGRES_URL")
    if url:
        return url, ""
    script = ROOT / "scripts" / "ensure-postgres.sh"
    try:
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip().splitlines()[-1], ""
    return None, (done.stderr.strip() or f"exit {done.returncode}").splitlines()[-1]


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url, why = _find_postgres()
    if url is None:
        message = ("PostgreSQL tests need a server: set AGENTFOLIO_TEST_POSTGRES_URL or run "
                   f"scripts/ensure-postgres.sh as root ({why})")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return url


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agentfolio.sqlite3'}"
        return
    base = request.getfixturevalue("postgres_url")
    import sqlalchemy as sa

    schema = "t_" + secrets.token_hex(6)
    admin = sa.create_engine(base)
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url)


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    opened = Store.open(settings)
    try:
        yield opened
    finally:
        opened.close()


def statements_run(engine: Any) -> list[str]:
    """Every SQL statement the engine sends from now on, in order (for the test's life:
    the engine is the test's own)."""
    import sqlalchemy as sa

    seen: list[str] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def record(_conn, _cursor, statement, _parameters, _context, _many):  # type: ignore[no-untyped-def]
        seen.append(statement)

    return seen


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class InProcessServer:
    """An ASGI app served by uvicorn on loopback in a thread of this process (its start does
    not wait for a second interpreter to import everything). ``url`` is its base URL."""

    def __init__(self, app: Any, *, log_level: str = "critical") -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level=log_level))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 120  # a loaded CI machine starts slowly
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A local S3 (moto's server mode) on loopback; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def settings_env(settings: Settings) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTFOLIO_")}
    env["AGENTFOLIO_DATA_DIR"] = str(settings.data_dir)
    env["AGENTFOLIO_DATABASE_URL"] = settings.effective_database_url
    env["AGENTFOLIO_SESSION_TTL"] = str(settings.session_ttl)
    env["AGENTFOLIO_MAX_BODY_BYTES"] = str(settings.max_body_bytes)
    env["AGENTFOLIO_MAX_JSON_DEPTH"] = str(settings.max_json_depth)
    env["AGENTFOLIO_BLOB_THRESHOLD"] = str(settings.blob_threshold)
    env["AGENTFOLIO_OTLP_MAX_BYTES"] = str(settings.otlp_max_bytes)
    env["AGENTFOLIO_OTLP_QUEUE"] = str(settings.otlp_queue_size)
    env["AGENTFOLIO_OTLP_BACKLOG"] = str(settings.otlp_backlog)
    env["AGENTFOLIO_BULK_QUEUE"] = str(settings.bulk_queue_size)
    env["AGENTFOLIO_BULK_WAITERS"] = str(settings.bulk_waiters)
    env["AGENTFOLIO_BULK_WAIT_MS"] = str(settings.bulk_wait_ms)
    env["AGENTFOLIO_BLOB_SWEEP_INTERVAL"] = str(settings.blob_sweep_interval)
    env["AGENTFOLIO_COMPAT_TIMEOUT"] = str(settings.compat_timeout)
    env["AGENTFOLIO_MIGRATE"] = settings.migrate
    env["AGENTFOLIO_LOG_FORMAT"] = settings.log_format
    if settings.metrics_token:
        env["AGENTFOLIO_METRICS_TOKEN"] = settings.metrics_token
    env["AGENTFOLIO_IDEMPOTENCY_WINDOW"] = str(settings.idempotency_window)
    env["AGENTFOLIO_SPAN_RETENTION_DAYS"] = str(settings.span_retention_days)
    env["AGENTFOLIO_SPAN_PARTITION_DAYS"] = str(settings.span_partition_days)
    if settings.blob_url:
        env["AGENTFOLIO_BLOB_URL"] = settings.blob_url
    if settings.s3_endpoint_url:
        env["AGENTFOLIO_S3_ENDPOINT_URL"] = settings.s3_endpoint_url
    return env


class LiveServer:
    """A server in its own process, on loopback: by default
    ``uvicorn --factory agentfolio.server:app_from_env``; ``cli_serve`` runs the real
    ``agentfolio serve`` command instead."""

    def __init__(self, settings: Settings, *, cli_serve: bool = False, serve_args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        address = ["--host", "127.0.0.1", "--port", str(self.port)]
        if cli_serve:
            command = [sys.executable, "-m", "agentfolio.cli", "serve", *address, *serve_args]
            env = {**settings_env(settings), "AGENTFOLIO_LOG_LEVEL": "warning"}
        else:
            command = [sys.executable, "-m", "uvicorn", "--factory", "agentfolio.server:app_from_env", *address,
                       "--log-level", "warning"]
            env = settings_env(settings)
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240  # a loaded CI machine starts slowly
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                httpx.get(self.url + "/healthz", timeout=5)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not start within 240 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def live(settings: Settings, store: Store) -> Iterator[LiveServer]:
    server = LiveServer(settings)
    try:
        yield server
    finally:
        server.stop()
