"""How a serving process keeps its memory: the C allocator arenas its threads share, and its
start-up objects out of Python's full collections.

glibc gives each new thread a malloc arena of its own, up to eight per core: the request
threads of a server (40 by default) would use sixteen on two cores.  Each arena keeps its
own working set and free pieces, so a server's resident size climbs towards the sum of
every arena's high-water mark.  Python threads allocate while holding the GIL, so they
gain next to nothing from arenas of their own: the server asks for two (in one six-minute
soak each, a last-third median of 178 MiB against 205 MiB; it does not stop the slower
growth a 30-minute soak still shows).  An operator's
``MALLOC_ARENA_MAX`` stands; where the C library is not glibc nothing is done.

What a serving process holds once it has started (modules, tables, compiled statements,
the application) lives as long as the process.  Python's full collections walk all of it
nonetheless, each time the objects that requests leave behind have grown by a quarter:
under OTLP ingest that cost ~20 µs per span, a tenth of a span's whole cost.
:func:`freeze_start_up` moves it out of the collector's sight once, before the first
request, so a full collection walks only what requests made.  Only a process that serves
freezes (``agentfolio serve`` and its workers): frozen objects are never collected as
garbage, so freezing again after requests ran would keep their cycles for ever.
"""

from __future__ import annotations

import ctypes
import gc
import os

__all__ = ["ARENAS", "freeze_start_up", "limit_arenas"]

#: Arenas a serving process asks for (``MALLOC_ARENA_MAX`` overrides it).
ARENAS = 2
#: ``mallopt``'s parameter for the arena limit (glibc's ``malloc.h``).
_M_ARENA_MAX = -8


def limit_arenas(count: int = ARENAS) -> bool:
    """Limit the malloc arenas that threads made from now on get; whether it was done."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, count))


def freeze_start_up() -> int:
    """Leave what the process holds now out of the collector's full collections (after a
    collection, so no garbage is frozen with it); how many objects that is."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
