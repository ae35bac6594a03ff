"""The durable queue of conversation work behind OTLP ingest.

A request's spans are stored, and queryable, in one transaction, which also records here
which sessions have spans their conversation has not taken in yet (:meth:`QueueRows.enqueue`).
The conversations are brought up to date after the answer by a worker in any server
process, with nothing that matters kept in its memory:

* :meth:`ConversationQueue.claim` takes up to ``limit`` sessions whose lease is over (new
  work has none), oldest first, and leases them to one claim token; on PostgreSQL
  ``FOR UPDATE SKIP LOCKED`` lets several processes claim at once without waiting for
  or taking each other's rows, on SQLite the write lock serializes claims;
* the worker reads each session's waiting spans (:meth:`ConversationQueue.waiting`),
  works out what they add, then writes the sessions inside
  :meth:`ConversationQueue.finishing`: one transaction that first locks the claimed rows
  still held by its token (a lease that ran out and was claimed again is skipped: its
  new holder does the work), then deletes exactly the waiting spans taken in, and each
  session's row once no span waits for it;
* so every span is taken in once: the session write and the removal of its work commit
  together or not at all.  A worker killed at any point leaves the work, leased, until
  the lease ends; then any worker claims it again.

A burst of spans of one session is one row here and one append.  The depth of the queue
(:meth:`ConversationQueue.backlog`) is what the receiver refuses new work on, so the
queue grows on disk, never in memory, and only as far as the limit.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from agentfolio.registry.sensitive import load_masked
from agentfolio.store.accounts import Account
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.errors import StoreUnavailable
from agentfolio.store.multirow import chunks
from agentfolio.store.registry.base import Rows
from agentfolio.store.registry.bulk import execute_many, insert_many
from agentfolio.store.registry_tables import otel_work as t_work
from agentfolio.store.registry_tables import otel_work_spans as t_waiting
from agentfolio.store.registry_tables import registry_agents as t_agents
from agentfolio.store.registry_tables import registry_spans as t_spans
from agentfolio.store.scope import AccountScope
from agentfolio.store.tables import accounts as t_accounts

__all__ = ["Backlog", "Claim", "ConversationQueue", "Finishing", "QueueRows", "WaitingSpan"]

#: Seconds a claim is held before another worker may take the work (a worker that stopped).
DEFAULT_LEASE_SECONDS = 30.0
#: Claims of one session that ended without finishing before its work is set aside.
MAX_ATTEMPTS = 5
#: Most waiting spans read for one claim (the rest wait for the next).
MAX_SPANS_PER_CLAIM = 5_000
#: Keys matched in one ``IN`` of tuples when a round's work is closed.
_IN_CHUNK = 300


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass(frozen=True, slots=True)
class Claim:
    account: Account
    session_id: str
    #: How many times this work has been claimed (this claim included).
    attempts: int


@dataclass(slots=True)
class WaitingSpan:
    span_id: str
    #: The stored OTel payload (``None``: the span was deleted since).
    payload: dict[str, Any] | None
    #: The agent (external identifier) the span is filed under.
    agent: str | None
    llm: bool


@dataclass(frozen=True, slots=True)
class Backlog:
    sessions: int
    spans: int


class QueueRows(Rows):
    """The queue's statements for one account, in the caller's transaction."""

    def enqueue(self, spans: Mapping[str, Sequence[tuple[str, bool]]]) -> None:
        """Record that each session has these stored spans (row id, is an LLM span) to take in."""
        if not spans:
            return
        insert_many(self.conn, t_waiting, self.scope.rows(
            {"session_id": session_id, "span_id": span_id, "llm": llm}
            for session_id, members in spans.items() for span_id, llm in members))
        stamp = now_us()
        rows = [{"account_pk": self.scope.account_pk, "session_id": session_id, "enqueued_at": stamp,
                 "generation": 1, "lease_until": 0, "claim": None, "attempts": 0} for session_id in sorted(spans)]
        # The rows are locked in one order by everybody (sorted ids), so two requests and a
        # finishing worker never wait for each other in a circle.
        execute_many(self.conn, _upsert(self.conn.dialect.name), rows)

    def waiting(self, session_ids: Sequence[str], limit: int) -> dict[str, list[WaitingSpan]]:
        """The spans each of these sessions has to take in, in start order (at most
        ``limit`` in all: the sessions after the limit get none this time)."""
        found: dict[str, list[WaitingSpan]] = defaultdict(list)
        joined = t_waiting.outerjoin(t_spans, sa.and_(t_spans.c.id == t_waiting.c.span_id,
                                                      t_spans.c.account_pk == t_waiting.c.account_pk)) \
            .outerjoin(t_agents, t_agents.c.id == t_spans.c.agent_id)
        rows = self.conn.execute(
            sa.select(t_waiting.c.session_id, t_waiting.c.span_id, t_waiting.c.llm, t_spans.c.payload,
                      t_agents.c.external_identifier)
            .select_from(joined)
            .where(self.scope.owns(t_waiting), t_waiting.c.session_id.in_(list(session_ids)))
            .order_by(t_waiting.c.session_id, t_spans.c.started_at, t_waiting.c.span_id).limit(limit))
        for row in rows:
            payload = None if row.payload is None else load_masked(row.payload)
            found[row.session_id].append(WaitingSpan(row.span_id, payload, row.external_identifier, bool(row.llm)))
        return found


    def counts(self, session_ids: Sequence[str]) -> dict[str, int]:
        """How many spans each of these sessions has waiting."""
        return dict(self.conn.execute(self.scope.select(t_waiting, t_waiting.c.session_id, sa.func.count())
                                      .where(t_waiting.c.session_id.in_(list(session_ids)))
                                      .group_by(t_waiting.c.session_id)).all())

    def waiting_ids(self, session_id: str) -> list[str]:
        """Every span the session has waiting."""
        return list(self.conn.execute(self.scope.select(t_waiting, t_waiting.c.span_id)
                                      .where(t_waiting.c.session_id == session_id)).scalars())


@functools.cache  # one statement per dialect: execute_many compiles it once
def _upsert(dialect: str) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    statement = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(t_work)
    # Taking the row's lock (not DO NOTHING) is what makes a request wait for a worker
    # finishing the same session: the worker's "no span waits any more" then cannot miss
    # this request's spans (see ConversationQueue.finishing).
    return statement.on_conflict_do_update(index_elements=[t_work.c.account_pk, t_work.c.session_id],
                                           set_={"generation": t_work.c.generation + 1})


@dataclass(slots=True)
class Finishing:
    """The transaction finishing a claim: write the sessions through :attr:`connection`,
    then say which claims are :meth:`done` (with the spans they took in) and which to
    :meth:`retry` later; what is said of neither is released as it is."""

    connection: Connection
    #: The claims this worker still holds (write only these).
    held: list[Claim]
    _done: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    _retry: set[tuple[int, str]] = field(default_factory=set)

    def done(self, claim: Claim, span_ids: Sequence[str]) -> None:
        self._done[(claim.account.pk, claim.session_id)] = list(span_ids)

    def retry(self, claim: Claim) -> None:
        self._retry.add((claim.account.pk, claim.session_id))


class ConversationQueue:
    """The queue as a whole: claims and finishes name work of any account (the worker
    serves all of them), and each claim carries the account its reads are scoped to."""

    def __init__(self, engine: Engine, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                 max_spans: int = MAX_SPANS_PER_CLAIM, clock: Callable[[], int] = now_us) -> None:
        self.engine = engine
        #: Microseconds now, as leases are read and written.
        self.clock = clock
        self.lease_us = int(lease_seconds * 1_000_000)
        #: Most waiting spans one round reads (the rest wait for the next).
        self.max_spans = max_spans

    def backlog(self) -> Backlog:
        """How many sessions have work waiting, and how many spans they have to take in."""
        try:
            with read_transaction(self.engine) as connection:
                sessions = connection.execute(sa.select(sa.func.count()).select_from(t_work)).scalar_one()
                spans = connection.execute(sa.select(sa.func.count()).select_from(t_waiting)).scalar_one()
        except OperationalError as error:
            raise StoreUnavailable(f"the database cannot be read now ({type(error.orig).__name__})") from None
        return Backlog(int(sessions), int(spans))

    def pending(self, account: Account) -> int:
        """How many of the account's sessions have work waiting (claimed or not)."""
        scope = AccountScope(account.pk)
        with read_transaction(self.engine) as connection:
            return int(connection.execute(scope.count(t_work)).scalar_one())

    def claimable(self) -> bool:
        """Whether any work waits with no live claim (a read: cheap to poll)."""
        with read_transaction(self.engine) as connection:
            return connection.execute(sa.select(t_work.c.session_id).where(t_work.c.lease_until <= self.clock())
                                      .limit(1)).first() is not None

    def claim(self, limit: int) -> tuple[str, list[Claim]]:
        """Lease up to ``limit`` sessions' work, oldest first, to a new claim token."""
        token = secrets.token_hex(16)
        stamp = self.clock()
        candidates = sa.select(t_work.c.account_pk, t_work.c.session_id).where(t_work.c.lease_until <= stamp) \
            .order_by(t_work.c.enqueued_at).limit(limit)
        with write_transaction(self.engine) as connection:
            if connection.dialect.name == "postgresql":
                candidates = candidates.with_for_update(skip_locked=True)
            rows = connection.execute(
                sa.update(t_work).where(sa.tuple_(t_work.c.account_pk, t_work.c.session_id).in_(candidates))
                .values(claim=token, lease_until=stamp + self.lease_us, attempts=t_work.c.attempts + 1)
                .returning(t_work.c.account_pk, t_work.c.session_id, t_work.c.attempts)).all()
            if not rows:
                return token, []
            names = dict(connection.execute(sa.select(t_accounts.c.pk, t_accounts.c.name)
                                            .where(t_accounts.c.pk.in_({row.account_pk for row in rows}))).all())
        claims = [Claim(Account(row.account_pk, names.get(row.account_pk, "")), row.session_id, row.attempts)
                  for row in rows]
        claims.sort(key=lambda claim: (claim.account.pk, claim.session_id))
        return token, claims

    @contextmanager
    def finishing(self, token: str, claims: Sequence[Claim]) -> Iterator[Finishing]:
        """One transaction: the claims still held by ``token``, locked (in one order), for
        the caller to write their sessions; then the work they did removed, the rest released."""
        with write_transaction(self.engine) as connection:
            keys = sorted({(claim.account.pk, claim.session_id) for claim in claims})
            chosen = sa.select(t_work.c.account_pk, t_work.c.session_id).where(
                t_work.c.claim == token, sa.tuple_(t_work.c.account_pk, t_work.c.session_id).in_(keys)) \
                .order_by(t_work.c.account_pk, t_work.c.session_id)
            if connection.dialect.name == "postgresql":
                chosen = chosen.with_for_update()
            held_keys = {(row.account_pk, row.session_id) for row in connection.execute(chosen)}
            finishing = Finishing(connection, [claim for claim in claims
                                               if (claim.account.pk, claim.session_id) in held_keys])
            yield finishing
            _close(connection, token, finishing, self.lease_us, self.clock())

    def release(self, token: str, claims: Sequence[Claim], *, retry: bool) -> None:
        """Give claims back unfinished (``retry``: after a pause that grows with each attempt)."""
        with self.finishing(token, claims) as finishing:
            if retry:
                for claim in finishing.held:
                    finishing.retry(claim)

    def set_aside(self, token: str, claim: Claim) -> None:
        """Drop the work of a claim that failed too often (its spans stay stored; a later
        span of the session builds its conversation again from all of them)."""
        with write_transaction(self.engine) as connection:
            held = connection.execute(sa.delete(t_work).where(
                t_work.c.account_pk == claim.account.pk, t_work.c.session_id == claim.session_id,
                t_work.c.claim == token)).rowcount
            if held:
                connection.execute(sa.delete(t_waiting).where(t_waiting.c.account_pk == claim.account.pk,
                                                              t_waiting.c.session_id == claim.session_id))


def _close(connection: Connection, token: str, finishing: Finishing, lease_us: int, stamp: int) -> None:
    """Remove the work done and release the rest, a few statements for the whole round."""
    held = {(claim.account.pk, claim.session_id) for claim in finishing.held}
    finished = sorted(set(finishing._done) & held)
    taken = [(account_pk, session_id, span_id) for account_pk, session_id in finished
             for span_id in finishing._done[(account_pk, session_id)]]
    for chunk in chunks(taken, _IN_CHUNK):
        connection.execute(sa.delete(t_waiting).where(
            sa.tuple_(t_waiting.c.account_pk, t_waiting.c.session_id, t_waiting.c.span_id).in_(chunk)))
    ours = t_work.c.claim == token
    for chunk in chunks(finished, _IN_CHUNK):
        keys = sa.tuple_(t_work.c.account_pk, t_work.c.session_id).in_(chunk)
        # Gone once nothing waits; a request adding spans meanwhile holds its row's lock
        # until it commits, so its spans are seen here or its upsert makes the row again.
        connection.execute(sa.delete(t_work).where(ours, keys, ~sa.exists().where(
            t_waiting.c.account_pk == t_work.c.account_pk, t_waiting.c.session_id == t_work.c.session_id)))
        # Spans still waiting (more than one claim reads, or added meanwhile): free at once.
        connection.execute(sa.update(t_work).where(ours, keys).values(claim=None, lease_until=0, attempts=0))
    done = set(finished)
    for claim in finishing.held:
        key = (claim.account.pk, claim.session_id)
        if key in done:
            continue
        # Not finished: tried again after a pause that grows with each attempt.
        pause = 0 if key not in finishing._retry else min(lease_us, 250_000 * 2 ** min(claim.attempts, 8))
        connection.execute(sa.update(t_work).where(
            t_work.c.account_pk == key[0], t_work.c.session_id == key[1], t_work.c.claim == token)
            .values(claim=None, lease_until=stamp + pause))


