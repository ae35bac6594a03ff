"""A small thread-safe LRU map, for the caches that hold compiled or parsed things."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Lru"]

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``size`` items, and with ``weigh`` at most ``max_weight`` in all (the
    newest item is always kept); the least recently used go first."""

    def __init__(self, size: int, *, max_weight: int | None = None,
                 weigh: Callable[[V], int] | None = None) -> None:
        self.size = size
        self.max_weight = max_weight
        self._weigh = weigh
        self._weight = 0
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None and self._weigh is not None:
                self._weight -= self._weigh(old)
            self._items[key] = value
            if self._weigh is not None:
                self._weight += self._weigh(value)
            while len(self._items) > self.size or (
                    self.max_weight is not None and self._weight > self.max_weight and len(self._items) > 1):
                _, dropped = self._items.popitem(last=False)
                if self._weigh is not None:
                    self._weight -= self._weigh(dropped)
        return value

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The cached value, or ``build()`` cached (built outside the lock)."""
        found = self.get(key)
        return found if found is not None else self.put(key, build())

    def pop(self, key: K) -> V | None:
        with self._lock:
            value = self._items.pop(key, None)
            if value is not None and self._weigh is not None:
                self._weight -= self._weigh(value)
            return value

    def values(self) -> list[V]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._items.values()))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._items)
