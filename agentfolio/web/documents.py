"""Files opened in the viewer without being stored as sessions.

A dropped file is identified (:func:`agentfolio.app.documents.identify_bytes`) and kept
under a random token, so its pages can load a screen at a time like a stored session.
Each account has its own bounded set, so one account opening many files never pushes
out another's.

* :class:`StoredOpenedFiles` (a viewer with a store): the file is kept in the store
  (:mod:`agentfolio.app.viewer_files`), so a browser behind a load balancer may post it to
  one server and read its pages from any other; each server keeps what it parsed in a
  bounded cache.
* :class:`OpenedFiles` (the file viewer with no store): in this process's memory.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentfolio._cache import Lru
from agentfolio.app.documents import Identified, identify_all, identify_bytes

__all__ = ["Opened", "OpenedFiles", "OpenedStore", "StoredOpenedFiles", "open_all", "open_bytes"]


@dataclass(kw_only=True)
class Opened(Identified):
    token: str
    owner: Any
    opened_at: float = field(default_factory=time.time)
    #: Whatever a page computed once from the document (a SessionView, a Trace...).
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def problem_count(self) -> int:
        return len(self.problems)


def open_bytes(data: bytes, *, name: str, owner: Any) -> Opened:
    return _opened(identify_bytes(data, name=name), owner=owner)


def open_all(data: bytes, *, name: str, owner: Any) -> list[Opened]:
    """Everything a file opens as: one item, or one per conversation of a span export."""
    return [_opened(found, owner=owner) for found in identify_all(data, name=name)]


def _opened(found: Identified, *, owner: Any, token: str | None = None) -> Opened:
    values = {f.name: getattr(found, f.name) for f in dataclasses.fields(Identified)}
    return Opened(**values, token=token or secrets.token_urlsafe(16), owner=owner)


class OpenedStore(Protocol):
    """Where the viewer keeps opened files; ``who`` is the viewer's ``Who`` (account, owner)."""

    def open_all(self, data: bytes, name: str, who: Any) -> list[Opened]:
        """Keep what the file opens as (:func:`open_all`): one item, or one per conversation."""

    def get(self, token: str, who: Any) -> Opened | None: ...

    def of_kind(self, who: Any, *kinds: str) -> list[Any]:
        """The owner's files of these kinds, newest first: each with ``token``, ``name``,
        ``kind``, ``detected`` and ``problem_count``."""


class OpenedFiles:
    """The files opened in this process: per owner at most ``max_files`` and ``max_bytes``."""

    def __init__(self, max_files: int = 32, max_bytes: int = 512 * 1024 * 1024, max_owners: int = 1024) -> None:
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.max_owners = max_owners
        self._by_owner: OrderedDict[Any, OrderedDict[str, Opened]] = OrderedDict()
        self._lock = threading.Lock()

    def open_all(self, data: bytes, name: str, who: Any) -> list[Opened]:
        return [self.add(opened) for opened in open_all(data, name=name, owner=who.owner)]

    def add(self, opened: Opened) -> Opened:
        with self._lock:
            items = self._by_owner.setdefault(opened.owner, OrderedDict())
            self._by_owner.move_to_end(opened.owner)
            items[opened.token] = opened
            while len(items) > self.max_files or (
                    len(items) > 1 and sum(item.size for item in items.values()) > self.max_bytes):
                items.popitem(last=False)
            while len(self._by_owner) > self.max_owners:
                self._by_owner.popitem(last=False)
        return opened

    def get(self, token: str, who: Any) -> Opened | None:
        with self._lock:
            items = self._by_owner.get(who.owner)
            opened = items.get(token) if items is not None else None
            if opened is None or items is None:
                return None
            items.move_to_end(token)
            return opened

    def of_kind(self, who: Any, *kinds: str) -> list[Opened]:
        with self._lock:
            items = self._by_owner.get(who.owner) or OrderedDict()
            return [item for item in reversed(items.values()) if item.kind in kinds]


class StoredOpenedFiles:
    """Opened files kept in the store for the signed-in account; parsed ones cached here
    (at most ``cache_bytes`` of files' bytes)."""

    def __init__(self, folio: Any, *, cache_files: int = 64, cache_bytes: int = 256 * 1024 * 1024) -> None:
        self.files = folio.viewer_files
        self._parsed: Lru[tuple[int, str], Opened] = Lru(cache_files, max_weight=cache_bytes,
                                                         weigh=lambda opened: opened.size)

    def open_all(self, data: bytes, name: str, who: Any) -> list[Opened]:
        # A span export opens as one item per conversation: each is kept as the same bytes
        # with its place in the file, so another server parsing them picks the same one.
        opened = []
        for part, found in enumerate(identify_all(data, name=name)):
            kept = self.files.keep(who.account, data, found, part=part)
            opened.append(self._parsed.put((who.account.pk, kept.token),
                                           _opened(found, owner=who.owner, token=kept.token)))
        return opened

    def get(self, token: str, who: Any) -> Opened | None:
        found = self.files.find(who.account, token)  # the store says whether it is still there, for this account
        if found is None:
            return None
        key = (who.account.pk, token)
        opened = self._parsed.get(key)
        if opened is None:
            data = self.files.read(found)
            if data is None:
                return None
            parts = identify_all(data, name=found.name)
            if found.part >= len(parts):
                return None
            # The name it was kept under (a conversation's label names its file already).
            item = dataclasses.replace(parts[found.part], name=found.name)
            opened = self._parsed.put(key, _opened(item, owner=who.owner, token=token))
        return opened

    def of_kind(self, who: Any, *kinds: str) -> list[Any]:
        return list(self.files.recent(who.account, *kinds))
