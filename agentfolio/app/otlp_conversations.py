"""Conversations from OTel spans, brought up to date after the spans' request is answered.

The spans of a request are stored with a note of the sessions they belong to, in the
durable queue of :mod:`agentfolio.store.otel_queue`.  :class:`ConversationWorker` drains it:
every server process runs one (:meth:`ConversationWorker.start`), and any number of them
share one database; each session's work is done by one of them, once.  One round
(:meth:`ConversationWorker.run_once`):

1. claim up to ``batch`` sessions with work (a lease, so a stopped worker's claims
   return to the queue when it ends);
2. read, from one snapshot, each session's waiting spans, where its conversation stands
   (:class:`~agentfolio.otel.conversation.ConversationState`, kept beside the session),
   how many spans the session has and the session's version;
3. work out each session's change without holding any lock: the entries the waiting
   spans add after the stored state (the usual case: only the new messages, converted
   once, whatever the conversation's length), or the whole session built again from all
   of its spans when they cannot simply follow it (one starting before those taken, a
   span count that does not add up, a session changed by someone else, a note to make);
4. write every session of the round, their states and the removal of the work in one
   transaction, which first checks the claims are still this worker's.

A burst of spans of one conversation is one claim and one append.  Readers see the
session once its work is done; :meth:`ConversationWorker.pending` says how much is left
(the tests wait on it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentfolio.app.admission import AdmissionGate
from agentfolio.store import Account, Store
from agentfolio.store.otel_queue import MAX_ATTEMPTS, Backlog, Claim, ConversationQueue, WaitingSpan
from agentfolio.store.otel_spans import ConversationReads, ConversationRecord, OtelRows, OtelSpans
from agentfolio.store.scope import AccountScope
from agentfolio.store.sessions import WrittenSession

__all__ = ["ConversationWorker"]

log = logging.getLogger("agentfolio.otlp")

#: Sessions claimed in one round.
DEFAULT_BATCH = 64
#: Seconds an idle worker waits before looking at the queue again (work queued by
#: another process; this process's own requests wake it at once).
POLL_SECONDS = 1.0
#: Seconds without a request in this process's receiver that make a pause (see
#: :meth:`ConversationWorker.defer_to`).
QUIET_SECONDS = 0.05
#: Once the backlog presses, longest a round waits for a pause, at the least ...
DEFER_SECONDS = 1.0
#: ... and as a multiple of the round before: under requests without pause, rounds then
#: take about a fifth of the time.
DEFER_PER_ROUND_SECOND = 4.0


def _always() -> bool:
    return True


@dataclass(slots=True)
class _Plan:
    """What one claim's round writes: a session built again (``built``), entries appended
    (``entries``), or only its state; and the waiting spans it takes in."""

    claim: Claim
    taken: list[str]
    total: int
    state: bytes | None = None
    built: WrittenSession | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    models: list[Any] = field(default_factory=list)
    expected_version: int | None = None


class ConversationWorker:
    """Drains the conversation queue of one store (see the module docstring)."""

    def __init__(self, store: Store, *, batch: int = DEFAULT_BATCH, lease_seconds: float | None = None) -> None:
        self.store = store
        self.batch = batch
        self.queue = ConversationQueue(store.engine) if lease_seconds is None else \
            ConversationQueue(store.engine, lease_seconds=lease_seconds)
        self.spans = OtelSpans(store.registry)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._receiver: AdmissionGate | None = None
        self._pressing: Callable[[], bool] = _always
        self.defer_seconds = DEFER_SECONDS
        self.quiet_seconds = QUIET_SECONDS

    # -- how much is left -----------------------------------------------------------------

    def pending(self, account: Account) -> int:
        """How many of the account's sessions have spans not yet in their conversation."""
        return self.queue.pending(account)

    def backlog(self) -> Backlog:
        return self.queue.backlog()

    # -- running --------------------------------------------------------------------------

    def wake(self) -> None:
        """Work was queued in this process: look now, not at the next poll."""
        self._wake.set()

    def defer_to(self, receiver: AdmissionGate, pressing: Callable[[], bool] = _always) -> None:
        """Start each round once ``receiver`` (the gate of this process's span receiver)
        has had no request in hand for :attr:`quiet_seconds`; while ``pressing()`` (the
        backlog is well on its way to its limit), at the latest after
        :attr:`defer_seconds` or :data:`DEFER_PER_ROUND_SECOND` times as long as the
        round before took, whichever is longer.

        A request has a client waiting for its answer; the conversations have nobody
        waiting, and building them costs several times what receiving the same spans
        does.  Run beside a burst, rounds took much of the process's one interpreter lock
        and the spans became queryable at a fraction of the rate; so rounds wait for a
        pause in the requests, and take nothing from a burst while the backlog is short.
        Under requests without pause a pressing backlog still gets rounds, about a fifth
        of the time, and its limit bounds what waits meanwhile: past it the receiver
        answers 503, the requests pause and the rounds catch up."""
        self._receiver = receiver
        self._pressing = pressing

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="agentfolio-conversations", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the round under way (whose transaction commits or rolls back whole)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        self._wake.set()
        thread.join(timeout)

    def _run(self) -> None:
        last_round = 0.0
        while not self._stopping.is_set():
            self._wait_for_pause(max(self.defer_seconds, DEFER_PER_ROUND_SECOND * last_round))
            began = time.monotonic()
            try:
                done = self.run_once() if self.queue.claimable() else 0
            except Exception:  # the database is away, say: the work stays queued; look again later
                log.exception("bringing OTel conversations up to date failed")
                done = 0
            last_round = time.monotonic() - began if done else 0.0
            if not done:
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()

    def _wait_for_pause(self, longest: float) -> None:
        """Wait for a pause in the receiver's requests; once the backlog presses, at most
        ``longest`` seconds from the start (looking at :meth:`stop` every quarter second)."""
        if self._receiver is None:
            return
        deadline = time.monotonic() + longest
        while not self._stopping.is_set():
            if self._receiver.wait_quiet(self.quiet_seconds, 0.25):
                return
            if time.monotonic() >= deadline and self._pressing():
                return

    def drain(self) -> int:
        """Run rounds in this thread until no work can be claimed; the sessions done."""
        done = 0
        while claimed := self.run_once():
            done += claimed
        return done

    # -- one round ------------------------------------------------------------------------

    def run_once(self) -> int:
        """Claim, work out and write one batch of sessions; how many were claimed."""
        token, claims = self.queue.claim(self.batch)
        if not claims:
            return 0
        plans: list[_Plan] = []
        by_account: dict[int, list[Claim]] = defaultdict(list)
        for claim in claims:
            if claim.attempts > MAX_ATTEMPTS:
                log.error("setting aside the conversation work of session %s after %d attempts",
                          claim.session_id, claim.attempts - 1)
                self.queue.set_aside(token, claim)
                continue
            by_account[claim.account.pk].append(claim)
        for group in by_account.values():
            plans.extend(self._plan_account(group))
        if plans:
            try:
                self._finish(token, plans)
            except Exception:
                if len(plans) == 1:
                    raise
                log.warning("a round of %d conversations failed; finishing them one at a time", len(plans))
                for plan in plans:
                    try:
                        self._finish(token, [plan])
                    except Exception:
                        log.exception("bringing session %s up to date failed", plan.claim.session_id)
                        self.queue.release(token, [plan.claim], retry=True)
        return len(claims)

    def _plan_account(self, claims: list[Claim]) -> list[_Plan]:
        account = claims[0].account
        ids = [claim.session_id for claim in claims]
        plans = []
        with self.spans.reading(account) as reads:
            waiting = reads.queue.waiting(ids, limit=self.queue.max_spans)
            counts = reads.queue.counts(ids)
            records = reads.rows.conversations(ids)
            totals = reads.rows.session_span_counts(ids)
            versions = self.store.sessions.of(account).versions(reads.connection, ids)
            for claim in claims:
                sid = claim.session_id
                try:
                    plans.append(self._plan(reads, claim, waiting.get(sid, []), counts.get(sid, 0), records.get(sid),
                                            totals.get(sid, 0), versions.get(sid)))
                except Exception:
                    log.exception("working out the conversation of session %s failed", sid)
        return plans

    def _plan(self, reads: ConversationReads, claim: Claim, waiting: list[WaitingSpan], pending: int,
              record: ConversationRecord | None, total: int, version: int | None) -> _Plan:
        from agentfolio.otel.conversation import ConversationState, continue_conversation

        taken = [span.span_id for span in waiting]
        present = sorted((span for span in waiting if span.payload is not None), key=_start_of)
        added = [span.payload for span in present if span.payload is not None]
        agent = present[0].agent if present else None
        plan = _Plan(claim, taken, total)
        if record is None:
            if not any(span.llm for span in present):
                return plan  # no conversation here yet
            return self._build(reads, plan, added if total == len(added) else None, agent)
        if record.spans + pending != total or version != record.session_version:
            # Spans taken in elsewhere, or lost, or the session changed by someone else.
            return self._build(reads, plan, None, agent)
        if not added:
            return plan
        continued = continue_conversation(ConversationState.from_json(record.state), added)
        if continued is None:
            return self._build(reads, plan, None, agent)
        plan.total = record.spans + len(taken)
        plan.state = continued.state.to_json()
        plan.expected_version = record.session_version
        plan.entries, plan.models = continued.entries, continued.models
        return plan

    def _build(self, reads: ConversationReads, plan: _Plan, payloads: list[dict[str, Any]] | None,
               agent: str | None) -> _Plan:
        """The session built from all of its spans (those just read, when they are all of them)."""
        from agentfolio.otel.conversation import build_session

        if payloads is None:
            payloads, agent = reads.session_spans(plan.claim.session_id)
            plan.taken = reads.queue.waiting_ids(plan.claim.session_id)
        built = build_session(payloads)
        if built is None or built.state is None or built.written is None:
            return plan
        plan.state = built.state.to_json()
        plan.built = WrittenSession(plan.claim.session_id, built.document, built.written,
                                    _agent_label(agent or built.agent))
        return plan

    def _finish(self, token: str, plans: Sequence[_Plan]) -> None:
        with self.queue.finishing(token, [plan.claim for plan in plans]) as finishing:
            held = {(claim.account.pk, claim.session_id) for claim in finishing.held}
            by_account: dict[int, list[_Plan]] = defaultdict(list)
            for plan in plans:
                if (plan.claim.account.pk, plan.claim.session_id) in held:
                    by_account[plan.claim.account.pk].append(plan)
            for group in by_account.values():
                account = group[0].claim.account
                sessions = self.store.sessions.of(account)
                rebuilt = [plan.built for plan in group if plan.built is not None]
                versions = sessions.replace_written(finishing.connection, rebuilt)
                records: dict[str, ConversationRecord] = {}
                for plan in group:
                    sid = plan.claim.session_id
                    version: int | None = versions.get(sid)
                    if plan.built is None and plan.expected_version is not None:
                        version = plan.expected_version
                        if plan.entries:
                            version = sessions.append_written(finishing.connection, sid, plan.entries, plan.models,
                                                              expected_version=plan.expected_version)
                        if version is None:  # changed since it was read: built again next round
                            finishing.retry(plan.claim)
                            continue
                    if plan.state is not None and version is not None:
                        records[sid] = ConversationRecord(plan.state, version, plan.total)
                    finishing.done(plan.claim, plan.taken)
                if records:
                    OtelRows(finishing.connection, AccountScope(account.pk)).keep_conversations(records)


def _start_of(span: WaitingSpan) -> tuple[int, int]:
    payload = span.payload or {}
    return int(payload.get("start_time_unix_nano") or 0), int(payload.get("end_time_unix_nano") or 0)


def _agent_label(name: str | None) -> str | None:
    if not name:
        return None
    return name.replace("\x00", "\ufffd")[:200]
