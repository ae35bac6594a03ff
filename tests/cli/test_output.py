"""Stored text printed by the CLI is text: no Rich markup, no terminal escape sequences."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentfolio.cli.output import Safe, clean, one_line

HOSTILE = ["[/oops]", "[link=https://evil.example]click[/link]", "\x1b]0;pwned\x07", "\x1b[2J\x1b[H",
           "abc\u202edcba", "\x9b31m", "tab\tand\nnewline"]

# ESC, BEL, CSI (C1), and the bidi override: none may reach a terminal.
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e")


@pytest.mark.parametrize("text", HOSTILE)
def test_clean_text_prints_as_itself_through_rich_markup(text: str) -> None:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(clean(text), soft_wrap=True)
    printed = out.getvalue()
    assert not any(ch in printed for ch in FORBIDDEN)
    for visible in ("[/oops]", "[link=https://evil.example]"):
        if visible in text:
            assert visible in printed


@given(st.text())
def test_one_line_has_no_controls_and_no_newlines(text: str) -> None:
    line = one_line(text)
    assert "\n" not in line and not any(ch in line for ch in FORBIDDEN)
    assert len(line) <= 200


def test_safe_strips_controls_a_table_lays_out() -> None:
    table = Table("name")
    for text in HOSTILE:
        table.add_row(Text(text))
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(Safe(table))
    assert not any(ch in out.getvalue() for ch in FORBIDDEN)


def test_sessions_ls_prints_a_hostile_agent_name_as_text(tmp_path: Path) -> None:
    from agentfolio.samples import synthetic_durable_state

    env = {"AGENTFOLIO_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    document = tmp_path / "hostile.json"
    document.write_bytes(orjson.dumps(synthetic_durable_state(2)))
    imported = subprocess.run([sys.executable, "-m", "agentfolio.cli", "import", str(document), "--agent",
                               "[/oops]\x1b]0;pwned\x07"], capture_output=True, text=True, env=env, timeout=120)
    assert imported.returncode == 0, imported.stderr
    listed = subprocess.run([sys.executable, "-m", "agentfolio.cli", "sessions", "ls"], capture_output=True,
                            text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "[/oops]" in listed.stdout
    assert not any(ch in listed.stdout for ch in FORBIDDEN)
