"""prefactor-core's own README quick start, as published with the package, against
``agentfolio serve --demo`` with nothing but the two lines the server printed.

The quick start is read from the installed distribution's metadata (its README, as the
package index serves it) and run unchanged except for what a user must supply: the two
``HttpClientConfig`` lines, pasted from what the server printed, and ``call_llm``, the
user's own model call, which the quick start leaves undefined.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import metadata
from pathlib import Path

from tests.integrations.prefactor.conftest import DemoServer, everything, ok

CALL_LLM = 'async def call_llm():\n    return "Hi there"\n\n\n'


def published_quickstart() -> str:
    readme = metadata("prefactor-core").get_payload()  # type: ignore[attr-defined]
    section = readme.split("## Quick Start", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "prefactor-core's README has no Quick Start code block any more"
    return found.group(1)


def paste(code: str, demo: DemoServer) -> str:
    """Replace the quick start's api_url/api_token lines with the printed ones, keeping
    their indentation, as a user pasting over them would."""
    for name in ("api_url", "api_token"):
        code, replaced = re.subn(rf'^(\s*){name}=".*?",\s*$', lambda m, n=name: m.group(1) + demo.sdk_lines[n],
                                 code, count=1, flags=re.M)
        assert replaced == 1, f"the quick start has no {name} line"
    return code


def test_the_published_quickstart_runs_against_make_run(demo: DemoServer, tmp_path: Path) -> None:
    code = published_quickstart()
    assert 'agent_id="my-agent"' in code  # an external name, not an ID: the agent is made once
    script = tmp_path / "quickstart.py"
    script.write_text(CALL_LLM + paste(code, demo), encoding="utf-8")
    for _ in range(2):  # a second run finds the same agent
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Error" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]

    with demo.client() as client:
        agents = [agent for agent in everything(client, "/api/v1/agent") if agent["external_identifier"] == "my-agent"]
        assert [agent["name"] for agent in agents] == ["My Agent"]
        agent_id = agents[0]["id"]
        instances = everything(client, "/api/v1/agent_instance", agent_id=agent_id)
        assert [instance["status"] for instance in instances] == ["complete", "complete"]
        spans = everything(client, "/api/v1/agent_spans", agent_id=agent_id, include_summaries="true")
        assert len(spans) == 2
        for span in spans:
            assert (span["schema_name"], span["schema_title"], span["status"]) == ("agent:llm", "LLM Call", "complete")
            assert span["payload"] == {"model": "gpt-4", "prompt": "Hello"}
            assert span["result_payload"] == {"response": "Hi there"}
            assert span["validation"]["status"] == "valid"
            assert span["summary"] == "gpt-4: Hello → Hi there"
        version = ok(client.get(f"/api/v1/agent_instance/{instances[0]['id']}"))["details"]
        assert version["agent_version_id"] and version["purpose"] == "live"
