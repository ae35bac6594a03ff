"""OTLP trace ingest: a request body in, spans stored in the registry's traces and the
conversations in them stored as sessions.

:class:`OtlpIngest` is the use case every front end shares (the HTTP receiver today).
Its bounded queue keeps memory flat under a sender faster than the store: at most
``queue_size`` requests are admitted at once (each body bounded by the size limit);
past that, :meth:`OtlpIngest.admit` says no and the receiver answers 429 with
``Retry-After``, which OTLP exporters honour by backing off.  Spans are written by one
writer at a time (decoding runs in parallel before it).

A request is answered once its spans and its conversations are stored (queryable), so
nothing waits in one process's memory: a request that fails is retried by its exporter,
and any server may take the retry.  Conversations grow incrementally: each session keeps
where its conversation stands (:class:`~agentfolio.otel.conversation.ConversationState`,
stored beside it), and the spans a request adds are matched against it, so only their
new messages are appended and no earlier span is read again.  The session is built
again from all of its spans only when the new spans cannot simply follow (one that
started earlier, spans stored by another request meanwhile, a session changed since, a
note to make); re-sent spans whose session is behind rebuild it too.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from agentfolio.otel.conversation import ConversationState, build_session, continue_conversation
from agentfolio.otel.decode import Encoding, decode_request, decompress
from agentfolio.otel.mapping import MappedSpan, map_spans
from agentfolio.settings import DEFAULT_OTLP_MAX_BYTES, DEFAULT_OTLP_QUEUE
from agentfolio.store import Account, Store
from agentfolio.store.errors import AlreadyExists, NotFound, VersionConflict
from agentfolio.store.otel_spans import ConversationRecord, OtelSpans, StoreUnavailable, WrittenSpans

__all__ = ["RETRY_AFTER_SECONDS", "IngestResult", "OtlpIngest", "StoreUnavailable"]

log = logging.getLogger("agentfolio.otlp")

#: Seconds an exporter is asked to wait when the queue is full.
RETRY_AFTER_SECONDS = 1
#: Attempts at extending one conversation when another writer changed its session meanwhile.
SESSION_ATTEMPTS = 3


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
            llm = {m.session_id for m in mapped if m.is_llm}
            for session_id, payloads in written.added.items():
                self._extend_session(account, session_id, payloads, has_messages=session_id in llm)
            for session_id in sorted(written.resent - written.added.keys()):
                self._extend_session(account, session_id, [], has_messages=session_id in llm)
        sessions = sorted(written.sessions)
        message = "; ".join(decoded.rejected[:5])
        if len(decoded.rejected) > 5:
            message += f"; and {len(decoded.rejected) - 5} more"
        return IngestResult(written.inserted, written.duplicates, len(decoded.rejected), message, sessions)

    def _store_spans(self, account: Account, mapped: list[MappedSpan]) -> WrittenSpans:
        """The one call into the registry store (kept here so it can be re-pointed)."""
        return self.spans.write(account, mapped)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Conversations are stored before :meth:`export` answers: nothing is ever pending."""
        return True

    # -- conversations --------------------------------------------------------------------

    def _extend_session(self, account: Account, session_id: str, added: list[dict[str, Any]], *,
                        has_messages: bool) -> None:
        """Bring the session of ``session_id`` up to date with the spans just stored in it."""
        for _ in range(SESSION_ATTEMPTS):
            record, total = self.spans.conversation(account, session_id)
            if record is None:
                if has_messages:
                    self._build_session(account, session_id, total)
                return
            if record.spans + len(added) != total:  # stored elsewhere meanwhile, or a write was lost
                self._build_session(account, session_id, total)
                return
            if not added:
                return
            try:
                if self._continue_session(account, session_id, record, added, total):
                    return
            except (VersionConflict, NotFound):
                continue  # another writer changed the session: look again
            self._build_session(account, session_id, total)
            return
        self._build_session(account, session_id, total)

    def _continue_session(self, account: Account, session_id: str, record: ConversationRecord,
                          added: list[dict[str, Any]], total: int) -> bool:
        """Append what ``added`` says after the stored state; ``False`` when it cannot follow it."""
        if self.store.sessions.info(account, session_id).version != record.session_version:
            return False
        payloads = sorted(added, key=lambda p: (p.get("start_time_unix_nano") or 0, p.get("end_time_unix_nano") or 0))
        continued = continue_conversation(ConversationState.from_json(record.state), payloads)
        if continued is None:
            return False
        version = record.session_version
        if continued.entries:
            version = self.store.sessions.append_many(account, session_id, continued.entries,
                                                      expected_version=version, strict=False).session.version
        self.spans.keep_conversation(account, session_id, ConversationRecord(continued.state.to_json(), version,
                                                                             total))
        return True

    def _build_session(self, account: Account, session_id: str, total: int) -> None:
        """The session built from all of its spans (``total`` of them), replacing what was stored."""
        payloads, agent = self.spans.session_spans(account, session_id)
        built = build_session(payloads)
        if built is None or built.state is None:
            return
        info = self._write_session(account, session_id, built.document, _agent_label(agent or built.agent))
        if info is not None:
            self.spans.keep_conversation(account, session_id, ConversationRecord(
                built.state.to_json(), info, total))

    def _write_session(self, account: Account, session_id: str, document: dict[str, Any],
                       agent_label: str | None) -> int | None:
        """Store the document as the session; its version (``None``: another writer won)."""
        sessions = self.store.sessions
        try:  # a new conversation (the common case) is one insert
            return sessions.create(account, document, session_id=session_id, agent=agent_label,
                                   strict=False).session.version
        except AlreadyExists:
            pass
        with contextlib.suppress(NotFound):
            sessions.delete(account, session_id)
        try:
            return sessions.create(account, document, session_id=session_id, agent=agent_label,
                                   strict=False).session.version
        except AlreadyExists:  # another writer rebuilt it meanwhile; its copy is as complete
            log.info("session %s was rebuilt concurrently", session_id)
            return None


def _agent_label(name: str | None) -> str | None:
    if not name:
        return None
    return name.replace("\x00", "\ufffd")[:200]
