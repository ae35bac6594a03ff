"""Which entries point at which blobs: written with the entries, collected by a sweep.

A writer, inside the transaction that adds entries, first locks the row of every blob it
will point at (inserting it when new), then makes sure the blob's bytes are in the blob
store, then inserts the entries and their ``entry_blobs`` rows.  The sweep removes a blob
only inside a transaction that holds the same row lock and finds no ``entry_blobs`` row
for it, and removes the bytes before it commits.  So a committed reference never points
at missing bytes, whatever resets, deletes, creates and sweeps run at the same time, in
any number of processes: every decision to remove is taken under the lock a writer needs
before pointing at the blob, and every writer checks the bytes again under that lock.
Files opened in the viewer (``viewer_files``) point at blobs the same way
(:func:`lock_and_store`), and the sweep keeps what they point at too.
(On SQLite a write transaction holds the whole database's write lock, which is stronger.)

On PostgreSQL one process sweeps at a time (a session advisory lock); the others skip.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from agentfolio.store.blobs import CONTENT_KEY, LEGACY_KEY, BlobMissing, BlobStore, content_key
from agentfolio.store.documents import PackedEntry
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.tables import blobs, entry_blobs, viewer_files

log = logging.getLogger("agentfolio.store")

SWEEP_LOCK_KEY = 7208921502  # pg_advisory_lock key; 7208921501 guards migrations
_BATCH = 500
_local_sweep = threading.Lock()


def _insert(connection: Connection) -> Any:
    # Imported here: loading PostgreSQL's dialects (asyncpg's among them) took 30 ms of
    # every command's start, which a command on SQLite never uses.
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(blobs)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(blobs)


def keep_blobs(connection: Connection, store: BlobStore, session_pk: int, first_position: int,
               packed: Sequence[PackedEntry]) -> list[dict[str, Any]]:
    """Lock and store the blobs these entries point at; the ``entry_blobs`` rows to insert
    (after the entries themselves, see :func:`point_at_blobs`)."""
    contents: dict[str, bytes] = {}
    references: list[dict[str, Any]] = []
    for index, entry in enumerate(packed):
        digests = set()
        for _, digest, data in entry.blobs:
            contents.setdefault(digest, data)
            digests.add(digest)
        references += [{"session_pk": session_pk, "position": first_position + index, "digest": digest}
                       for digest in sorted(digests)]
    lock_and_store(connection, store, contents)
    return references


def lock_and_store(connection: Connection, store: BlobStore, contents: dict[str, bytes]) -> None:
    """Lock the rows of these blobs (digest → bytes; inserting the new ones) until the
    transaction ends, and make sure their bytes are in the store: after this, the
    transaction may point at them."""
    if not contents:
        return
    now = time.time()
    ordered = sorted(contents)  # one lock order for every writer: no deadlock between two of them
    for start in range(0, len(ordered), _BATCH):
        insert = _insert(connection).values([{"digest": digest, "created_at": now}
                                             for digest in ordered[start:start + _BATCH]])
        # DO UPDATE (not DO NOTHING) so the row is locked until this transaction ends.
        connection.execute(insert.on_conflict_do_update(index_elements=[blobs.c.digest],
                                                        set_={"created_at": blobs.c.created_at}))
    for digest in ordered:
        store.put(content_key(digest), contents[digest])


def point_at_blobs(connection: Connection, references: list[dict[str, Any]]) -> None:
    for start in range(0, len(references), _BATCH):
        connection.execute(sa.insert(entry_blobs), references[start:start + _BATCH])


@dataclass(frozen=True, slots=True)
class Swept:
    deleted: int = 0
    moved: int = 0
    skipped: bool = False  # another process was sweeping


@contextmanager
def _sweeping(engine: Engine) -> Iterator[bool]:
    if not _local_sweep.acquire(blocking=False):
        yield False
        return
    try:
        if engine.dialect.name != "postgresql":
            yield True
            return
        with engine.connect() as connection:
            held = connection.exec_driver_sql(f"SELECT pg_try_advisory_lock({SWEEP_LOCK_KEY})").scalar_one()
            connection.commit()
            try:
                yield bool(held)
            finally:
                if held:
                    connection.exec_driver_sql(f"SELECT pg_advisory_unlock({SWEEP_LOCK_KEY})")
                    connection.commit()
    finally:
        _local_sweep.release()


def sweep(engine: Engine, store: BlobStore) -> Swept:
    """Remove every blob nothing points at; move blobs stored under old keys to their content keys."""
    with _sweeping(engine) as mine:
        if not mine:
            return Swept(skipped=True)
        deleted = 0
        after = ""
        while True:  # rows nothing points at (left by resets, deletes, expiry)
            unreferenced = (sa.select(blobs.c.digest)
                            .where(blobs.c.digest > after, ~_referenced(blobs.c.digest))
                            .order_by(blobs.c.digest).limit(_BATCH))
            with read_transaction(engine) as connection:
                digests = list(connection.execute(unreferenced).scalars())
            deleted += sum(_collect(engine, store, digest) for digest in digests)
            if len(digests) < _BATCH:
                break
            after = digests[-1]
        moved = 0
        # Bytes with no row: a write that rolled back or died after storing them; and bytes
        # under old per-session keys.  Rows are looked up a batch of keys at a time.
        listed: list[str] = []
        for key in store.listing():
            if match := CONTENT_KEY.fullmatch(key):
                listed.append(match[2])
                if len(listed) >= _BATCH:
                    deleted += _collect_unknown(engine, store, listed)
                    listed = []
            elif match := LEGACY_KEY.fullmatch(key):
                moved += _move_legacy(engine, store, key, match[3])
        deleted += _collect_unknown(engine, store, listed)
        return Swept(deleted=deleted, moved=moved)


def _referenced(digest: Any) -> Any:
    """Whether anything points at the blob: an entry, or a file opened in the viewer."""
    return sa.or_(sa.exists().where(entry_blobs.c.digest == digest),
                  sa.exists().where(viewer_files.c.digest == digest))


def _collect_unknown(engine: Engine, store: BlobStore, digests: list[str]) -> int:
    """Remove those of these stored blobs that have no row (under the row lock, as always)."""
    if not digests:
        return 0
    with read_transaction(engine) as connection:
        known = set(connection.execute(sa.select(blobs.c.digest).where(blobs.c.digest.in_(digests))).scalars())
    return sum(_collect(engine, store, digest) for digest in digests if digest not in known)


def _collect(engine: Engine, store: BlobStore, digest: str) -> int:
    """Remove one blob if, under its row lock, nothing points at it."""
    with write_transaction(engine) as connection:
        # Waits for a writer that is inserting this row; then holds the row like a writer would.
        connection.execute(_insert(connection).values(digest=digest, created_at=time.time())
                           .on_conflict_do_nothing(index_elements=[blobs.c.digest]))
        connection.execute(sa.select(blobs.c.digest).where(blobs.c.digest == digest).with_for_update())
        if connection.execute(sa.select(_referenced(sa.literal(digest)))).scalar_one():
            return 0
        connection.execute(sa.delete(blobs).where(blobs.c.digest == digest))
        store.delete(content_key(digest))
    return 1


def _move_legacy(engine: Engine, store: BlobStore, key: str, digest: str) -> int:
    try:
        data = store.get(key)
    except BlobMissing:
        return 0
    if hashlib.sha256(data).hexdigest() != digest:
        log.warning("blob %s does not hold the bytes its name says; left where it is", key)
        return 0
    with write_transaction(engine) as connection:
        known = connection.execute(sa.select(blobs.c.digest).where(blobs.c.digest == digest)
                                   .with_for_update()).first()
        if known is not None:
            store.put(content_key(digest), data)
    store.delete(key)
    return 1
