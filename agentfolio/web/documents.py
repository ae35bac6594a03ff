"""Files opened in the viewer without being stored.

A dropped file is identified once (:func:`agentfolio.app.documents.identify_bytes`) and
kept in process memory under a random token, so its pages can load a screen at a time
like a stored session. Nothing is written to the store. Each account (owner) has its own
bounded list, so one account opening many files never pushes out another's.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from agentfolio.app.documents import Identified, identify_all, identify_bytes

__all__ = ["Opened", "OpenedFiles", "open_all", "open_bytes"]


@dataclass(kw_only=True)
class Opened(Identified):
    token: str
    owner: Any
    opened_at: float = field(default_factory=time.time)
    #: Whatever a page computed once from the document (a SessionView, a Trace...).
    cache: dict[str, Any] = field(default_factory=dict)


def open_bytes(data: bytes, *, name: str, owner: Any) -> Opened:
    return _opened(identify_bytes(data, name=name), owner)


def open_all(data: bytes, *, name: str, owner: Any) -> list[Opened]:
    """Everything a file opens as: one item, or one per conversation of a span export."""
    return [_opened(found, owner) for found in identify_all(data, name=name)]


def _opened(found: Identified, owner: Any) -> Opened:
    values = {f.name: getattr(found, f.name) for f in dataclasses.fields(Identified)}
    return Opened(**values, token=secrets.token_urlsafe(16), owner=owner)


class OpenedFiles:
    """The files opened in this process: per owner at most ``max_files`` and ``max_bytes``."""

    def __init__(self, max_files: int = 32, max_bytes: int = 512 * 1024 * 1024, max_owners: int = 1024) -> None:
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.max_owners = max_owners
        self._by_owner: OrderedDict[Any, OrderedDict[str, Opened]] = OrderedDict()
        self._lock = threading.Lock()

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

    def get(self, token: str, owner: Any) -> Opened | None:
        with self._lock:
            items = self._by_owner.get(owner)
            opened = items.get(token) if items is not None else None
            if opened is None or items is None:
                return None
            items.move_to_end(token)
            return opened

    def of_kind(self, owner: Any, *kinds: str) -> list[Opened]:
        with self._lock:
            items = self._by_owner.get(owner) or OrderedDict()
            return [item for item in reversed(items.values()) if item.kind in kinds]
