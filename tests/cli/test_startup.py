from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfolio.cli import startup


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever a test left."""
    yield
    startup.over(freeze=False)
    gc.unfreeze()
    gc.enable()


def test_a_started_command_collects_again_with_its_start_up_frozen(collector: None) -> None:
    assert gc.get_freeze_count() == 0
    startup.begin()
    assert not gc.isenabled()
    startup.over()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_without_begin_the_collector_is_left_alone(collector: None) -> None:
    # What Typer's test runner does: the commands run, the entry point does not.
    startup.over()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    gc.disable()  # someone else's choice stands too
    startup.begin()
    startup.over()
    assert not gc.isenabled()


def test_collection_resumes_by_the_deadline_when_the_command_never_says(
        collector: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startup, "START_UP_SECONDS", 0.05)
    startup.begin()
    assert not gc.isenabled()
    deadline = time.monotonic() + 10
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # the deadline resumes collection, it freezes nothing


SCRIPT = """
import atexit, gc, sys
from agentfolio.cli import main
atexit.register(lambda: print(gc.get_freeze_count(), gc.isenabled(), file=sys.stderr))
sys.argv = ["agentfolio", *sys.argv[1:]]
main()
"""


def test_the_command_line_freezes_what_it_loaded_once_the_store_is_open(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTFOLIO_DATA_DIR": str(tmp_path)}
    env.pop("AGENTFOLIO_DATABASE_URL", None)
    (tmp_path / "empty").mkdir()
    done = subprocess.run([sys.executable, "-c", SCRIPT, "import", str(tmp_path / "empty")], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    frozen, enabled = done.stderr.split()[-2:]
    # SQLAlchemy, Typer, Rich and the application: far more than a bare interpreter holds.
    assert int(frozen) > 50_000
    assert enabled == "True"
