"""Run a function in a child process that is killed when its deadline passes.

A thread cannot be stopped, so work whose cost cannot be bounded beforehand (deciding
schema compatibility builds automata whose size only shows while they are built) runs in
a child process instead:

* the child is killed (SIGKILL) at the deadline, so a caller never waits longer than it
  asked and a request whose client left does not keep a core busy;
* the kernel bounds it too: CPU seconds (``RLIMIT_CPU``) and address space
  (``RLIMIT_AS``: the memory budget on top of what the child starts with); and it ends
  itself when the process that asked for it is gone (a watchdog thread, plus
  ``PR_SET_PDEATHSIG`` on Linux for its direct parent), so nothing
  outlives a server that was stopped hard, even one whose fork server lingers;
* :func:`cancel_all` kills every running child at once: a server calls it when asked to
  shut down, so no request holds the shutdown up (:func:`cancel_on_shutdown_signals`);
* at most :data:`MAX_CONCURRENT_WORKERS` run at once; a caller waits for a slot within its
  own deadline.

A single-threaded process (a CLI command) forks its children directly; a threaded one
(a server) forks them from a fork server, a clean process started once (:func:`warm_up`),
because ``fork`` would copy the server's threads' locks mid-use.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any, TypeVar

from agentfolio.errors import AgentfolioError

__all__ = ["DeadlineExceededError", "ShuttingDownError", "WorkerFailedError", "cancel_all",
           "cancel_on_shutdown_signals", "process_alive", "run_with_deadline", "warm_up"]

T = TypeVar("T")

MAX_CONCURRENT_WORKERS = 2
DEFAULT_MEMORY_BYTES = 1 << 30
#: Modules the fork server imports once, so that each child starts warm.
PRELOAD = ["agentfolio.body.compat"]
_POLL_SECONDS = 0.05


class DeadlineExceededError(AgentfolioError):
    """The work did not finish in time (or ran out of its memory) and was stopped."""

    code = "too_complex"


class ShuttingDownError(AgentfolioError):
    """The work was stopped because the process is shutting down."""

    code = "service_unavailable"


class WorkerFailedError(AgentfolioError):
    """The child died without an answer (killed from outside, or crashed)."""

    code = "internal_error"


_lock = threading.Lock()
_running: set[Any] = set()
_slots = threading.BoundedSemaphore(MAX_CONCURRENT_WORKERS)
_shutting_down = threading.Event()


def _context() -> Any:
    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def warm_up() -> None:
    """Start the fork server now (it imports :data:`PRELOAD` once, which takes a while),
    so that a server's first check does not pay for it."""
    if sys.platform.startswith("linux"):
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        forkserver.ensure_running()


def _limit_self(cpu_seconds: int, memory_bytes: int) -> None:
    """In the child: die with the parent, and let the kernel enforce CPU and memory."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        # The budget is on top of what the child already maps: a child forked from a big
        # process (a long-running server, a test run) starts with all of its address space.
        limit = _mapped_bytes() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _mapped_bytes() -> int:
    """This process's address space now (0 where the system does not say)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def process_alive(pid: int) -> bool:
    """Whether a process of that id is running (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch_owner(owner: int) -> None:
    """In the child: end at once when the process that asked for this work is gone."""
    def watch() -> None:
        while process_alive(owner):
            time.sleep(_POLL_SECONDS * 4)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="owner-watchdog").start()


def _child(send: Connection, function: Callable[..., Any], args: tuple[Any, ...], cpu_seconds: int,
           memory_bytes: int, owner: int) -> None:
    _limit_self(cpu_seconds, memory_bytes)
    _watch_owner(owner)
    try:
        outcome: tuple[str, Any] = ("ok", function(*args))
    except MemoryError:
        outcome = ("memory", None)
    except RecursionError:
        outcome = ("memory", None)
    except AgentfolioError as error:
        outcome = ("error", error)
    except Exception as error:
        outcome = ("crash", f"{type(error).__name__}: {error}")
    try:
        send.send(outcome)
    except Exception as error:
        send.send(("crash", f"cannot send the answer back: {type(error).__name__}: {error}"))
    finally:
        send.close()


@contextlib.contextmanager
def _slot(deadline: float, what: str, timeout: float) -> Iterator[None]:
    while not _slots.acquire(timeout=_POLL_SECONDS):
        if _shutting_down.is_set():
            raise ShuttingDownError(f"{what} was not started: the server is shutting down")
        if time.monotonic() >= deadline:
            raise DeadlineExceededError(f"{what} did not start within {timeout:g} s: too many checks are running")
    try:
        yield
    finally:
        _slots.release()


def _stop(process: Any) -> None:
    """Kill, reap and release: ``close`` frees the process's pipes now, not when the garbage
    collector reaches it (an exception's traceback keeps it in a reference cycle)."""
    if process.is_alive():
        process.kill()
    if process.pid is not None:
        process.join()
    with contextlib.suppress(ValueError, AttributeError):  # never started: nothing to free
        process.close()


def run_with_deadline(function: Callable[..., T], *args: Any, timeout: float, what: str = "the work",
                      memory_bytes: int = DEFAULT_MEMORY_BYTES) -> T:
    """``function(*args)`` in a child process; its answer, or :class:`DeadlineExceededError`
    when it takes longer than ``timeout`` seconds or more than ``memory_bytes`` of memory,
    :class:`ShuttingDownError` when :func:`cancel_all` stops it. An :class:`AgentfolioError`
    the function raises is raised here as it was. ``function`` and ``args`` must pickle."""
    if _shutting_down.is_set():
        raise ShuttingDownError(f"{what} was not started: the server is shutting down")
    deadline = time.monotonic() + timeout
    too_long = DeadlineExceededError(f"{what} took longer than {timeout:g} s and was stopped")
    with _slot(deadline, what, timeout):
        context = _context()
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_child, daemon=True, name=f"agentfolio-{what}",
                                  args=(send, function, args, int(timeout) + 2, memory_bytes, os.getpid()))
        with _lock:
            _running.add(process)
        try:
            process.start()
            send.close()
            while not receive.poll(_POLL_SECONDS):
                if _shutting_down.is_set():
                    raise ShuttingDownError(f"{what} was stopped: the server is shutting down")
                if time.monotonic() >= deadline:
                    raise too_long
                if not process.is_alive() and not receive.poll(0):
                    raise WorkerFailedError(f"{what} ended without an answer (exit code {process.exitcode})")
            try:
                kind, value = receive.recv()
            except EOFError:
                if _shutting_down.is_set():
                    raise ShuttingDownError(f"{what} was stopped: the server is shutting down") from None
                if process.exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
                    raise too_long from None
                raise WorkerFailedError(f"{what} ended without an answer (exit code {process.exitcode})") from None
        finally:
            with _lock:
                _running.discard(process)
            _stop(process)
            receive.close()
    if kind == "ok":
        return value  # type: ignore[no-any-return]
    if kind == "memory":
        raise DeadlineExceededError(f"{what} needed more than {memory_bytes / 2**20:,.0f} MiB and was stopped")
    if kind == "error":
        raise value
    raise WorkerFailedError(f"{what} failed: {value}")


def cancel_all() -> None:
    """Stop every running child now and refuse new ones: the process is shutting down."""
    _shutting_down.set()
    with _lock:
        running = list(_running)
    for process in running:
        with contextlib.suppress(Exception):
            if process.is_alive():
                process.kill()


def shutting_down() -> bool:
    """Whether a shutdown signal arrived (a server then answers not ready)."""
    return _shutting_down.is_set()


def reset_after_shutdown() -> None:
    """Accept work again (a server started anew in the same process, as tests do)."""
    _shutting_down.clear()


def cancel_on_shutdown_signals() -> Callable[[], None]:
    """Make SIGTERM and SIGINT first :func:`cancel_all`, then do what they did before
    (uvicorn's graceful shutdown, which waits for running requests: they now end at once).
    Returns the function that puts the previous handlers back. Only the main thread can
    set signal handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel_all()
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)
        elif before == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handler)

    def restore() -> None:
        for signum, before in previous.items():
            if signal.getsignal(signum) is handler:
                signal.signal(signum, before)

    return restore
