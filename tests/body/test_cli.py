from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentfolio.body import MessageBody, MessageBodySchema
from agentfolio.cli.body import body_app
from agentfolio.body.examples import EXAMPLES, body_path, load_body, load_schema, schema_path

runner = CliRunner()


def run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(body_app, list(args))


def write(tmp_path: Path, name: str, obj: object) -> str:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(obj))
    return str(path)


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_validate_under_their_own_schema(example: str) -> None:
    result = run("validate", "--schema", str(schema_path(example)), str(body_path(example)))
    assert result.exit_code == 0, result.output
    assert "valid (" in result.output
    assert load_schema(example).is_valid(load_body(example))


def test_validate_invalid_body_exits_1_and_lists_problems(tmp_path: Path) -> None:
    body = write(tmp_path, "b.json", {"parts": [{"content_type": "image/png", "content_url": "https://x/y.png"}]})
    result = run("validate", "--schema", "example:chat", body)
    assert result.exit_code == 1
    assert "part 0 (unnamed, image/png): matches no schema part" in result.output
    assert "required schema part #0" in result.output


def test_malformed_body_is_invalid_not_a_crash(tmp_path: Path) -> None:
    body = write(tmp_path, "b.json", {"parts": [{"name": "no-slash"}]})
    result = run("validate", "--schema", "example:chat", body)
    assert result.exit_code == 1
    assert "invalid body: part 0: name: name 'no-slash' must start with '/'" in result.output
    notjson = tmp_path / "n.json"
    notjson.write_text("{")
    assert run("validate", "--schema", "example:chat", str(notjson)).exit_code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "BODY"], "Missing option"),
        (["validate", "--schema", "/does/not/exist.json", "BODY"], "cannot read /does/not/exist.json"),
        (["validate", "--schema", "SCHEMA_BAD", "BODY"], "not a valid schema: schema part #0"),
        (["validate", "--schema", "example:nope", "BODY"], "no example 'nope'"),
        (["compat", "example:chat"], "give both"),
        (["compat", "example:chat", "SCHEMA_BAD"], "not a valid schema"),
        (["ls", "BODY", "no-slash"], "must start with '/'"),
        (["ls", "/does/not/exist.json"], "cannot read"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    body = str(body_path("chat"))
    bad = write(tmp_path, "s.json", {"parts": [{"name": "**"}]})
    args = [body if a == "BODY" else bad if a == "SCHEMA_BAD" else a for a in args]
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_compat_pair_exit_codes_and_counterexample(tmp_path: Path) -> None:
    ok = run("compat", "example:chat", "example:multimodal-chat")
    assert ok.exit_code == 0 and ok.output.startswith("compatible")
    no = run("compat", str(schema_path("multimodal-chat")), str(schema_path("chat")))
    assert no.exit_code == 1
    assert "not compatible" in no.output
    line = next(x for x in no.output.splitlines() if "counter-example:" in x)
    witness = MessageBody.from_json(line.split("counter-example:", 1)[1].strip())
    assert load_schema("multimodal-chat").is_valid(witness)
    assert not load_schema("chat").is_valid(witness)


def test_compat_matrix_of_the_four_agents() -> None:
    result = run("compat")
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()
            if line.strip() and line.split()[0] in EXAMPLES and len(line.split()) == 5}
    assert list(rows) == list(EXAMPLES)
    # Diagonal: every schema accepts its own output. Chat text also fits the multi-modal input.
    for i, name in enumerate(EXAMPLES):
        assert rows[name][i] == "yes"
    assert rows["chat"] == ["yes", "yes", "no", "no"]
    assert rows["multimodal-chat"][0] == "no"  # images do not fit a text-only chat
    assert "chat -> software-writer" in result.output


def test_ls_lists_parts_and_filters_by_glob() -> None:
    result = run("ls", str(body_path("researcher")))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) == 4 and "(main)" in lines[0] and "text/markdown" in lines[0]
    only = run("ls", str(body_path("researcher")), "/sources/*")
    assert [line.split()[1] for line in only.output.splitlines()] == ["/sources/1", "/sources/2"]


def test_real_subprocess_entry_point(tmp_path: Path) -> None:
    schema = write(tmp_path, "s.json", MessageBodySchema.parse({"parts": [{"content_type": "text/plain"}]}).to_dict())
    body = write(tmp_path, "b.json", {"parts": [{"content_type": "image/png"}]})
    proc = subprocess.run([sys.executable, "-m", "agentfolio.cli", "body", "validate", "--schema", schema, body],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "matches no schema part" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "agentfolio.cli", "body", "compat", "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_glob_bombs_answer_at_once(tmp_path: Path) -> None:
    from tests.bombs import EXPLODING, GLOBSTAR_CHAIN, NEAR_MISS, TWENTY_STARS, two_big_schemas, within_deadline

    body = write(tmp_path, "b.json", {"parts": [{"name": NEAR_MISS, "content_type": "text/plain", "content": "x"}]})
    stars = write(tmp_path, "stars.json", {"parts": [{"name": TWENTY_STARS}]})
    validated = within_deadline(lambda: run("validate", "--schema", stars, body))
    assert validated.exit_code == 1 and "no name glob matches" in validated.output
    listed = within_deadline(lambda: run("ls", body, TWENTY_STARS))
    assert listed.exit_code == 0 and listed.output == ""

    chain = write(tmp_path, "chain.json", {"parts": [{"name": GLOBSTAR_CHAIN}]})
    refused = within_deadline(lambda: run("validate", "--schema", chain, body))
    assert refused.exit_code == 2 and "too complex: it has 60" in refused.output
    assert within_deadline(lambda: run("ls", body, GLOBSTAR_CHAIN)).exit_code == 2

    big_out, big_in = (write(tmp_path, f"{n}.json", s) for n, s in zip(("o", "i"), two_big_schemas(), strict=True))
    too_big = within_deadline(lambda: run("compat", big_out, big_in))
    assert too_big.exit_code == 2 and "too complex: it has 2,000 parts" in too_big.output

    exploding = write(tmp_path, "x.json", {"parts": [{"name": EXPLODING, "required": True}]})
    undecided = within_deadline(lambda: run("compat", exploding, "example:chat", "--timeout", "2"))
    assert undecided.exit_code == 3, undecided.output
    assert "took longer than 2 s and was stopped" in undecided.output and "Traceback" not in undecided.output
