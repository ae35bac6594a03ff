"""The durable queue between OTLP spans and their conversations: spans are queryable when
the request is answered, the conversation follows from work kept in the database, so a
server that stops before doing it loses nothing (another process, or a restart, takes
it), a worker that dies holding work gives it back when its lease ends, and two workers
never hold the same session's work."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa

from agentfolio.app.otlp import OtlpIngest
from agentfolio.app.otlp_conversations import ConversationWorker
from agentfolio.store import Store
from agentfolio.store.errors import NotFound
from agentfolio.store.otel_queue import now_us
from agentfolio.store.registry_tables import registry_spans
from tests.app.test_otlp import body, chat, texts_of, turn

NOW = 1_750_000_000 * 10**9


def stored_spans(store: Store, account: Any) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(sa.select(sa.func.count()).select_from(registry_spans)
                                      .where(registry_spans.c.account_pk == account.pk)).scalar_one())


def test_spans_are_queryable_at_once_and_the_conversation_follows(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    result = ingest.export(account, turn(0), encoding="protobuf")
    assert result.accepted == 1 and stored_spans(store, account) == 1
    session_id = result.sessions[0]
    assert ingest.pending(account) == 1
    with pytest.raises(NotFound):  # not built yet: it waits in the queue
        store.sessions.of(account).info(session_id)
    ingest.drain()
    assert ingest.pending(account) == 0
    assert texts_of(store, account, session_id) == ["q0", "a0"]


def test_work_left_by_a_stopped_server_is_taken_in_by_another_process(store: Store) -> None:
    """The first "server" stores spans and stops before any conversation is built; a
    process opened afresh on the same database finds the work and does it."""
    account = store.accounts.ensure("app")
    first = Store.open(store.settings)
    try:
        ingest = OtlpIngest(first)
        for index in range(3):
            ingest.export(account, turn(index), encoding="protobuf")
    finally:
        first.close()
    restarted = Store.open(store.settings)
    try:
        worker = ConversationWorker(restarted)
        assert worker.pending(account) == 1
        worker.drain()
        assert worker.pending(account) == 0
    finally:
        restarted.close()
    session_id = "otel:trace:" + "01" * 16
    assert texts_of(store, account, session_id) == [text for i in range(3) for text in (f"q{i}", f"a{i}")]


def test_a_worker_that_dies_holding_work_gives_it_back_when_its_lease_ends(store: Store) -> None:
    account = store.accounts.ensure("app")
    OtlpIngest(store).export(account, turn(0), encoding="protobuf")
    dying = ConversationWorker(store)
    token, claims = dying.queue.claim(10)  # ... and never finishes: the process was killed
    assert [claim.session_id for claim in claims] == ["otel:trace:" + "01" * 16]
    other = ConversationWorker(Store.open(store.settings))
    try:
        assert other.run_once() == 0  # still leased: nobody else takes it meanwhile
        lease = other.queue.lease_us
        other.queue.clock = lambda: now_us() + lease + 1  # the lease's time has passed
        assert other.run_once() == 1
        assert other.pending(account) == 0
        # The dead worker's finish, had it come back, writes nothing: its claim is gone.
        with dying.queue.finishing(token, claims) as finishing:
            assert finishing.held == []
    finally:
        other.store.close()
    assert texts_of(store, account, claims[0].session_id) == ["q0", "a0"]


def test_spans_added_while_a_worker_works_wait_for_the_next_round(store: Store) -> None:
    """A request that lands between a worker's reads and its write is not swallowed by
    the worker finishing the session: its spans stay queued."""
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    ingest.export(account, turn(0), encoding="protobuf")
    worker = ConversationWorker(store)
    original = worker._plan_account

    def plan_then_request(claims: Any) -> Any:
        plans = original(claims)
        ingest.export(account, turn(1), encoding="protobuf")  # arrives mid-round
        return plans

    worker._plan_account = plan_then_request  # type: ignore[method-assign]
    assert worker.run_once() == 1
    assert worker.pending(account) == 1  # turn 1 still waits
    worker._plan_account = original  # type: ignore[method-assign]
    worker.drain()
    assert worker.pending(account) == 0
    assert texts_of(store, account, "otel:trace:" + "01" * 16) == ["q0", "a0", "q1", "a1"]


def test_two_workers_never_claim_the_same_session(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    for conversation in range(24):
        request = body({"id": b"\x01" * 8, "trace": bytes([conversation + 1]) * 16, "start": NOW,
                        "attributes": chat([f"q{conversation}"], "a")})
        ingest.export(account, request, encoding="protobuf")
    assert ingest.pending(account) == 24
    stores = [store, Store.open(store.settings)]
    try:
        workers = [ConversationWorker(each) for each in stores]
        claimed: list[list[str]] = [[], []]
        start = threading.Barrier(2)

        def claim(number: int) -> None:
            start.wait()
            for _ in range(6):
                _token, claims = workers[number].queue.claim(3)
                claimed[number].extend(claim.session_id for claim in claims)

        threads = [threading.Thread(target=claim, args=(number,)) for number in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not set(claimed[0]) & set(claimed[1])
        assert sorted(claimed[0] + claimed[1]) == sorted(set(claimed[0] + claimed[1]))
        assert len(claimed[0]) + len(claimed[1]) == 24
    finally:
        stores[1].close()


def test_a_conversation_built_again_leaves_no_stale_search_rows(store: Store) -> None:
    """A span arriving late rebuilds the session: the entries it replaces leave the text
    index with it (SQLite's index is kept by hand; PostgreSQL's is an index on entries)."""
    from agentfolio.store.search import FTS_TABLE, has_fts
    from agentfolio.store.tables import entries

    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    for index in (0, 2, 1):  # turn 1 starts before turn 2, which is stored: built again
        ingest.export(account, turn(index), encoding="protobuf")
        ingest.drain()
    session_id = "otel:trace:" + "01" * 16
    assert texts_of(store, account, session_id) == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert [info.id for info in store.sessions.of(account).list(text="q1", limit=10)] == [session_id]
    with store.engine.connect() as connection:
        if connection.dialect.name != "sqlite" or not has_fts(connection):
            return
        # Before the rebuild "q2" was the third entry; now it is the fifth, and only there.
        holding = sorted(row.position for row in connection.execute(sa.select(entries.c.position, entries.c.text))
                         if "q2" in (row.text or ""))
        found = connection.exec_driver_sql(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'q2'").scalars()
        assert sorted(rowid & 0xFFFFFFFF for rowid in found) == holding == [4]


def test_many_conversations_in_one_round_each_get_their_own_entries(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    for conversation in range(30):
        ingest.export(account, body({"id": b"\x01" * 8, "trace": bytes([conversation + 1]) * 16, "start": NOW,
                                     "attributes": chat([f"question{conversation}"], f"answer{conversation}")}),
                      encoding="protobuf")
    assert ConversationWorker(store, batch=64).run_once() == 30  # one round takes them all
    for conversation in range(30):
        session_id = "otel:trace:" + f"{conversation + 1:02x}" * 16
        assert texts_of(store, account, session_id) == [f"question{conversation}", f"answer{conversation}"]
        assert store.sessions.of(account).info(session_id).entry_count == 2


def _wait_until(condition: Any, patience: float = 60.0) -> None:
    """Poll ``condition`` until it holds (a hang past ``patience`` seconds fails the test)."""
    deadline = time.monotonic() + patience
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.02)


def test_a_running_worker_waits_for_a_pause_in_the_requests_yet_never_starves(store: Store) -> None:
    """Rounds wait while the receiver has a request in hand (its client is waiting for the
    answer), start once it has had none for a moment, take nothing from requests without
    pause while the backlog is short, and run beside them, one per ``defer_seconds``, once
    the backlog reaches half its limit."""
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    ingest.backlog_check_seconds = 0  # read the depth at every look
    worker = ingest.worker
    worker.defer_seconds = 3600.0
    entered = threading.Event()
    wait_quiet = ingest.gate.wait_quiet

    def noting_wait(quiet: float, timeout: float) -> bool:
        entered.set()
        return wait_quiet(quiet, timeout)

    ingest.gate.wait_quiet = noting_wait  # type: ignore[method-assign]
    in_hand_at_rounds: list[int] = []
    run_once = worker.run_once

    def noting_round() -> int:
        in_hand_at_rounds.append(ingest.admitted)
        return run_once()

    worker.run_once = noting_round  # type: ignore[method-assign]
    assert ingest.admit()  # a request in hand
    ingest.export(account, turn(0), encoding="protobuf")
    worker.start()
    try:
        assert entered.wait(60)
        assert worker.pending(account) == 1  # held back: only the request's end lets it go
        ingest.release()
        _wait_until(lambda: worker.pending(account) == 0)
        assert in_hand_at_rounds and set(in_hand_at_rounds) == {0}
        assert texts_of(store, account, "otel:trace:" + "01" * 16) == ["q0", "a0"]

        worker.defer_seconds = 0.1  # requests without pause from now on
        assert ingest.admit()
        ingest.export(account, turn(1), encoding="protobuf")
        time.sleep(1.0)  # ten times defer_seconds: a short backlog still waits for the pause
        assert worker.pending(account) == 1
        ingest.backlog_limit = 2 * ingest.worker.backlog().spans  # now it is half the limit
        _wait_until(lambda: worker.pending(account) == 0)
        assert ingest.admitted == 1
        ingest.release()
    finally:
        worker.stop()
    assert texts_of(store, account, "otel:trace:" + "01" * 16) == ["q0", "a0", "q1", "a1"]
