"""OTLP trace ingest: a request body in, spans stored in the registry's traces, and the
conversations in them queued for their sessions.

:class:`OtlpIngest` is the use case every front end shares (the HTTP receiver today).
A request is answered once its spans are stored, and queryable, together with the note
of the sessions whose conversations they extend (one transaction: nothing acknowledged
is lost); the conversations follow from that durable queue, drained by
:class:`~agentfolio.app.otlp_conversations.ConversationWorker` in any server process.

Memory stays flat under a sender faster than the store, two ways:

* at most ``queue_size`` requests are admitted at once (each body bounded by the size
  limit); past that :meth:`OtlpIngest.admit` says no and the receiver answers 429 with
  ``Retry-After``, which OTLP exporters honour by backing off;
* when the queued conversation work reaches ``backlog`` spans, :meth:`OtlpIngest.saturated`
  says so and the receiver answers 503 with ``Retry-After`` until the workers catch up:
  the queue is on disk, and it stops growing there too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agentfolio.app.admission import RETRY_AFTER_SECONDS, AdmissionGate
from agentfolio.app.otlp_conversations import ConversationWorker
from agentfolio.otel.decode import Encoding, decode_request, decompress
from agentfolio.otel.mapping import MappedSpan, map_spans
from agentfolio.settings import DEFAULT_OTLP_BACKLOG, DEFAULT_OTLP_MAX_BYTES, DEFAULT_OTLP_QUEUE
from agentfolio.store import Account, Store
from agentfolio.store.errors import StoreUnavailable
from agentfolio.store.otel_spans import OtelSpans, WrittenSpans

__all__ = ["RETRY_AFTER_SECONDS", "IngestResult", "OtlpIngest", "StoreUnavailable"]

#: Seconds the backlog's depth, read from the database, is taken as still true.
BACKLOG_CHECK_SECONDS = 0.5


@dataclass(slots=True)
class IngestResult:
    accepted: int
    duplicates: int
    rejected: int
    #: Why spans were rejected (partial success), one line each, clipped.
    message: str = ""
    #: The sessions of the LLM spans stored (their conversations follow from the queue).
    sessions: list[str] = field(default_factory=list)


class OtlpIngest:
    def __init__(self, store: Store, *, max_bytes: int = DEFAULT_OTLP_MAX_BYTES,
                 queue_size: int = DEFAULT_OTLP_QUEUE, backlog: int = DEFAULT_OTLP_BACKLOG,
                 worker: ConversationWorker | None = None) -> None:
        self.store = store
        self.spans = OtelSpans(store.registry)
        self.max_bytes = max_bytes
        self.queue_size = queue_size
        self.backlog_limit = backlog
        #: Seconds the backlog's depth, read from the database, is taken as still true.
        self.backlog_check_seconds = BACKLOG_CHECK_SECONDS
        #: The conversation worker this process runs (woken when this process queues work).
        self.worker = worker if worker is not None else ConversationWorker(store)
        #: Requests decoded or written at once (past it: 429).
        self.gate = AdmissionGate(queue_size)
        # The worker's rounds wait for a pause in this receiver's requests, unless the backlog presses (see defer_to).
        self.worker.defer_to(self.gate, self.pressing)
        self._backlog_seen = (0.0, 0)

    # -- admission ------------------------------------------------------------------------

    def admit(self) -> bool:
        """Take a place in the queue; ``False`` when it is full (answer 429, retry later)."""
        return self.gate.admit()

    def release(self) -> None:
        self.gate.release()

    @property
    def admitted(self) -> int:
        return self.gate.admitted

    def saturated(self) -> bool:
        """Whether the queued conversation work has reached the backlog limit (answer 503,
        retry later); read from the database at most every ``backlog_check_seconds``."""
        return self._backlog_spans() >= self.backlog_limit

    def pressing(self) -> bool:
        """Whether the queued conversation work has reached half the backlog limit: from
        there the worker takes turns with a burst of requests instead of waiting for it
        to pause (see :meth:`ConversationWorker.defer_to`)."""
        return 2 * self._backlog_spans() >= self.backlog_limit

    def _backlog_spans(self) -> int:
        seen_at, spans = self._backlog_seen
        now = time.monotonic()
        if now - seen_at >= self.backlog_check_seconds:
            try:
                spans = self.worker.backlog().spans
            except StoreUnavailable:  # the database is away: the write says so (503) in its turn
                spans = 0
            self._backlog_seen = (now, spans)
        return spans

    # -- the use case ---------------------------------------------------------------------

    def export(self, account: Account, body: bytes, *, encoding: Encoding,
               content_encoding: str | None = None) -> IngestResult:
        """Store one OTLP trace request for ``account``.  Raises :class:`OtlpError` (bad
        input, nothing stored) or a store error; returns what was accepted."""
        data = decompress(body, content_encoding, self.max_bytes)
        decoded = decode_request(data, encoding)
        mapped = map_spans(decoded.spans)
        written = self._store_spans(account, mapped) if mapped else WrittenSpans()
        if written.queued:
            self.worker.wake()
        if written.schema_versions or written.invalid:
            # Span types seen for the first time extend the agent's schema version, and
            # spans may break the schemas a user declared: their alerts (a critical risk
            # combination, a schema-breaking span) are raised as for any other.
            from agentfolio.app.registry import Principal, RegistryService

            RegistryService(self.store).stored_elsewhere(Principal(account), written.schema_versions,
                                                         written.invalid)
        message = "; ".join(decoded.rejected[:5])
        if len(decoded.rejected) > 5:
            message += f"; and {len(decoded.rejected) - 5} more"
        return IngestResult(written.inserted, written.duplicates, len(decoded.rejected), message,
                            sorted(written.sessions))

    def _store_spans(self, account: Account, mapped: list[MappedSpan]) -> WrittenSpans:
        """The one call into the registry store (kept here so it can be re-pointed)."""
        return self.spans.write(account, mapped)

    # -- the conversations that follow ----------------------------------------------------

    def pending(self, account: Account) -> int:
        """How many of the account's sessions wait for spans to be taken into their conversation."""
        return self.worker.pending(account)

    def drain(self) -> int:
        """Bring every queued conversation up to date in this thread (without a running
        worker: the CLI, the demo, tests); the sessions done."""
        return self.worker.drain()
