"""An importer killed with SIGKILL mid-import: every session it reported is intact, none is
half-written, and re-running the import finishes the job without duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import settings_env


def write_sessions(folder: Path, count: int) -> dict[str, bytes]:
    folder.mkdir()
    written = {}
    for number in range(count):
        entries = []
        for turn in range(400 + 37 * number):
            entries.append({"$type": "request", "createdAt": f"2025-01-01T00:00:{turn % 60:02d}Z",
                            "messages": [{"role": "user", "contents": [{"$type": "text",
                                                                        "text": f"s{number} t{turn} " + "w" * 80}]}]})
        data = orjson.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": entries}, "n": number})
        path = folder / f"session-{number:03d}.json"
        path.write_bytes(data)
        written[str(path)] = data
    return written


def test_sigkill_mid_import_leaves_only_whole_sessions(settings: Settings, tmp_path: Path) -> None:
    sources = write_sessions(tmp_path / "in", 40)
    with Store.open(settings):  # migrate first, so the importer starts importing at once
        pass
    importer = subprocess.Popen([sys.executable, "-m", "agentfolio.cli", "import", str(tmp_path / "in"), "--jsonl",
                                 "--account", "crash"], env=settings_env(settings), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    reported: dict[str, str] = {}
    assert importer.stdout is not None
    for line in importer.stdout:
        event = orjson.loads(line)
        assert event["status"] == "stored", event
        reported[event["path"]] = event["id"]
        if len(reported) == 5:
            os.kill(importer.pid, signal.SIGKILL)
            break
    importer.wait()
    assert importer.returncode == -signal.SIGKILL
    assert len(reported) == 5

    by_id = {}
    with Store.open(settings) as store:
        account = store.accounts.require("crash")
        stored = list(store.sessions.of(account).iter_all())
        assert {info.id for info in stored} >= set(reported.values())
        assert len(stored) < len(sources), "the importer was meant to be killed before it finished"
        for path, data in sources.items():
            by_id[Path(path).stem] = data
        for info in stored:
            source = next(data for stem, data in by_id.items() if info.id.startswith(stem + "-"))
            assert store.sessions.of(account).get_bytes(info.id)[1] == source  # whole, never half-written

    rerun = subprocess.run([sys.executable, "-m", "agentfolio.cli", "import", str(tmp_path / "in"), "--jsonl",
                            "--account", "crash"], env=settings_env(settings), capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()
    statuses = [orjson.loads(line)["status"] for line in rerun.stdout.splitlines()]
    assert statuses.count("skipped") == len(stored) and statuses.count("stored") == len(sources) - len(stored)
    with Store.open(settings) as store:
        account = store.accounts.require("crash")
        assert len(list(store.sessions.of(account).iter_all())) == len(sources)
