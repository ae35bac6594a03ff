"""The README's "Use agentfolio with the Prefactor SDKs" path, as a new user runs it:
``make run``'s server, the two lines it printed pasted into the README's script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.integrations.prefactor.conftest import DemoServer, everything
from tests.integrations.prefactor.test_quickstart import paste

ROOT = Path(__file__).resolve().parents[3]
SECTION = "## Use agentfolio with the Prefactor SDKs"


def readme_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split(SECTION, 1)[1].split("\n## ", 1)[0]


def test_make_run_prints_what_the_section_shows() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^run:.*\n\t\$\(VENV\)/bin/agentfolio serve --demo$", makefile, re.M)
    section = readme_section()
    assert "paste these two lines into HttpClientConfig(...):" in section


def test_the_readme_path_works(demo: DemoServer, tmp_path: Path) -> None:
    section = readme_section()
    assert "paste these two lines into HttpClientConfig(...):" in "\n".join(demo.printed)
    found = re.search(r"cat > quickstart\.py <<'PY'\n(.*?)\nPY\n\.venv/bin/python quickstart\.py", section, re.S)
    assert found, "the README section no longer writes and runs quickstart.py"
    script = tmp_path / "quickstart.py"
    script.write_text(paste(found.group(1), demo), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    with demo.client() as client:
        agents = [agent for agent in everything(client, "/api/v1/agent") if agent["external_identifier"] == "my-agent"]
        assert [agent["name"] for agent in agents] == ["My Agent"]
        spans = everything(client, "/api/v1/agent_spans", agent_id=agents[0]["id"], include_summaries="true")
        assert [span["summary"] for span in spans] == ["gpt-4: Hello → Hi there"]
        page = client.get(f"/agents/{agents[0]['id']}")
        assert page.status_code == 200 and "Terminate" not in page.text  # the run finished: nothing to stop
        assert "My Agent" in page.text
