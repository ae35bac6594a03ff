"""Admission: at most ``limit`` requests of one kind at a time in this process.

A server that admits every heavy write makes each wait for all those before it (on
SQLite, for the one write lock; on one worker, for the one core), so with many clients
every request is slow and memory grows with the queue.  A gate admits a bounded number
and says no to the rest, which the front end answers "busy, retry after
:data:`RETRY_AFTER_SECONDS`" (HTTP 429 with ``Retry-After``): the requests it takes stay
as fast as the server is, and a client that is told no waits outside instead of inside.

One gate per kind of work per process (the OTLP receiver's, the registry's bulk route);
with ``--workers N`` or several servers each process has its own.
"""

from __future__ import annotations

import threading

__all__ = ["RETRY_AFTER_SECONDS", "AdmissionGate"]

#: Seconds a client told "busy" is asked to wait before trying again: the time one
#: admitted request usually takes, and the first delay of the Prefactor SDKs' own backoff.
RETRY_AFTER_SECONDS = 1


class AdmissionGate:
    """Counts the requests admitted and not yet released; thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._admitted = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def admit(self) -> bool:
        """Take a place; ``False`` when all ``limit`` are taken (refuse: retry later).
        Every ``True`` must be followed by one :meth:`release`."""
        with self._lock:
            if self._admitted >= self.limit:
                return False
            self._admitted += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._admitted -= 1
            if not self._admitted:
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request holds a place, at most ``timeout`` seconds; whether none does."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._admitted, timeout)

    @property
    def admitted(self) -> int:
        """Requests holding a place now."""
        return self._admitted
