"""``agentfolio db status|upgrade`` as an operator runs them, on both backends."""

from __future__ import annotations

import json
import subprocess
import sys

from agentfolio.settings import Settings
from tests.storage import settings_env


def run(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", "db", *args], capture_output=True, text=True,
                          env={**settings_env(settings), "COLUMNS": "200", **env}, timeout=120)


def test_status_says_what_an_upgrade_runs_and_upgrade_runs_it_once(settings: Settings) -> None:
    pending = run(settings, "status", "--json")
    assert pending.returncode == 1, pending.stderr
    before = json.loads(pending.stdout)
    assert before["state"] == "empty" and before["current"] is None and before["pending"][-1] == before["head"]

    upgraded = run(settings, "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"→ {before['head']}" in upgraded.stdout and f"{len(before['pending'])} migration(s)" in upgraded.stdout

    current = run(settings, "status", "--json")
    assert current.returncode == 0 and json.loads(current.stdout)["pending"] == []
    again = run(settings, "upgrade")
    assert again.returncode == 0 and "already up to date" in again.stdout


def test_an_unreachable_database_is_one_line_without_a_traceback(settings: Settings) -> None:
    unreachable = settings.with_(database_url="postgresql+psycopg://nobody:secret@127.0.0.1:1/nothing")
    for command in ("status", "upgrade"):
        done = run(unreachable, command)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("error: cannot reach the database"), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_a_bad_setting_is_a_usage_error(settings: Settings) -> None:
    done = run(settings, "status", AGENTFOLIO_MIGRATE="sometimes")
    assert done.returncode == 2 and "AGENTFOLIO_MIGRATE" in done.stderr
