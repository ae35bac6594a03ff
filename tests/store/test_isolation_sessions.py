"""Account isolation of sessions, their entries and blobs, on SQLite and PostgreSQL.

Two accounts hold sessions with the same ids, the same imported bytes (source hash), the
same message text and the same large contents (one content-addressed blob).  Every
operation of a repository opened for bob — list (with each filter), get, window, import
look-up, create, append, reset, delete, purge of an expired id — run with alice's ids,
must find nothing and change nothing of alice's; the blob sweep and the expiry, which
span accounts, must leave each account's live rows whole.

``scripts/mutate_scope.py`` runs this file once per ``AccountScope`` call of the store
with that one call unscoped: each run must fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.store import AlreadyExists, NotFound, Sessions, Store
from agentfolio.store.sessions import WrittenSession
from agentfolio.store.tables import entries as entries_table
from agentfolio.store.tables import sessions as sessions_table

BIG = "x" * (80 * 1024)  # above the blob threshold: stored as a content-addressed blob
SOURCE = "f" * 64


def state(text: str) -> dict:
    return {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "createdAt": "2025-11-04T19:33:05Z", "correlationId": "c",
         "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}]}}


def entry(text: str) -> dict:
    return {"$type": "response", "createdAt": "2025-11-04T19:33:06Z", "correlationId": "c",
            "messages": [{"role": "assistant", "contents": [{"$type": "text", "text": text}]}]}


@pytest.fixture
def two(store: Store) -> tuple[Sessions, Sessions]:
    """alice and bob, each with a session ``same`` (same text, same big content), alice
    with ``alice-only`` imported from the file ``SOURCE``."""
    alice = store.sessions.of(store.accounts.ensure("alice"))
    bob = store.sessions.of(store.accounts.ensure("bob"))
    alice.create(state("needle alice " + BIG), session_id="same", agent="A")
    bob.create(state("needle bob " + BIG), session_id="same", agent="B")
    alice.create(state("only alice holds the haystack"), session_id="alice-only", agent="A", source_hash=SOURCE)
    return alice, bob


def _snapshot(store: Store, account_name: str) -> list[tuple[Any, ...]]:
    """Every session and entry row of an account, read around the repositories."""
    account = store.accounts.require(account_name)
    with store.engine.connect() as connection:
        rows = connection.execute(
            sa.select(sessions_table.c.id, sessions_table.c.version, sessions_table.c.entry_count,
                      sessions_table.c.head, entries_table.c.position, entries_table.c.body)
            .select_from(sessions_table.outerjoin(entries_table, entries_table.c.session_pk == sessions_table.c.pk))
            .where(sessions_table.c.account_pk == account.pk)
            .order_by(sessions_table.c.id, entries_table.c.position)).all()
    return [tuple(row) for row in rows]


# --------------------------------------------------------------------------- reading

#: (what, read in bob's repository naming alice's session) → must find nothing
READS: list[tuple[str, Callable[[Sessions], Any]]] = [
    ("info", lambda s: s.info("alice-only")),
    ("get_bytes", lambda s: s.get_bytes("alice-only")),
    ("get_window", lambda s: s.get_window("alice-only", 0, 10)),
    ("get_document", lambda s: s.get_document("alice-only")),
]


@pytest.mark.parametrize(("what", "read"), READS, ids=[what for what, _ in READS])
def test_reads_find_only_their_own_account(two, what: str, read: Callable[[Sessions], Any]) -> None:
    alice, bob = two
    assert read(alice) is not None
    with pytest.raises(NotFound):
        read(bob)


def test_the_same_id_reads_each_accounts_own_session(two) -> None:
    alice, bob = two
    assert b"needle alice " + BIG.encode() in alice.get_bytes("same")[1]
    assert b"needle bob " + BIG.encode() in bob.get_bytes("same")[1]
    assert b"alice" not in bob.get_bytes("same")[1]
    assert b"needle bob" in bob.get_window("same", 0, 1)[1] and b"alice" not in bob.get_window("same", 0, 1)[1]
    assert bob.get_document("same")[1]["data"]["conversationHistory"][0]["messages"][0]["contents"][0]["text"] \
        .startswith("needle bob ")


LISTS: list[tuple[str, dict[str, Any], set[str], set[str]]] = [
    # (what, filters, alice sees, bob sees)
    ("everything", {}, {"same", "alice-only"}, {"same"}),
    ("by agent", {"agent": "A"}, {"same", "alice-only"}, set()),
    ("by text", {"text": "needle"}, {"same"}, {"same"}),
    ("by text only alice holds", {"text": "haystack"}, {"alice-only"}, set()),
    ("by time", {"since": 0.0, "until": 4e9}, {"same", "alice-only"}, {"same"}),
    ("a page further on", {"offset": 1}, {"same", "alice-only"}, set()),
]


@pytest.mark.parametrize(("what", "filters", "for_alice", "for_bob"), LISTS, ids=[row[0] for row in LISTS])
def test_lists_show_only_their_own_account(two, what: str, filters: dict[str, Any], for_alice: set[str],
                                           for_bob: set[str]) -> None:
    alice, bob = two
    if "offset" in filters:  # one of alice's two sessions on the second page; bob has one
        assert len(alice.list(**filters)) == 1 and {info.id for info in alice.list()} == for_alice
    else:
        assert {info.id for info in alice.list(**filters)} == for_alice
    assert {info.id for info in bob.list(**filters)} == for_bob
    assert {info.id for info in bob.iter_all()} == {"same"}


@pytest.mark.parametrize(("what", "filters", "for_alice", "for_bob"), LISTS[:-1], ids=[row[0] for row in LISTS[:-1]])
def test_counts_count_only_their_own_account(two, what: str, filters: dict[str, Any], for_alice: set[str],
                                             for_bob: set[str]) -> None:
    alice, bob = two
    assert alice.count(**filters) == len(for_alice)
    assert bob.count(**filters) == len(for_bob)
    assert bob.count(agent_contains="a") == 0 and alice.count(agent_contains="a") == 2


def test_agents_and_activity_are_only_ones_own(two, store: Store) -> None:
    alice, bob = two
    assert alice.agents() == [("A", 2)] and bob.agents() == [("B", 1)]
    alice.append("same", entry("alice answered"), expected_version=None)
    bob.append("same", entry("bob answered"), expected_version=None)
    assert len(bob.activity()) == len(bob.activity(agent="B")) == 1
    assert len(alice.activity()) == 1 and alice.activity(agent="B") == []
    # Bob's read recounts only his own sessions' kept counts, never alice's (her "same" is
    # at the same version as his: counted by his rules, it would take his counts).
    alice_pk = store.accounts.require("alice").pk
    with store.engine.begin() as connection:
        connection.execute(sa.update(sessions_table).where(sessions_table.c.account_pk == alice_pk)
                           .values(facts_version=None))
    bob.activity()
    with store.engine.connect() as connection:
        assert set(connection.execute(sa.select(sessions_table.c.facts_version)
                                      .where(sessions_table.c.account_pk == alice_pk)).scalars()) == {None}


def test_a_search_over_the_newest_sessions_counts_ones_own(two, monkeypatch: pytest.MonkeyPatch) -> None:
    """When a word is too common to list its sessions, a search walks the account's newest
    ones: alice writing later must not push bob's out of his own walk."""
    from agentfolio.store import search, sessions

    alice, bob = two
    monkeypatch.setattr(search, "CANDIDATES", 0)
    monkeypatch.setattr(sessions, "WALK_SESSIONS", 1)
    monkeypatch.setattr(sessions, "FALLBACK_SESSIONS", 1)
    alice.append("alice-only", entry("the newest write of all, needle"), expected_version=None)
    assert {info.id for info in bob.list(text="needle")} == {"same"}


def test_rebuilt_sessions_replace_only_ones_own(two, store: Store) -> None:
    """The OTel conversation worker stores sessions it wrote itself in the caller's
    transaction: it sees, replaces and creates only its own account's."""
    alice, bob = two
    before = _snapshot(store, "alice")
    document = state("rebuilt by bob")
    written = WrittenSession("alice-only", document, durable_state.read_bytes(_json.dumps(document)).session)
    with store.engine.begin() as connection:
        assert set(bob.versions(connection, ["same", "alice-only"])) == {"same"}
        bob.replace_written(connection, [written])
    assert _snapshot(store, "alice") == before
    assert b"rebuilt by bob" in bob.get_bytes("alice-only")[1]


def test_match_snippets_come_only_from_ones_own_sessions(two) -> None:
    alice, bob = two
    assert bob.match_snippets(["alice-only", "same"], "haystack") == {}
    assert set(alice.match_snippets(["alice-only", "same"], "haystack")) == {"alice-only"}
    found = bob.match_snippets(["same"], "needle")
    assert "needle bob" in found["same"] and "alice" not in found["same"]


def test_an_imported_file_is_found_only_in_its_account(two, store: Store) -> None:
    alice, bob = two
    assert alice.exists_source(SOURCE) == "alice-only"
    assert bob.exists_source(SOURCE) is None
    bob.create(state("only alice holds the haystack"), session_id="b", source_hash=SOURCE)  # not a re-import
    assert bob.exists_source(SOURCE) == "b"
    with pytest.raises(AlreadyExists):
        alice.create(state("only alice holds the haystack"), session_id="a2", source_hash=SOURCE)


# --------------------------------------------------------------------------- writing

#: (what, write in bob's repository naming alice's session) → NotFound, nothing changed
WRITES: list[tuple[str, Callable[[Sessions], Any]]] = [
    ("append", lambda s: s.append("alice-only", entry("bob was here"), expected_version=None)),
    ("append at alice's version", lambda s: s.append("alice-only", entry("bob was here"), expected_version=1)),
    ("append_many", lambda s: s.append_many("alice-only", [entry("a"), entry("b")], expected_version=None)),
    ("reset", lambda s: s.reset("alice-only")),
    ("reset at alice's version", lambda s: s.reset("alice-only", expected_version=1)),
    ("delete", lambda s: s.delete("alice-only")),
    ("delete at alice's version", lambda s: s.delete("alice-only", expected_version=1)),
]


@pytest.mark.parametrize(("what", "write"), WRITES, ids=[what for what, _ in WRITES])
def test_writes_to_another_accounts_session_change_nothing(two, store: Store, what: str,
                                                          write: Callable[[Sessions], Any]) -> None:
    _, bob = two
    before = _snapshot(store, "alice")
    with pytest.raises(NotFound):
        write(bob)
    assert _snapshot(store, "alice") == before


def test_writes_to_the_same_id_change_only_ones_own(two, store: Store) -> None:
    alice, bob = two
    before = _snapshot(store, "alice")
    bob.append("same", entry("bob again"), expected_version=1)
    bob.append_many("same", [entry("b1"), entry("b2")], expected_version=2)
    assert bob.info("same").entry_count == 4
    bob.reset("same", expected_version=3)
    assert _snapshot(store, "alice") == before
    bob.delete("same")
    assert _snapshot(store, "alice") == before
    assert alice.info("same").version == 1


def test_created_rows_belong_to_the_repository_account(two, store: Store) -> None:
    _, bob = two
    bob.create(state("fresh"), session_id="fresh")
    owners = {row.id: row.account_pk for row in _session_rows(store) if row.id == "fresh"}
    assert owners == {"fresh": store.accounts.require("bob").pk}


def _session_rows(store: Store) -> list[Any]:
    with store.engine.connect() as connection:
        return list(connection.execute(sa.select(sessions_table.c.id, sessions_table.c.account_pk)))


# --------------------------------------------------------------------------- across accounts


def test_an_expired_id_is_freed_only_in_its_account(two, store: Store) -> None:
    """Re-creating an id whose session expired frees that id: alice's, never bob's."""
    with Store.open(store.settings.with_(session_ttl=3600)) as expiring:
        alice = expiring.sessions.of(expiring.accounts.require("alice"))
        long_ago = time.time() - 7200
        with expiring.engine.begin() as connection:
            connection.execute(sa.update(sessions_table).where(sessions_table.c.id == "same")
                               .values(updated_at=long_ago))
        bob_before = _snapshot(store, "bob")
        with pytest.raises(AlreadyExists):  # the expired row held the id; it is freed for a retry
            alice.create(state("again"), session_id="same")
        alice.create(state("again"), session_id="same")
        assert _snapshot(store, "bob") == bob_before  # bob's expired "same" is still there
        assert b"again" in alice.get_bytes("same")[1]


def test_deleting_and_sweeping_keeps_the_other_accounts_blobs(two, store: Store) -> None:
    alice, bob = two
    bob.delete("same")
    store.sweep_blobs()
    assert b"needle alice " + BIG.encode() in alice.get_bytes("same")[1]
    with pytest.raises(NotFound):
        bob.info("same")
    alice.reset("same")
    store.sweep_blobs()
    bob.create(state("needle bob " + BIG), session_id="again")  # the same bytes, stored anew
    assert BIG.encode() in bob.get_bytes("again")[1]


def test_expiry_removes_idle_sessions_of_every_account_and_nothing_live(two, store: Store) -> None:
    alice, bob = two
    with store.engine.begin() as connection:
        connection.execute(sa.update(sessions_table).where(sessions_table.c.account_pk == bob.account.pk)
                           .values(updated_at=0.0))
    with Store.open(store.settings.with_(session_ttl=3600)) as expiring:
        assert expiring.sessions.expire() == 1
    assert {info.id for info in alice.list()} == {"same", "alice-only"}
    assert _snapshot(store, "bob") == []
