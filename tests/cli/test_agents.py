"""``agentfolio agents create``: the agent's id and a deployment token, one per line, that
the registry then accepts; running it again finds the same agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentfolio.app import Agentfolio
from agentfolio.settings import Settings


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"AGENTFOLIO_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", "agents", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_agents_create_prints_an_id_and_a_working_deployment_token(tmp_path: Path) -> None:
    first = run(tmp_path, "create", "my-agent")
    assert first.returncode == 0, first.stderr
    agent_id, token = first.stdout.split()
    again = run(tmp_path, "create", "my-agent")
    assert again.returncode == 0 and again.stdout.split()[0] == agent_id
    assert "found agent" in again.stderr

    with Agentfolio.open(Settings.from_env({}).with_(data_dir=tmp_path)) as folio:
        principal = folio.registry.authenticate(token)
        assert principal is not None and principal.deployed and principal.agent_id == agent_id
        assert principal.account.name == "default"
