"""Files opened in the viewer, kept per account so that any server can show them.

A browser behind a load balancer posts a file to one server and asks for its pages from
another: the file's bytes go to the blob store (content-addressed, under the same row lock
and sweep as entries' blobs, :mod:`agentfolio.store.blob_refs`) and a ``viewer_files`` row
names them for one account under a random token.  Each account keeps at most
``max_files`` files and ``max_bytes`` bytes (the least recently used go first, in the
transaction that adds one, under the account's row lock), and a file not looked at for
``lifetime`` seconds expires.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from agentfolio.store.accounts import Account
from agentfolio.store.blob_refs import lock_and_store
from agentfolio.store.blobs import BlobMissing, BlobStore, content_key
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.scope import AccountScope
from agentfolio.store.tables import accounts, viewer_files

__all__ = ["DEFAULT_LIFETIME", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_FILES", "ViewerFile", "ViewerFiles"]

DEFAULT_MAX_FILES = 32
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_LIFETIME = 24 * 3600.0
#: A file's last use is written at most this often (reading a page is not a write each time).
_TOUCH_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class ViewerFile:
    """What is known of an opened file without reading it again."""

    token: str
    name: str
    kind: str
    detected: str | None
    problem_count: int
    part: int
    size: int
    digest: str
    opened_at: float


def _file(row: sa.Row) -> ViewerFile:  # type: ignore[type-arg]
    return ViewerFile(row.token, row.name, row.kind, row.detected, row.problem_count, row.part, row.size,
                      row.digest, row.opened_at)


class ViewerFiles:
    def __init__(self, engine: Engine, blobs: BlobStore, *, max_files: int = DEFAULT_MAX_FILES,
                 max_bytes: int = DEFAULT_MAX_BYTES, lifetime: float = DEFAULT_LIFETIME) -> None:
        self.engine = engine
        self.blobs = blobs
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.lifetime = lifetime

    def add(self, account: Account, data: bytes, *, name: str, kind: str, detected: str | None,
            problem_count: int, part: int = 0, now: float | None = None) -> ViewerFile:
        """Keep ``data`` for the account (``part``: which of the items it opens as); the oldest
        of its files go past the bounds (the new one stays)."""
        now = time.time() if now is None else now
        scope = AccountScope(account.pk)
        digest = hashlib.sha256(data).hexdigest()
        token = secrets.token_urlsafe(24)
        with write_transaction(self.engine) as connection:
            # One writer per account at a time, so two servers adding at once keep the bound.
            connection.execute(sa.select(accounts.c.pk).where(accounts.c.pk == account.pk).with_for_update())
            lock_and_store(connection, self.blobs, {digest: data})
            connection.execute(scope.insert(viewer_files).values(
                token=token, name=name[:200], kind=kind, detected=(detected or None) and detected[:200],
                part=part, problem_count=problem_count, size=len(data), digest=digest, opened_at=now, used_at=now,
                expires_at=now + self.lifetime))
            others = connection.execute(scope.select(viewer_files, viewer_files.c.pk, viewer_files.c.size)
                                        .where(viewer_files.c.token != token, viewer_files.c.expires_at > now)
                                        .order_by(viewer_files.c.used_at.desc(), viewer_files.c.pk.desc())).all()
            count, total, kept = 1, len(data), []
            for row in others:
                count, total = count + 1, total + row.size
                if count > self.max_files or total > self.max_bytes:
                    break
                kept.append(row.pk)
            drop = scope.delete(viewer_files).where(viewer_files.c.token != token)
            connection.execute(drop.where(viewer_files.c.pk.not_in(kept)) if kept else drop)
        return ViewerFile(token, name[:200], kind, detected, problem_count, part, len(data), digest, now)

    def find(self, account: Account, token: str, *, now: float | None = None) -> ViewerFile | None:
        """The account's file of that token (None when it has none, or no more); looking
        at a file keeps it for another ``lifetime``."""
        now = time.time() if now is None else now
        scope = AccountScope(account.pk)
        with read_transaction(self.engine) as connection:
            row = connection.execute(scope.select(viewer_files).where(
                viewer_files.c.token == token, viewer_files.c.expires_at > now)).first()
        if row is None:
            return None
        if row.used_at < now - _TOUCH_SECONDS:
            with write_transaction(self.engine) as connection:
                # The row the scoped read above found, by its key.
                connection.execute(sa.update(viewer_files).where(viewer_files.c.pk == row.pk)
                                   .values(used_at=now, expires_at=now + self.lifetime))
        return _file(row)

    def read(self, found: ViewerFile) -> bytes | None:
        """The bytes of a file :meth:`find` answered (None if they are gone meanwhile)."""
        try:
            return self.blobs.get(content_key(found.digest))
        except BlobMissing:
            return None

    def recent(self, account: Account, *kinds: str, limit: int = DEFAULT_MAX_FILES,
               now: float | None = None) -> list[ViewerFile]:
        """The account's files of these kinds (every kind when none is named), last used first."""
        now = time.time() if now is None else now
        query = (AccountScope(account.pk).select(viewer_files).where(viewer_files.c.expires_at > now)
                 .order_by(viewer_files.c.used_at.desc(), viewer_files.c.pk.desc()).limit(limit))
        if kinds:
            query = query.where(viewer_files.c.kind.in_(kinds))
        with read_transaction(self.engine) as connection:
            return [_file(row) for row in connection.execute(query)]

    def expire(self, now: float | None = None) -> int:
        """Forget every file past its lifetime (its bytes go with the next blob sweep)."""
        now = time.time() if now is None else now
        with write_transaction(self.engine) as connection:
            return connection.execute(sa.delete(viewer_files).where(viewer_files.c.expires_at <= now)).rowcount
