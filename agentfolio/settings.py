"""Where agentfolio keeps its data and the limits it enforces, read from the environment.

Every setting has a default that needs no set-up:

``AGENTFOLIO_DATA_DIR``
    The data folder, created on first use.  Default: ``$XDG_DATA_HOME/agentfolio``, or
    ``~/.local/share/agentfolio`` when ``XDG_DATA_HOME`` is unset.
``AGENTFOLIO_DATABASE_URL``
    A SQLAlchemy URL.  Default: the SQLite file ``<data dir>/agentfolio.sqlite3`` (WAL).
    For a shared deployment: ``postgresql+psycopg://user:password@host/dbname``.
``AGENTFOLIO_BLOB_URL``
    Where large contents go.  Default: the folder ``<data dir>/blobs``.  ``file:///path``
    for another folder, ``s3://bucket/prefix`` for any S3-compatible store (credentials
    and region from the usual ``AWS_*`` variables; ``AGENTFOLIO_S3_ENDPOINT_URL`` for a
    store that is not AWS).
``AGENTFOLIO_BLOB_THRESHOLD``
    Contents whose JSON is larger than this many bytes go to the blob store (default
    65536); MessageBody parts (``$type: part``) always do.
``AGENTFOLIO_BLOB_SWEEP_INTERVAL``
    Seconds between two sweeps of the blob store by a running server, which remove the
    blobs no entry points at any more (left by resets, deletes, expiry); ``0`` turns the
    server's sweep off.  Default 600.
``AGENTFOLIO_SESSION_TTL``
    Seconds a session may stay idle (not written) before it expires; ``0`` keeps
    sessions forever.  Default 1209600 (14 days, the durable agents' own default).
``AGENTFOLIO_MAX_BODY_BYTES`` / ``AGENTFOLIO_MAX_JSON_DEPTH``
    Bounds on an HTTP request body: size (default 64 MiB) and JSON nesting (default 128).
``AGENTFOLIO_OTLP_MAX_BYTES`` / ``AGENTFOLIO_OTLP_QUEUE`` / ``AGENTFOLIO_OTLP_BACKLOG``
    The OTLP receiver (``/v1/traces``): the largest request body after decompression
    (default 32 MiB; larger is 413), how many requests it takes at once before
    answering 429 with ``Retry-After`` (default 8), and how many stored spans may wait
    for their conversations (in the database) before it answers 503 with
    ``Retry-After`` until they are taken in (default 100000).
``AGENTFOLIO_BULK_QUEUE``
    How many ``POST /api/v1/bulk`` requests one server process takes at once (default 2):
    one more is answered 429 with ``Retry-After`` before its body is read, so the ones taken
    stay as fast as with one client instead of each waiting for all before it (the
    Prefactor SDKs retry 429).  Each process has its own count (``--workers N``: N times it).
``AGENTFOLIO_BULK_WAITERS`` / ``AGENTFOLIO_BULK_WAIT_MS``
    How many more bulk requests may wait for one of those places (default 0: none), and for
    how many milliseconds each (default 1000) before it is answered 429 after all.  Off by
    default: a waiter's wait adds to its answer's latency (answered p95 under 16 clients
    ~3x one client's with 2 waiters, against ~1.4-1.7x refused at once), for fewer retries.  A place
    given back goes straight to the first waiter, so places do not stay empty while the
    refused clients sleep their ``Retry-After``; a waiter's body is not read while it
    waits.  ``0`` waiters (or 0 ms) answers 429 at once whenever every place is taken.
``AGENTFOLIO_IDEMPOTENCY_WINDOW``
    Seconds an idempotency key of the registry API (``Idempotency-Key``, a bulk item's
    ``idempotency_key``) is remembered: within it a replay answers again and the same key
    with another body is refused (409); after it the key is free and a request carrying
    it runs as new.  ``0`` remembers keys forever.  Default 86400 (one day).
``AGENTFOLIO_SPAN_RETENTION_DAYS``
    Days registry spans are kept, counted from the time in their id (when the span was
    created; for OTLP spans, when their trace's first span arrived, so a trace goes
    whole); older ones are removed by a running server, once an hour.  ``0`` (default)
    keeps spans forever.
``AGENTFOLIO_SPAN_PARTITION_DAYS``
    PostgreSQL only: the time each partition of the spans table covers (default 30).
    Retention drops whole partitions, so a span may outlive the retention window by up
    to this long; smaller partitions mean more tables for reads that are not by id.
``AGENTFOLIO_COMPAT_TIMEOUT``
    Seconds a MessageBody schema compatibility check may run before it is stopped and
    answered "too complex" (default 10).
``AGENTFOLIO_MIGRATE``
    ``auto`` (default): opening the store brings its schema to the newest version.
    ``off``: it never does; ``agentfolio db upgrade`` does, and a server whose database is
    behind answers 503 on ``/readyz`` (the zero-downtime upgrade in docs/deploy.md).
``AGENTFOLIO_LOG_FORMAT``
    ``text`` (default) or ``json``: one JSON object per line on stderr (time, level,
    logger, message, and for requests the method, path, status and client).
``AGENTFOLIO_METRICS_TOKEN``
    Who may read the Prometheus metrics at ``/metrics``: with a token set, a request
    bearing ``Authorization: Bearer <token>``; without one, only clients on the server's
    own machine (a loopback address, not forwarded by a proxy).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentfolio.errors import AgentfolioError

ENV_PREFIX = "AGENTFOLIO_"
DEFAULT_BLOB_THRESHOLD = 64 * 1024
DEFAULT_BLOB_SWEEP_INTERVAL = 600
DEFAULT_SESSION_TTL = 14 * 24 * 3600
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_JSON_DEPTH = 128
DEFAULT_OTLP_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_OTLP_QUEUE = 8
DEFAULT_OTLP_BACKLOG = 100_000
DEFAULT_BULK_QUEUE = 2
DEFAULT_BULK_WAITERS = 0
DEFAULT_BULK_WAIT_MS = 1000
DEFAULT_COMPAT_TIMEOUT = 10
MIGRATE_CHOICES = ("auto", "off")
LOG_FORMATS = ("text", "json")
DEFAULT_IDEMPOTENCY_WINDOW = 24 * 3600
DEFAULT_SPAN_PARTITION_DAYS = 30
# Searchable text kept per entry; the entry itself is always kept whole.
DEFAULT_SEARCH_TEXT_LIMIT = 32 * 1024


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentfolio"


class SettingsError(AgentfolioError, ValueError):
    """A setting that cannot be used: names the variable and what was wrong."""

    code = "bad_setting"


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    database_url: str | None = None
    blob_url: str | None = None
    s3_endpoint_url: str | None = None
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD
    blob_sweep_interval: int = DEFAULT_BLOB_SWEEP_INTERVAL
    session_ttl: int = DEFAULT_SESSION_TTL
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    search_text_limit: int = DEFAULT_SEARCH_TEXT_LIMIT
    otlp_max_bytes: int = DEFAULT_OTLP_MAX_BYTES
    otlp_queue_size: int = DEFAULT_OTLP_QUEUE
    otlp_backlog: int = DEFAULT_OTLP_BACKLOG
    bulk_queue_size: int = DEFAULT_BULK_QUEUE
    bulk_waiters: int = DEFAULT_BULK_WAITERS
    bulk_wait_ms: int = DEFAULT_BULK_WAIT_MS
    compat_timeout: int = DEFAULT_COMPAT_TIMEOUT
    migrate: str = "auto"
    log_format: str = "text"
    metrics_token: str | None = None
    idempotency_window: int = DEFAULT_IDEMPOTENCY_WINDOW
    span_retention_days: int = 0
    span_partition_days: int = DEFAULT_SPAN_PARTITION_DAYS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if environ is None else environ

        def text(name: str) -> str | None:
            value = env.get(ENV_PREFIX + name)
            return value if value not in (None, "") else None

        def number(name: str, default: int) -> int:
            value = text(name)
            if value is None:
                return default
            try:
                parsed = int(value)
            except ValueError:
                raise SettingsError(f"{ENV_PREFIX}{name}={value!r} is not a whole number") from None
            if parsed < 0:
                raise SettingsError(f"{ENV_PREFIX}{name}={value!r} must not be negative")
            return parsed

        def choice(name: str, choices: tuple[str, ...]) -> str:
            value = (text(name) or choices[0]).strip().lower()
            if value not in choices:
                raise SettingsError(f"{ENV_PREFIX}{name}={value!r}: expected one of {', '.join(choices)}")
            return value

        data_dir = text("DATA_DIR")
        settings = cls(
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(env),
            database_url=text("DATABASE_URL"),
            blob_url=text("BLOB_URL"),
            s3_endpoint_url=text("S3_ENDPOINT_URL"),
            blob_threshold=number("BLOB_THRESHOLD", DEFAULT_BLOB_THRESHOLD),
            blob_sweep_interval=number("BLOB_SWEEP_INTERVAL", DEFAULT_BLOB_SWEEP_INTERVAL),
            session_ttl=number("SESSION_TTL", DEFAULT_SESSION_TTL),
            max_body_bytes=number("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
            max_json_depth=number("MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH),
            search_text_limit=number("SEARCH_TEXT_LIMIT", DEFAULT_SEARCH_TEXT_LIMIT),
            otlp_max_bytes=number("OTLP_MAX_BYTES", DEFAULT_OTLP_MAX_BYTES),
            otlp_queue_size=number("OTLP_QUEUE", DEFAULT_OTLP_QUEUE),
            otlp_backlog=number("OTLP_BACKLOG", DEFAULT_OTLP_BACKLOG),
            bulk_queue_size=number("BULK_QUEUE", DEFAULT_BULK_QUEUE),
            bulk_waiters=number("BULK_WAITERS", DEFAULT_BULK_WAITERS),
            bulk_wait_ms=number("BULK_WAIT_MS", DEFAULT_BULK_WAIT_MS),
            compat_timeout=max(1, number("COMPAT_TIMEOUT", DEFAULT_COMPAT_TIMEOUT)),
            migrate=choice("MIGRATE", MIGRATE_CHOICES),
            log_format=choice("LOG_FORMAT", LOG_FORMATS),
            metrics_token=text("METRICS_TOKEN"),
            idempotency_window=number("IDEMPOTENCY_WINDOW", DEFAULT_IDEMPOTENCY_WINDOW),
            span_retention_days=number("SPAN_RETENTION_DAYS", 0),
            span_partition_days=max(1, number("SPAN_PARTITION_DAYS", DEFAULT_SPAN_PARTITION_DAYS)),
        )
        return replace(settings, **overrides) if overrides else settings  # type: ignore[arg-type]

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'agentfolio.sqlite3'}"

    @property
    def effective_blob_url(self) -> str:
        return self.blob_url or (self.data_dir / "blobs").as_uri()

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]
