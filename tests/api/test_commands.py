"""The store commands as a user runs them: import (resumable), export, sessions ls, token create."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import settings_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "durable_state"


def run(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", *args], env=settings_env(settings),
                          capture_output=True, text=True, timeout=120)


def test_import_export_ls(settings: Settings, store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schemaVersion": "1.0.0", "data": ')
    first = run(settings, "import", str(FIXTURES), str(bad), "--jsonl")
    assert first.returncode == 1
    events = [orjson.loads(line) for line in first.stdout.splitlines()]
    stored = {e["path"]: e["id"] for e in events if e["status"] == "stored"}
    assert len(stored) == len(list(FIXTURES.glob("*.json")))
    assert next(e for e in events if e["status"] == "failed")["path"] == str(bad)
    assert "Traceback" not in first.stderr and f"{bad}: line 1" in first.stderr

    again = run(settings, "import", str(FIXTURES))
    assert again.returncode == 0 and f"0 stored, {len(stored)} already stored, 0 failed" in again.stderr

    for path, session_id in stored.items():
        exported = run(settings, "export", session_id)
        assert exported.returncode == 0, exported.stderr
        assert orjson.loads(exported.stdout) == orjson.loads(Path(path).read_bytes())
    canonical = run(settings, "export", next(iter(stored.values())), "--format", "canonical")
    assert orjson.loads(canonical.stdout)["agentfolio"] == "1"
    missing = run(settings, "export", "nope")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no session 'nope'")

    listed = run(settings, "sessions", "ls", "--json", "--account", "default")
    assert {s["id"] for s in orjson.loads(listed.stdout)} == set(stored.values())
    table = run(settings, "sessions", "ls")
    assert all(session_id in table.stdout for session_id in stored.values())


def test_token_create(settings: Settings, store: Store) -> None:
    created = run(settings, "token", "create", "--account", "team-a")
    assert created.returncode == 0
    token = created.stdout.strip()
    assert store.accounts.authenticate(token).name == "team-a"
    refused = run(settings, "token", "create", "--account", "bad name!")
    assert refused.returncode == 2 and "account name" in refused.stderr
