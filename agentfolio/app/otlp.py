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
            self._conversations(account, written, {m.session_id for m in mapped if m.is_llm})
            if written.schema_versions or written.invalid:
                # Span types seen for the first time extend the agent's schema version, and
                # spans may break the schemas a user declared: their alerts (a critical risk
                # combination, a schema-breaking span) are raised as for any other.
                from agentfolio.app.registry import Principal, RegistryService

                RegistryService(self.store).stored_elsewhere(Principal(account), written.schema_versions,
                                                             written.invalid)
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

    def _conversations(self, account: Account, written: WrittenSpans, with_messages: set[str]) -> None:
        """Bring the sessions of the spans just stored (and of spans sent again) up to date."""
        touched = sorted(written.added.keys() | written.resent)
        if not touched:
            return
        records, totals = self.spans.conversations(account, touched)
        kept: dict[str, ConversationRecord] = {}
        for session_id in touched:
            agent = written.agents.get(session_id, (0, None))[1]
            record = self._extend_session(account, session_id, written.added.get(session_id, []),
                                          records.get(session_id), totals.get(session_id, 0),
                                          has_messages=session_id in with_messages, agent=agent)
            if record is not None:
                kept[session_id] = record
        if kept:
            self.spans.keep_conversations(account, kept)

    def _extend_session(self, account: Account, session_id: str, added: list[dict[str, Any]],
                        record: ConversationRecord | None, total: int, *, has_messages: bool,
                        agent: str | None) -> ConversationRecord | None:
        """The session brought up to date with the spans just stored in it (``added``);
        where its conversation stands now (``None``: unchanged, or no conversation)."""
        for attempt in range(SESSION_ATTEMPTS):
            if attempt:  # another writer changed the session: look again
                records, totals = self.spans.conversations(account, [session_id])
                record, total = records.get(session_id), totals.get(session_id, 0)
            if record is None:
                return self._build_session(account, session_id, total, added, agent) if has_messages else None
            if record.spans + len(added) != total:  # stored elsewhere meanwhile, or a write was lost
                return self._build_session(account, session_id, total, added, agent)
            if not added:
                return None
            try:
                continued = self._continue_session(account, session_id, record, added, total)
            except (VersionConflict, NotFound):
                continue
            return continued or self._build_session(account, session_id, total, added, agent)
        return self._build_session(account, session_id, total, added, agent)

    def _continue_session(self, account: Account, session_id: str, record: ConversationRecord,
                          added: list[dict[str, Any]], total: int) -> ConversationRecord | None:
        """Append what ``added`` says after the stored state; ``None`` when it cannot follow it."""
        if self.store.sessions.of(account).info(session_id).version != record.session_version:
            return None
        continued = continue_conversation(ConversationState.from_json(record.state), _in_start_order(added))
        if continued is None:
            return None
        version = record.session_version
        if continued.entries:
            appended = self.store.sessions.of(account).append_many(session_id, continued.entries,
                                                                   expected_version=version, strict=False)
            version = appended.session.version
        return ConversationRecord(continued.state.to_json(), version, total)

    def _build_session(self, account: Account, session_id: str, total: int, added: list[dict[str, Any]],
                       agent: str | None) -> ConversationRecord | None:
        """The session built from all of its ``total`` spans, replacing what was stored
        (the spans just stored, when they are all of them, need not be read again)."""
        if total and len(added) == total:
            payloads = _in_start_order(added)
        else:
            payloads, agent = self.spans.session_spans(account, session_id)
        built = build_session(payloads)
        if built is None or built.state is None:
            return None
        version = self._write_session(account, session_id, built.document, _agent_label(agent or built.agent))
        return None if version is None else ConversationRecord(built.state.to_json(), version, total)

    def _write_session(self, account: Account, session_id: str, document: dict[str, Any],
                       agent_label: str | None) -> int | None:
        """Store the document as the session; its version (``None``: another writer won)."""
        sessions = self.store.sessions.of(account)
        try:  # a new conversation (the common case) is one insert
            return sessions.create(document, session_id=session_id, agent=agent_label, strict=False).session.version
        except AlreadyExists:
            pass
        with contextlib.suppress(NotFound):
            sessions.delete(session_id)
        try:
            return sessions.create(document, session_id=session_id, agent=agent_label, strict=False).session.version
        except AlreadyExists:  # another writer rebuilt it meanwhile; its copy is as complete
            log.info("session %s was rebuilt concurrently", session_id)
            return None


def _in_start_order(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Stored spans are read in this order too (nanoseconds, then the end).
    return sorted(payloads, key=lambda p: (p.get("start_time_unix_nano") or 0, p.get("end_time_unix_nano") or 0))


def _agent_label(name: str | None) -> str | None:
    if not name:
        return None
    return name.replace("\x00", "\ufffd")[:200]
