"""What the benchmarks share: the best wall time of a few runs, with the garbage
collector settled before and held off during each run so a collection never lands in one."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best_of(repeat: int, action: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            action()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best
