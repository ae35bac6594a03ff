"""The ``agentfolio`` command as a user runs it: a real process, real files, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentfolio.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"})


def test_validate_valid_file(sample_path: Path) -> None:
    done = run("validate", str(sample_path))
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout and "durable-state 1.0.0" in done.stdout


def messy_state(tmp_path: Path) -> Path:
    path = tmp_path / "messy.json"
    path.write_bytes(orjson.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "response", "messages": [
            {"role": "agent", "authorName": None, "contents": [{"$type": "text", "text": "hello there"},
                                                               {"$type": "functionCall"}]}]}]}}))
    return path


def test_validate_reports_each_problem_with_its_pointer_and_exits_1(tmp_path: Path, sample_path: Path) -> None:
    messy = messy_state(tmp_path)
    done = run("validate", str(sample_path), str(messy))
    assert done.returncode == 1
    assert f"{messy}: /data/conversationHistory/0/messages/0/role:" in done.stdout
    assert f"{messy}: /data/conversationHistory/0/messages/0/contents/1: missing required property \"callId\"" \
        in done.stdout

    as_json = run("validate", "--json", str(sample_path), str(messy))
    assert as_json.returncode == 1
    reports = json.loads(as_json.stdout)
    assert [r["valid"] for r in reports] == [True, False]
    assert {"pointer": "/data/conversationHistory/0/messages/0/authorName",
            "message": "expected string, found null"} in reports[1]["problems"]


def test_show_reads_messy_state_with_warnings(tmp_path: Path) -> None:
    done = run("show", str(messy_state(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert "hello there" in done.stdout and "agent" in done.stdout
    assert "breaks its schema in" in done.stderr


def test_show_pairs_calls_with_results_and_totals_usage(sample_path: Path) -> None:
    done = run("show", str(sample_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    call = out.index("→ call StartDocumentGeneration")
    assert out.index("← result", call) < out.index("8b835e8f2a6f40faabdba33bd8fd8c74", call)
    assert "result of call_qWk9Ay4doKYrUBoADK8MBwHf (shown with its call)" in out
    assert "tokens: in 595 · out 63 · total 658" in out
    assert "total tokens: in 991 · out 111 · total 1,102" in out


def test_convert_to_canonical_and_back_is_lossless(tmp_path: Path, sample_path: Path) -> None:
    canonical = tmp_path / "c.json"
    assert run("convert", str(sample_path), "--to", "canonical", "-o", str(canonical)).returncode == 0
    back = run("convert", str(canonical), "--to", "durable-state")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout) == json.loads(sample_path.read_bytes())


@pytest.mark.parametrize("args", [[], ["validate"], ["show"], ["convert", "x.json"], ["show", "--bogus", "x"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert run(*args).returncode == 2


def bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    cases: dict[str, tuple[Path, str]] = {}

    def put(name: str, data: bytes, expected: str) -> None:
        path = tmp_path / name
        path.write_bytes(data)
        cases[name] = (path, expected)

    put("malformed.json", b'{"schemaVersion": "1.0.0", "data": {', "line 1 column 37: malformed JSON")
    put("latin1.json", b'{"schemaVersion": "1.0.0", "data": {"x": "caf\xe9"}}', "not UTF-8 text")
    put("array.json", b"[1, 2]", "expected one of durable-state")
    put("wrong-types.json", b'{"schemaVersion": 1, "data": []}', "/schemaVersion: schemaVersion 1 is not a semantic")
    put("deep.json", b"[" * 100_000 + b"]" * 100_000, "nesting too deep")
    put("empty.json", b"", "empty document")
    put("history-string.json", b'{"schemaVersion": "1.0.0", "data": {"conversationHistory": "x"}}',
        "/data/conversationHistory")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # sparse: 200 MB on paper, nothing on disk
        handle.truncate(200 * 1024 * 1024)
    cases["huge.json"] = (huge, f"over the {DEFAULT_MAX_BYTES:,}-byte limit")
    directory = tmp_path / "folder.json"
    directory.mkdir()
    cases["folder.json"] = (directory, "is a directory")
    cases["missing.json"] = (tmp_path / "missing.json", "no such file")
    return cases


@pytest.mark.parametrize("command", ["show", "convert"])
def test_bad_input_gives_one_line_naming_file_and_place(tmp_path: Path, command: str) -> None:
    for name, (path, expected) in bad_inputs(tmp_path).items():
        args = [command, str(path)] + (["--to", "canonical"] if command == "convert" else [])
        done = run(*args, timeout=30)
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (name, done.stderr)
        assert str(path) in lines[0] and expected in lines[0], (name, lines[0])
        assert "Traceback" not in done.stderr + done.stdout


def test_validate_bad_input_exits_1_with_reason(tmp_path: Path) -> None:
    cases = bad_inputs(tmp_path)
    done = run("validate", *(str(path) for path, _ in cases.values()), timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    for name, (path, expected) in cases.items():
        assert f"{path}: " in done.stdout and expected in done.stdout, name
