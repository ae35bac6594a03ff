"""Account isolation for sessions, their blobs and their tokens: two accounts with the same
session ids and the same bytes; nothing one does reaches the other's rows."""

from __future__ import annotations

import pytest

from agentfolio.store import AlreadyExists, NotFound, Store

BIG = "x" * (80 * 1024)  # above the blob threshold: stored as a content-addressed blob


def state(text: str) -> dict:
    return {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "createdAt": "2025-11-04T19:33:05Z", "correlationId": "c",
         "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}]}}


def entry(text: str) -> dict:
    return {"$type": "response", "createdAt": "2025-11-04T19:33:06Z", "correlationId": "c",
            "messages": [{"role": "assistant", "contents": [{"$type": "text", "text": text}]}]}


def test_sessions_and_their_blobs_stay_in_their_account(store: Store) -> None:
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    store.sessions.create(alice, state("alice " + BIG), session_id="same", agent="A")
    store.sessions.create(bob, state("bob " + BIG), session_id="same", agent="B")
    store.sessions.create(alice, state("only alice"), session_id="alice-only")

    # Listing and reading see only one's own.
    assert {info.id for info in store.sessions.list(alice)} == {"same", "alice-only"}
    assert {info.id for info in store.sessions.list(bob)} == {"same"}
    assert b"alice " in store.sessions.get_bytes(alice, "same")[1]
    assert b"bob " in store.sessions.get_bytes(bob, "same")[1]
    assert b"alice" not in store.sessions.get_bytes(bob, "same")[1]
    for read in (store.sessions.info, store.sessions.get_bytes):
        with pytest.raises(NotFound):
            read(bob, "alice-only")

    # Writing another account's session is refused as if it did not exist, and changes nothing.
    before = store.sessions.get_bytes(alice, "alice-only")
    with pytest.raises(NotFound):
        store.sessions.append(bob, "alice-only", entry("bob was here"), expected_version=None)
    with pytest.raises(NotFound):
        store.sessions.reset(bob, "alice-only")
    with pytest.raises(NotFound):
        store.sessions.delete(bob, "alice-only")
    assert store.sessions.get_bytes(alice, "alice-only") == before

    # Deleting one account's session (and sweeping) leaves the other's blob-backed one whole.
    store.sessions.delete(bob, "same")
    store.sweep_blobs()
    assert b"alice " + BIG.encode() in store.sessions.get_bytes(alice, "same")[1]
    with pytest.raises(NotFound):
        store.sessions.info(bob, "same")


def test_the_same_bytes_imported_by_two_accounts_are_two_sessions(store: Store) -> None:
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    store.sessions.create(alice, state("shared"), session_id="a", source_hash="f" * 64)
    assert store.sessions.exists_source(bob, "f" * 64) is None
    store.sessions.create(bob, state("shared"), session_id="b", source_hash="f" * 64)
    with pytest.raises(AlreadyExists):
        store.sessions.create(alice, state("shared"), session_id="a2", source_hash="f" * 64)
    assert store.sessions.exists_source(alice, "f" * 64) == "a"
    assert store.sessions.exists_source(bob, "f" * 64) == "b"
