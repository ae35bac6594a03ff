"""``agentfolio token create|ls|revoke`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"AGENTFOLIO_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", "token", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_tokens_are_listed_without_their_secret_and_revoked_by_id(tmp_path: Path) -> None:
    created = run(tmp_path, "create", "--account", "alice", "--label", "laptop")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    listed = run(tmp_path, "ls", "--account", "alice", "--json")
    assert listed.returncode == 0, listed.stderr
    tokens = json.loads(listed.stdout)
    assert [(t["label"], t["revoked"]) for t in tokens] == [("laptop", False)]
    assert token not in listed.stdout and token not in run(tmp_path, "ls", "--account", "alice").stdout

    assert run(tmp_path, "revoke", tokens[0]["id"], "--account", "bob").returncode != 0
    revoked = run(tmp_path, "revoke", tokens[0]["id"], "--account", "alice")
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(run(tmp_path, "ls", "--account", "alice", "--json").stdout)[0]["revoked"] is True

    from agentfolio.settings import Settings
    from agentfolio.store import Store

    with Store.open(Settings(data_dir=tmp_path)) as store:
        assert store.accounts.authenticate(token) is None
