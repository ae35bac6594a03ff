"""Admission: at most ``limit`` requests of one kind at a time in this process.

A server that admits every heavy write makes each wait for all those before it (on
SQLite, for the one write lock; on one worker, for the one core), so with many clients
every request is slow and memory grows with the queue.  A gate admits a bounded number
and says no to the rest, which the front end answers "busy, retry after
:data:`RETRY_AFTER_SECONDS`" (HTTP 429 with ``Retry-After``): the requests it takes stay
as fast as the server is, and a client that is told no waits outside instead of inside.

Saying no at once has a cost of its own: a place freed while every refused client sleeps
its ``Retry-After`` stays empty, so under load the server idles between requests.  A gate
may therefore keep a few requests waiting (``waiters``, each at most ``wait_seconds``,
first come first served): a place given back goes straight to the first of them, so the
places stay busy while clients are refused.  Waiting costs a waiter nothing but its
connection (its body is not read before it holds a place); past its deadline it is told
no like the others.  Keep the deadline well under any client's timeout and about the
time one request takes: a waiter's wait adds to the latency of its answer.

One gate per kind of work per process (the OTLP receiver's, the registry's bulk route);
with ``--workers N`` or several servers each process has its own.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque

__all__ = ["RETRY_AFTER_SECONDS", "AdmissionGate"]

#: Seconds a client told "busy" is asked to wait before trying again: the time one
#: admitted request usually takes, and the first delay of the Prefactor SDKs' own backoff.
RETRY_AFTER_SECONDS = 1


class AdmissionGate:
    """Counts the requests admitted and not yet released, and the few waiting for a
    place; thread-safe (a place may be given back from any thread)."""

    def __init__(self, limit: int, *, waiters: int = 0, wait_seconds: float = 0.0) -> None:
        self.limit = limit
        #: Requests that may wait for a place at once (more are refused at once).
        self.max_waiters = waiters if wait_seconds > 0 else 0
        #: How long a request waits for a place before it is refused.
        self.wait_seconds = wait_seconds
        self._admitted = 0
        # Each waiter's turn, oldest first; a released place is handed to the first.
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        #: When the last request was released with none left in hand (monotonic seconds).
        self._idle_since = 0.0

    def admit(self) -> bool:
        """Take a free place now; ``False`` when all ``limit`` are taken (refuse: retry
        later).  Every ``True`` must be followed by one :meth:`release`."""
        with self._lock:
            return self._take()

    def _take(self) -> bool:
        # A place is never free while someone waits (release hands it over), but a
        # newcomer must not pass a waiter in the instant between the two either.
        if self._admitted >= self.limit or self._waiting:
            return False
        self._admitted += 1
        return True

    async def enter(self) -> bool:
        """Take a place, waiting for one up to :attr:`wait_seconds` when fewer than
        :attr:`max_waiters` already wait; ``False``: refused (all places taken and the
        waiting room full, or the deadline passed).  Every ``True`` must be followed by
        one :meth:`release`.  A cancelled waiter (its request ended) leaves the line."""
        with self._lock:
            if self._take():
                return True
            if len(self._waiting) >= self.max_waiters:
                return False
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(turn)
        try:
            await asyncio.wait_for(turn, self.wait_seconds)
        except BaseException as stopped:  # the deadline, or the request cancelled while waiting
            self._leave(turn)
            if isinstance(stopped, TimeoutError):
                return False
            raise
        return True

    def _leave(self, turn: asyncio.Future[None]) -> None:
        """A waiter gives up: out of the line, or, when a place was handed to it in the
        same instant, that place goes on to the next (or is freed)."""
        with self._lock:
            try:
                self._waiting.remove(turn)
                return
            except ValueError:
                pass
        self.release()

    def release(self) -> None:
        """Give a place back: to the first waiter if any, else free."""
        while True:
            with self._lock:
                if not self._waiting:
                    self._admitted -= 1
                    if not self._admitted:
                        self._idle_since = time.monotonic()
                        self._idle.notify_all()
                    return
                turn = self._waiting.popleft()  # the place stays counted: it is now this waiter's
            try:
                turn.get_loop().call_soon_threadsafe(_grant, turn)
                return
            except RuntimeError:  # its event loop is closed (the server stopped): the next one
                continue

    def wait_quiet(self, quiet: float, timeout: float) -> bool:
        """Wait until no request has held a place for ``quiet`` seconds, at most
        ``timeout`` seconds; whether that came.  (Requests that follow one another closely
        leave the gate empty for an instant between them: that is no pause.)"""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                left = deadline - time.monotonic()
                if not self._idle.wait_for(lambda: not self._admitted, max(0.0, left)):
                    return False
                still = quiet - (time.monotonic() - self._idle_since)
                if still <= 0:
                    return True
                if still > deadline - time.monotonic():
                    return False
                # Released only when a request ends: a request arriving meanwhile is seen after.
                self._idle.wait(still)

    @property
    def admitted(self) -> int:
        """Requests holding a place now (a place being handed to a waiter counts)."""
        return self._admitted

    @property
    def waiting(self) -> int:
        """Requests waiting for a place now."""
        return len(self._waiting)


def _grant(turn: asyncio.Future[None]) -> None:
    # A waiter that gave up in the meantime found itself out of the line and passed the
    # place on itself (AdmissionGate._leave): nothing to do here then.
    if not turn.done():
        turn.set_result(None)
