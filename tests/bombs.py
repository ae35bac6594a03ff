"""The reproductions of the glob and schema bombs, shared by the tests that must survive them,
and a helper that fails a test whose work is still running at a deadline."""

from __future__ import annotations

import faulthandler
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Far above any bounded answer here (well under a second) and far below the bombs (minutes).
DEADLINE_SECONDS = 20.0

#: A name glob with 20 stars, and a name that nearly matches it: Python's ``re`` takes
#: time exponential in the stars to say no.
TWENTY_STARS = "/" + "*a" * 20
NEAR_MISS = "/" + "a" * 60 + "b"
#: ``/**/a`` sixty times over.
GLOBSTAR_CHAIN = "/**/a" * 60
#: A glob whose automaton has 2^k states: a compatibility check involving it builds for minutes.
EXPLODING = "/x/*a" + "?" * 14


def two_big_schemas(parts: int = 2_000) -> tuple[dict[str, object], dict[str, object]]:
    output = {"parts": [{"name": f"/p{i}/*", "required": i % 2 == 0} for i in range(parts)]}
    input_ = {"parts": [{"name": f"/q{i}/*"} for i in range(parts)]}
    return output, input_


#: Extra time before the last resort below ends the whole test process.
_LAST_RESORT_SECONDS = 10.0


def within_deadline(work: Callable[[], T], seconds: float = DEADLINE_SECONDS) -> T:
    """Run ``work`` on a daemon thread; fail if it has not finished by the deadline.

    Work stuck in C code that holds the GIL (Python's ``re`` backtracking) would keep the
    test's own thread from ever checking the deadline, so faulthandler's watchdog, which
    needs no GIL, ends the process a little later with every thread's traceback: a
    failed run, never a hung one."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    faulthandler.dump_traceback_later(seconds + _LAST_RESORT_SECONDS, exit=True, file=sys.stderr)
    try:
        thread.start()
        thread.join(seconds)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
