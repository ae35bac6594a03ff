"""A server's threads share two malloc arenas, not one each (glibc, unless the operator
set ``MALLOC_ARENA_MAX``)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

# Eight threads that each allocate (glibc gives each new thread an arena of its own, up
# to eight per core), then glibc's own account of its arenas: one "Arena N:" per arena.
THREADS = """
import ctypes, sys, threading
from agentfolio.server import memory
if sys.argv[1] == "server":
    from agentfolio.server import create_server
    from agentfolio.settings import Settings
    import tempfile
    create_server(Settings.from_env({"AGENTFOLIO_DATA_DIR": tempfile.mkdtemp()}), viewer=False)
kept, ready, go = [], threading.Barrier(8), threading.Event()
def work():
    ready.wait()
    kept.append([bytes(1500) for _ in range(100)])
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ctypes.CDLL("libc.so.6").malloc_stats()
"""


def _arenas(mode: str) -> int:
    env = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", THREADS, mode], capture_output=True, text=True, env=env, check=True)
    return sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))


def _glibc() -> bool:
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "mallopt")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc(), reason="not glibc: there are no malloc arenas to limit")
def test_a_server_process_shares_two_malloc_arenas_among_its_threads() -> None:
    assert _arenas("plain") > 2  # glibc alone: one per thread
    assert _arenas("server") <= 2


# A serving process as uvicorn's factory makes it, then what the collector sees: objects
# it walks, objects frozen, and whether garbage made afterwards is still collected.
FROZEN = """
import gc, json, sys, tempfile, os
os.environ["AGENTFOLIO_DATA_DIR"] = tempfile.mkdtemp()
from agentfolio.server import app_from_env
if sys.argv[1] == "served":
    app_from_env()
else:
    from agentfolio.server import create_server
    from agentfolio.settings import Settings
    create_server(Settings.from_env())
walked = len(gc.get_objects())
class Node:
    pass
first, second = Node(), Node()
first.other, second.other = second, first  # a cycle only the collector can free
del first, second
print(json.dumps({"walked": walked, "frozen": gc.get_freeze_count(), "collected": gc.collect()}))
"""


def _collector(mode: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", FROZEN, mode], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_a_serving_process_leaves_its_start_up_out_of_full_collections() -> None:
    built, served = _collector("built"), _collector("served")
    assert built["frozen"] == 0  # building a server (as tests and embedders do) freezes nothing
    assert served["frozen"] > 10 * served["walked"]  # what start-up made is out of the walk
    assert served["frozen"] > built["walked"] // 2
    assert served["collected"] >= 2  # garbage made after start-up is still collected
