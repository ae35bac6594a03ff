"""Files opened in the viewer, kept in the store: per account, bounded, expiring, and their
bytes kept by the blob sweep for as long as a file points at them."""

from __future__ import annotations

from agentfolio.store import Store
from agentfolio.store.blobs import content_key
from agentfolio.store.viewer_files import ViewerFiles


def _add(files: ViewerFiles, account, data: bytes, name: str = "f.json", now: float = 1000.0):  # type: ignore[no-untyped-def]
    return files.add(account, data, name=name, kind="session", detected="durable-state", problem_count=0, now=now)


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
