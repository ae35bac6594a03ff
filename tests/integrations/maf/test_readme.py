"""The README's "Use agentfolio from Microsoft Agent Framework" path, as a new user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx

from agentfolio.settings import Settings
from tests.storage import LiveServer, settings_env

ROOT = Path(__file__).resolve().parents[3]


def readme_demo() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use agentfolio from Microsoft Agent Framework", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"cat > maf_demo\.py <<'PY'\n(.*?)\nPY\n", section, re.S)
    assert found, "the README section no longer writes maf_demo.py"
    return found.group(1)


def test_the_readme_path_works(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    env = {**settings_env(settings), "PYTHONWARNINGS": "ignore"}
    env.pop("AGENTFOLIO_DATABASE_URL")  # the default store, as a new user has it
    script = tmp_path / "maf_demo.py"
    script.write_text(readme_demo(), encoding="utf-8")
    said = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        said.append(done.stdout.strip())
    assert said == ["I have seen 1 messages.", "I have seen 3 messages."]

    created = subprocess.run([sys.executable, "-m", "agentfolio.cli", "token", "create", "--account", "default"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    server = LiveServer(settings, cli_serve=True)
    try:
        page = httpx.get(f"{server.url}/sessions/readme-demo", headers={"Authorization": f"Bearer {token}"},
                         timeout=30)
        assert page.status_code == 200, page.text[:500]
        assert "I have seen 3 messages." in page.text and "echo" in page.text
    finally:
        server.stop()
    assert os.path.exists(settings.data_dir / "agentfolio.sqlite3")
