"""docs/conversions.md's conversion matrix is what the code's loss rules say today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "conversion_matrix.py"


def _matrix():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("conversion_matrix", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_matrix_in_the_docs_is_not_stale() -> None:
    matrix = _matrix()
    assert matrix.current() == matrix.render(), "run: python scripts/conversion_matrix.py"


def test_the_matrix_covers_every_pair_of_formats() -> None:
    from agentfolio.formats import registry

    matrix = _matrix()
    rendered = matrix.render()
    sources = [name for name in registry.names() if name != "canonical"]
    assert set(matrix.GALLERIES) == set(sources)  # every format but agentfolio's own has a gallery
    for source in sources:
        section = rendered.split(f"### From {source} ", 1)[1].split("### From", 1)[0]
        rows = [line.split(" | ", 1)[0].removeprefix("| ") for line in section.splitlines()
                if line.startswith("| ") and not line.startswith("| to ")]
        assert rows == [name for name in registry.names() if name != source]
