"""Files opened in the viewer, kept in the store: per account, bounded, expiring, and their
bytes kept by the blob sweep for as long as a file points at them."""

from __future__ import annotations

from agentfolio.store import Store
from agentfolio.store.blobs import content_key
from agentfolio.store.viewer_files import ViewerFiles


def _add(files: ViewerFiles, account, data: bytes, name: str = "f.json", now: float = 1000.0):  # type: ignore[no-untyped-def]
    return files.add(account, data, name=name, kind="session", detected="durable-state", problem_count=0, now=now)


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


def test_files_expire_and_the_sweep_then_takes_their_bytes(store: Store) -> None:
    files = ViewerFiles(store.engine, store.blobs, lifetime=100.0)
    alice = store.accounts.ensure("alice")
    kept = _add(files, alice, b'{"opened": true}', now=1000.0)
    assert store.sweep_blobs().deleted == 0  # a file points at the blob
    assert store.blobs.get(content_key(kept.digest)) == b'{"opened": true}'
    assert files.find(alice, kept.token, now=1099.0) is not None
    assert files.expire(now=1099.0) == 0
    assert files.find(alice, kept.token, now=1200.0) is None  # past its lifetime: gone even before expiry runs
    assert files.expire(now=1200.0) == 1
    assert store.sweep_blobs().deleted == 1
    assert files.read(kept) is None


def test_looking_at_a_file_keeps_it_longer(store: Store) -> None:
    files = ViewerFiles(store.engine, store.blobs, lifetime=100.0)
    alice = store.accounts.ensure("alice")
    kept = _add(files, alice, b"[]", now=1000.0)
    assert files.find(alice, kept.token, now=1090.0) is not None
    assert files.find(alice, kept.token, now=1180.0) is not None
    assert files.expire(now=1180.0) == 0
