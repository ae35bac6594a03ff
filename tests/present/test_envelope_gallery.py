"""One envelope with every segment kind, rendered in the terminal: each kind's own look."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from agentfolio.cli.terminal import render_session
from agentfolio.formats import envelope
from agentfolio.formats.jsonio import load_json_file
from agentfolio.present import rules

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "tests" / "fixtures" / "envelope" / "gallery.json"


def render(*, expand: bool = False, color: bool = False) -> str:
    session = envelope.read(load_json_file(GALLERY)).session
    console = Console(width=120, record=True, force_terminal=color, color_system="truecolor" if color else None)
    console.print(render_session(session, title="gallery", expand=expand))
    return console.export_text(styles=color)


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_every_kind_has_its_own_look_folded() -> None:
    out = render()
    # Folded segments: one summary line each, with counts.
    assert lines_with(out, "▸ system prompt · 60 chars · You are a travel assistant.")
    assert lines_with(out, "▸ memory · 2 items: Prefers trains, Vegetarian")
    assert lines_with(out, "▸ tools · 2 tools: get_weather, search_trains")
    assert lines_with(out, "▸ long text · 5,120 chars · Notes: LONG")  # the declared charCount
    assert "Avoids flying" not in out and "Answer briefly" not in out
    # Skills are not folded in the gallery (collapsed: false): a list.
    assert lines_with(out, "• itinerary: Plan multi-day trips") and lines_with(out, "• booking: Book trains")
    # Static variable: {{name}} = value — description.
    assert lines_with(out, "{{user_city}} = Paris  — Where the user lives")
    # Document card: name, type and size, snippet.
    card = out[out.index("itinerary.pdf") - 40: out.index("application/pdf") + 60]
    assert "Day 1: Paris to Lyon by TGV" in card and "47.1 KB" in card and "╭" in card
    # Media: type, URL and alt text.
    assert lines_with(out, '[image] https://example.com/lyon.jpg  "Lyon skyline at dusk"')
    # Calls beside their results, by success.
    assert out.index("→ call get_weather") < out.index("← result ✓") < out.index("sunny, 21C")
    assert out.index("→ call search_trains") < out.index("← result ✗ failed") < out.index("service unavailable")
    assert len(lines_with(out, "(shown with its call)")) == 2
    assert "model gpt-4o-2024-08-06" in out


def test_expand_opens_every_folded_segment() -> None:
    out = render(expand=True)
    assert "▸" not in out
    assert lines_with(out, "Answer briefly and cite sources.")
    assert lines_with(out, "• Prefers trains: Avoids flying when a train takes under 6 hours.")
    assert lines_with(out, "memory · Recalled from earlier sessions")
    # The tool overview is a table: a header row, then one row per tool.
    header = lines_with(out, "tool ")[0]
    assert "description" in header and "parameters" in header and "┃" in header
    row = lines_with(out, "get_weather ")[0]
    assert re.search(r"│ get_weather\s+│ Current weather for a city\s+│ city: string\s+│", row)
    assert lines_with(out, "long text · 5,120 chars") and lines_with(out, "Notes: LONG")


def test_results_are_coloured_by_success() -> None:
    out = render(color=True)
    ok = next(line for line in out.splitlines() if "← result ✓" in line)
    failed = next(line for line in out.splitlines() if "← result ✗ failed" in line)
    green, red = "\x1b[32m", "\x1b[31m"
    assert green in ok and red not in ok
    assert red in failed and green not in failed


def test_the_rules_decide_and_both_renderers_ask_them() -> None:
    session = envelope.read(load_json_file(GALLERY)).session
    kinds = [rules.segment_kind(c) for _, m in session.messages() for c in m.items]
    assert set(kinds) == {"text", "system_prompt", "long_text", "static_var", "memory", "skills", "tool_overview",
                          "tool_call_request", "tool_call_result", "document", "media"}
    folded = {kind for kind, (_, content) in zip(kinds, [(m, c) for _, m in session.messages() for c in m.items], strict=False)
              if rules.is_folded(content, kind)}
    assert folded == {"system_prompt", "memory", "tool_overview", "long_text", "tool_call_result"}
    # The web viewer asks the same rules: each segment folds, and sums up, as they say.
    from agentfolio.web.html import segment_view

    for (_, content), kind in zip([(m, c) for _, m in session.messages() for c in m.items], kinds, strict=False):
        view = segment_view(content)
        assert (view.kind, view.folded) == (kind, rules.is_folded(content, kind))
        if view.folded:
            assert view.summary == rules.segment_summary(content, kind)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", *args], capture_output=True, text=True,
                          timeout=60, env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"})


def test_show_on_an_envelope_and_any_format_as_envelope(sample_path: Path) -> None:
    done = run("show", str(GALLERY))
    assert done.returncode == 0, done.stderr
    assert "▸ memory · 2 items" in done.stdout
    expanded = run("show", str(GALLERY), "--expand")
    assert "• Prefers trains: Avoids flying" in expanded.stdout
    as_envelope = run("show", str(sample_path), "--as", "envelope")
    assert as_envelope.returncode == 0, as_envelope.stderr
    # A system message's text is a system prompt in the envelope: folded to one line.
    assert "▸ system prompt · 87 chars · Tell the user" in as_envelope.stdout
    assert "loss report:" in as_envelope.stderr and "dropped usage ×2" in as_envelope.stderr


@pytest.mark.parametrize("target", ["envelope", "durable-state"])
def test_convert_prints_the_loss_report_on_stderr_and_strict_fails(tmp_path: Path, sample_path: Path,
                                                                    target: str) -> None:
    source = sample_path if target == "envelope" else GALLERY
    done = run("convert", str(source), "--to", target)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("loss report:") and "dropped" in done.stderr
    assert done.stdout.lstrip().startswith("{")
    strict = run("convert", str(source), "--to", target, "--strict", "-o", str(tmp_path / "out.json"))
    assert strict.returncode == 1
    assert "--strict: converting to" in strict.stderr and "loss report:" in strict.stderr
    assert not (tmp_path / "out.json").exists()


def test_convert_without_loss_is_silent_and_strict_passes(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text('{"version": "1.0", "messages": [{"id": "a", "role": "user", "timestamp": 1, '
                     '"segments": [{"kind": "text", "content": "hi"}]}]}')
    done = run("convert", str(plain), "--to", "canonical", "--strict")
    assert done.returncode == 0 and done.stderr == ""
