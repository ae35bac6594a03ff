"""OTLP trace ingest: a request body in, spans stored in the registry's traces and the
conversations in them stored as sessions.

:class:`OtlpIngest` is the use case every front end shares (the HTTP receiver today).
Its bounded queue keeps memory flat under a sender faster than the store: at most
``queue_size`` requests are admitted at once (each body bounded by the size limit);
past that, :meth:`OtlpIngest.admit` says no and the receiver answers 429 with
``Retry-After``, which OTLP exporters honour by backing off.  Spans are written by one
writer at a time (decoding runs in parallel before it).

Storage is one call, :meth:`OtlpIngest._store_spans` (the registry's span tables
through :class:`agentfolio.store.otel_spans.OtelSpans`).  A request is answered once its
spans are stored (queryable).  Conversations follow in the background: each session a
request touched is marked, and one worker rebuilds every marked session whole from all
of its stored spans, so spans arriving out of order or re-sent still give one session
holding each message once, and a conversation streamed over many requests is rebuilt
once per round rather than once per request.  The marks are bounded
(:data:`MAX_PENDING_SESSIONS`): past that, ingest waits for the worker.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from agentfolio.otel.conversation import build_session
from agentfolio.otel.decode import Encoding, decode_request, decompress
from agentfolio.otel.mapping import MappedSpan, map_spans
from agentfolio.settings import DEFAULT_OTLP_MAX_BYTES, DEFAULT_OTLP_QUEUE
from agentfolio.store import Account, Store
from agentfolio.store.errors import AlreadyExists, NotFound
from agentfolio.store.otel_spans import OtelSpans, StoreUnavailable, WrittenSpans

__all__ = ["RETRY_AFTER_SECONDS", "IngestResult", "OtlpIngest", "StoreUnavailable"]

log = logging.getLogger("agentfolio.otlp")

#: Seconds an exporter is asked to wait when the queue is full.
RETRY_AFTER_SECONDS = 1
#: Sessions waiting to be rebuilt before ingest waits for the worker.
MAX_PENDING_SESSIONS = 10_000


@dataclass(slots=True)
class IngestResult:
    accepted: int
    duplicates: int
    rejected: int
    #: Why spans were rejected (partial success), one line each, clipped.
    message: str = ""
    sessions: list[str] = field(default_factory=list)


class OtlpIngest:
    def __init__(self, store: Store, *, max_bytes: int = DEFAULT_OTLP_MAX_BYTES,
                 queue_size: int = DEFAULT_OTLP_QUEUE) -> None:
        self.store = store
        self.spans = OtelSpans(store.registry)
        self.max_bytes = max_bytes
        self.queue_size = queue_size
        self._admitted = 0
        self._lock = threading.Lock()
        self._writer = threading.Lock()
        self._pending: dict[tuple[int, str], Account] = {}
        self._pending_changed = threading.Condition()
        self._rebuilding = False
        self._worker: threading.Thread | None = None

    # -- admission ------------------------------------------------------------------------

    def admit(self) -> bool:
        """Take a place in the queue; ``False`` when it is full (answer 429, retry later)."""
        with self._lock:
            if self._admitted >= self.queue_size:
                return False
            self._admitted += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._admitted -= 1

    @property
    def admitted(self) -> int:
        return self._admitted

    # -- the use case ---------------------------------------------------------------------

    def export(self, account: Account, body: bytes, *, encoding: Encoding,
               content_encoding: str | None = None) -> IngestResult:
        """Store one OTLP trace request for ``account``.  Raises :class:`OtlpError` (bad
        input, nothing stored) or a store error; returns what was accepted."""
        data = decompress(body, content_encoding, self.max_bytes)
        decoded = decode_request(data, encoding)
        mapped = map_spans(decoded.spans)
        with self._writer:
            written = self._store_spans(account, mapped) if mapped else WrittenSpans()
        sessions = sorted(written.sessions)
        if sessions:
            self._mark(account, sessions)
        message = "; ".join(decoded.rejected[:5])
        if len(decoded.rejected) > 5:
            message += f"; and {len(decoded.rejected) - 5} more"
        return IngestResult(written.inserted, written.duplicates, len(decoded.rejected), message, sessions)

    def _store_spans(self, account: Account, mapped: list[MappedSpan]) -> WrittenSpans:
        """The one call into the registry store (kept here so it can be re-pointed)."""
        return self.spans.write(account, mapped)

    # -- conversations, in the background -------------------------------------------------

    def _mark(self, account: Account, sessions: list[str]) -> None:
        with self._pending_changed:
            while len(self._pending) + len(sessions) > MAX_PENDING_SESSIONS and self._pending:
                self._pending_changed.wait(1.0)
            for session_id in sessions:
                self._pending[(account.pk, session_id)] = account
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._rebuild_forever, name="otlp-sessions", daemon=True)
                self._worker.start()
            self._pending_changed.notify_all()

    def _rebuild_forever(self) -> None:
        while True:
            with self._pending_changed:
                while not self._pending:
                    self._pending_changed.wait()
                batch, self._pending = self._pending, {}
                self._rebuilding = True
            try:
                for (_, session_id), account in batch.items():
                    try:
                        self._rebuild_session(account, session_id)
                    except Exception:  # one conversation must not stop the others; the next span retries it
                        log.exception("rebuilding session %s failed", session_id)
            finally:
                with self._pending_changed:
                    self._rebuilding = False
                    self._pending_changed.notify_all()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until every marked session is rebuilt (for tests and one-shot imports)."""
        import time

        deadline = time.monotonic() + timeout
        with self._pending_changed:
            while self._pending or self._rebuilding:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._pending_changed.wait(left)
        return True

    def _rebuild_session(self, account: Account, session_id: str) -> None:
        payloads, agent = self.spans.session_spans(account, session_id)
        built = build_session(payloads)
        if built is None:
            return
        with self._writer:  # reading and building above need no lock; writing takes the writer's turn
            self._write_session(account, session_id, built.document, _agent_label(agent or built.agent))

    def _write_session(self, account: Account, session_id: str, document: dict[str, Any],
                       agent_label: str | None) -> None:
        sessions = self.store.sessions.of(account)
        try:  # a new conversation (the common case) is one insert
            sessions.create(document, session_id=session_id, agent=agent_label, strict=False)
            return
        except AlreadyExists:
            pass
        with contextlib.suppress(NotFound):
            sessions.delete(session_id)
        try:
            sessions.create(document, session_id=session_id, agent=agent_label, strict=False)
        except AlreadyExists:  # another writer rebuilt it meanwhile; its copy is as complete
            log.info("session %s was rebuilt concurrently", session_id)


def _agent_label(name: str | None) -> str | None:
    if not name:
        return None
    return name.replace("\x00", "\ufffd")[:200]
