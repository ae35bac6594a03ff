"""Account isolation of the files opened in the viewer, on SQLite and PostgreSQL: another
account's file is not found, not listed, and not pushed out by its bounds.
``scripts/mutate_scope.py`` runs this file with each scoping call removed."""

from __future__ import annotations

from agentfolio.store import Store
from agentfolio.store.viewer_files import ViewerFiles
from tests.store.test_viewer_files import _add


def test_a_file_is_found_by_its_account_only(store: Store) -> None:
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    kept = _add(store.viewer_files, alice, b'{"a": 1}', now=1000.0)
    found = store.viewer_files.find(alice, kept.token, now=1001.0)
    assert found is not None and store.viewer_files.read(found) == b'{"a": 1}'
    assert store.viewer_files.find(bob, kept.token, now=1001.0) is None
    assert store.viewer_files.recent(bob, now=1001.0) == []
    assert [f.token for f in store.viewer_files.recent(alice, "session", now=1001.0)] == [kept.token]
    assert store.viewer_files.recent(alice, "trace", now=1001.0) == []


def test_each_account_keeps_at_most_its_bound_the_newest_first(store: Store) -> None:
    files = ViewerFiles(store.engine, store.blobs, max_files=3, max_bytes=10_000)
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    bobs = _add(files, bob, b"bob's", now=1.0)
    tokens = [_add(files, alice, f'"{n}"'.encode(), now=10.0 + n).token for n in range(5)]
    assert [f.token for f in files.recent(alice, now=20.0)] == tokens[:1:-1]
    assert files.find(alice, tokens[0], now=20.0) is None
    assert files.find(bob, bobs.token, now=20.0) is not None  # another account's files are not pushed out
    # Bytes count too: one large file pushes out the older ones, but is itself kept.
    large = _add(files, alice, b"x" * 20_000, now=30.0)
    assert [f.token for f in files.recent(alice, now=31.0)] == [large.token]


def test_another_accounts_newer_files_take_none_of_ones_bound(store: Store) -> None:
    files = ViewerFiles(store.engine, store.blobs, max_files=3, max_bytes=10_000)
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    first, second = (_add(files, alice, f'"{n}"'.encode(), now=10.0 + n).token for n in range(2))
    _add(files, bob, b"bob's, newer", now=20.0)
    third = _add(files, alice, b'"3"', now=30.0).token
    assert [f.token for f in files.recent(alice, now=31.0)] == [third, second, first]
