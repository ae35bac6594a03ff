"""Work in a child process: stopped at its deadline, at its memory limit, on cancel_all,
and when its parent dies; its answers and its domain errors come back as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agentfolio import _deadline
from agentfolio._deadline import DeadlineExceededError, ShuttingDownError, run_with_deadline
from agentfolio.body.errors import TooComplexError
from tests.bombs import within_deadline

ROOT = Path(__file__).resolve().parents[1]


def add(a: int, b: int) -> int:
    return a + b


def spin_forever(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        pass


def hoard_memory() -> int:
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def refuse() -> None:
    raise TooComplexError("no, too complex")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def warm_fork_server() -> None:
    """Start the fork server before the clock of any test starts (it imports a lot once)."""
    _deadline.warm_up()


def test_the_answer_comes_back():
    assert run_with_deadline(add, 2, 3, timeout=30) == 5


def test_domain_errors_come_back_as_raised():
    with pytest.raises(TooComplexError, match="no, too complex"):
        run_with_deadline(refuse, timeout=30)


def test_work_past_its_deadline_is_stopped_and_its_process_is_gone(tmp_path: Path):
    pid_file = tmp_path / "pid"
    with pytest.raises(DeadlineExceededError, match="took longer than 3 s and was stopped") as raised:
        within_deadline(lambda: run_with_deadline(spin_forever, str(pid_file), timeout=3, what="spinning"))
    assert raised.value.code == "too_complex"
    assert pid_file.exists(), "the child never started"
    assert wait_gone(int(pid_file.read_text())), "the child still runs after its deadline"


def test_work_past_its_memory_is_stopped():
    with pytest.raises(DeadlineExceededError, match="needed more than 256 MiB"):
        within_deadline(lambda: run_with_deadline(hoard_memory, timeout=60, memory_bytes=256 << 20))


def test_a_big_parent_leaves_its_child_the_whole_budget():
    """A long-running process maps more than one budget of address space; the child it
    forks starts with all of it and still has its budget to work in (and no more)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import mmap
        from agentfolio._deadline import DeadlineExceededError, run_with_deadline
        from tests.test_deadline import add, hoard_memory
        mapped = mmap.mmap(-1, 1536 << 20)  # address space only: never touched
        print(run_with_deadline(add, 2, 3, timeout=30, memory_bytes=256 << 20))
        try:
            run_with_deadline(hoard_memory, timeout=30, memory_bytes=256 << 20)
        except DeadlineExceededError as error:
            print(error)
    """)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["5", "the work needed more than 256 MiB and was stopped"]


def test_cancel_all_stops_running_work_at_once(tmp_path: Path):
    pid_file = tmp_path / "pid"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            run_with_deadline(spin_forever, str(pid_file), timeout=120)
        except BaseException as error:
            errors.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        end = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < end:
            time.sleep(0.05)
        _deadline.cancel_all()
        worker.join(10)
        assert not worker.is_alive(), "cancel_all did not end the waiting caller"
        assert errors and isinstance(errors[0], ShuttingDownError) and errors[0].code == "service_unavailable"
        assert wait_gone(int(pid_file.read_text()))
        with pytest.raises(ShuttingDownError):
            run_with_deadline(add, 1, 1, timeout=5)
    finally:
        _deadline.reset_after_shutdown()
    assert run_with_deadline(add, 1, 1, timeout=30) == 2


@pytest.mark.parametrize("threaded", [False, True], ids=["forked", "from-the-fork-server"])
def test_the_child_dies_with_its_parent(tmp_path: Path, threaded: bool):
    """A server killed hard (SIGKILL: no clean-up runs) leaves no check burning a core,
    whether its child was forked directly or by the fork server (which a threaded server uses)."""
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import threading
        from agentfolio._deadline import run_with_deadline
        from tests.test_deadline import spin_forever
        if {threaded!r}:
            threading.Thread(target=threading.Event().wait, daemon=True).start()
        run_with_deadline(spin_forever, {str(pid_file)!r}, timeout=600)
    """)], cwd=ROOT)
    child = None
    try:
        end = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < end:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        assert wait_gone(child), "the child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("threaded", [False, True], ids=["fork", "forkserver"])
def test_no_descriptor_outlives_its_check(tmp_path: Path, threaded: bool):
    """Each check's pipes are closed when it ends, not when the garbage collector gets round
    to its process object: a busy server otherwise piles up descriptors between collections."""
    import gc

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    def checks() -> None:
        for _ in range(8):
            assert run_with_deadline(add, 1, 2, timeout=30) == 3
        for _ in range(2):
            with pytest.raises(TooComplexError):
                run_with_deadline(refuse, timeout=30)
        for _ in range(2):
            with pytest.raises(DeadlineExceededError):
                run_with_deadline(spin_forever, str(tmp_path / "pid"), timeout=1)

    checks()  # the first run may open what stays open for good (the fork server's socket)
    gc.collect()
    gc.disable()
    try:
        before = open_fds()
        if threaded:  # a second thread makes the checks go through the fork server, as in a server
            within_deadline(checks, seconds=60)
        else:
            checks()
        after = open_fds()
    finally:
        gc.enable()
    assert after - before <= 1, f"{after - before} descriptors left open by 12 checks"
