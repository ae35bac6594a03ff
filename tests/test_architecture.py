"""The architecture holds: import contracts, the generated dependency table, and what a
file command may import at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "agentfolio" / "samples" / "durable-agent-state.sample.json"

# What a command that only reads a file must not pay for at start-up.
HEAVY = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg", "boto3", "playwright",
         "jinja2", "anthropic", "openai", "google.genai", "langchain_core", "agentfolio.store", "agentfolio.server")


def test_import_contracts_hold() -> None:
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0, "run `lint-imports` for details"


def test_the_dependency_table_in_the_docs_is_current() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import architecture
    finally:
        sys.path.pop(0)
    document = architecture.DOC.read_text(encoding="utf-8")
    assert architecture.document_with(document, architecture.table()) == document, (
        "docs/architecture.md is stale: run python scripts/architecture.py --write")


PROBE = """
import json, sys
from agentfolio.cli import main
sys.argv = ["agentfolio", *json.loads(ARGS)]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES=" + json.dumps(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("args", [["validate", str(SAMPLE)], ["show", str(SAMPLE)],
                                  ["convert", str(SAMPLE), "--to", "envelope"], ["--help"]])
def test_file_commands_import_nothing_heavy(args: list[str]) -> None:
    modules = _modules_after(args)
    loaded = sorted({heavy for heavy in HEAVY for module in modules
                     if module == heavy or module.startswith(heavy + ".")})
    assert loaded == [], f"`agentfolio {args[0]}` imported {loaded}"


def _modules_after(args: list[str], env: dict[str, str] | None = None) -> list[str]:
    probe = PROBE.replace("ARGS", repr(json.dumps(args)))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=env)
    assert "Usage:" not in done.stderr and "Error" not in done.stderr, done.stderr[:500]
    return json.loads(done.stderr.rsplit("MODULES=", 1)[1])


def test_validate_checks_a_file_without_building_the_model_or_loading_rich() -> None:
    # What a pre-commit hook pays per file: the format's own checks, never pydantic (the
    # model is built on first use, and only when needed), nor Rich for a one-line report.
    modules = _modules_after(["validate", str(SAMPLE)])
    loaded = sorted({top for top in ("pydantic", "rich", "agentfolio.model", "agentfolio.formats.losses")
                     for module in modules if module == top or module.startswith(top + ".")})
    assert loaded == []


def test_import_stores_a_durable_state_without_the_model_the_registry_or_alembic(tmp_path: Path) -> None:
    # What every `agentfolio import` pays before its first file: the store's own tables and
    # the durable state's checks; the records (pydantic), the registry (its templates and
    # span checks) and Alembic (when the database is already at the newest schema) are
    # never needed to store a durable state.
    import os

    from agentfolio.settings import Settings
    from agentfolio.store import Store

    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTFOLIO_")}
    env["AGENTFOLIO_DATA_DIR"] = str(tmp_path)
    Store.open(Settings(data_dir=tmp_path)).close()  # migrated beforehand, as a store in use is
    modules = _modules_after(["import", str(SAMPLE), "--jsonl"], env)
    assert "agentfolio.store.sessions" in modules  # it did store the file
    loaded = sorted({top for top in ("pydantic", "alembic", "liquid", "agentfolio.registry", "agentfolio.store.registry",
                                     "agentfolio.model.base", "agentfolio.formats.losses", "agentfolio.app.traces")
                     for module in modules if module == top or module.startswith(top + ".")})
    assert loaded == []
    with Store.open(Settings(data_dir=tmp_path)) as store:
        account = store.accounts.get("default")
        assert account is not None and store.sessions.of(account).count() == 1
