"""A command's start-up, out of Python's garbage collection.

Starting, a command imports libraries (SQLAlchemy, Typer, Rich, pydantic, the formats)
whose few hundred thousand objects live as long as the command does; the collector's full
collections walked them all several times before the command began its work, and the
interpreter's collection at exit once more.  So :func:`begin` (the ``agentfolio``
entry point) turns collection off, and :func:`over` turns it back on once the command has
what it needs (its store open: :func:`agentfolio.cli.output.open_folio`), first freezing
what the process holds out of later full collections.  At the latest
:data:`START_UP_SECONDS` after :func:`begin` collection resumes anyway, so a command that
never opens the store (``validate`` of many files) still collects its garbage.

Only a process that :func:`begin` started does any of this: the same commands run in a
test's process (Typer's runner calls the app, not the entry point) leave its collector
alone, as a library call must.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["START_UP_SECONDS", "begin", "over"]

#: Seconds after :func:`begin` at which collection resumes whether or not :func:`over` came.
START_UP_SECONDS = 2.0
_lock = threading.Lock()
#: Set from :func:`begin` until :func:`over`: the start-up under way.
_timer: threading.Timer | None = None


def begin() -> None:
    """Turn collection off for the start-up of the command this process runs."""
    global _timer
    with _lock:
        if _timer is not None or not gc.isenabled():
            return  # started already, or someone else keeps collection off
        gc.disable()
        _timer = threading.Timer(START_UP_SECONDS, over, kwargs={"freeze": False})
        _timer.daemon = True
        _timer.start()


def over(*, freeze: bool = True) -> None:
    """The command has started: leave what it holds out of later full collections
    (``freeze``) and collect again.  Nothing unless :func:`begin` started it and this has
    not run since (the entry point calls it once more as the command ends)."""
    global _timer
    with _lock:
        if _timer is None:
            return
        _timer.cancel()
        _timer = None
        if freeze:
            gc.freeze()
        gc.enable()
