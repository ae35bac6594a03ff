"""Node.js and the JavaScript clients of tests/js (installed from its lockfile by
scripts/ensure-node-deps.sh), for the tests that drive a published npm client."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parent / "js"


def node_client(package: str) -> str:
    """The ``node`` executable, once ``package`` is installed in tests/js; the test is
    skipped when either is missing, and fails on CI, where they must be there."""
    node = shutil.which("node")
    problem = None if node else "node is not on PATH"
    if not problem and not (JS / "node_modules" / package).is_dir():
        problem = f"{package} is missing from tests/js/node_modules (run bash scripts/ensure-node-deps.sh)"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"the JavaScript client cannot run on CI: {problem}")
        pytest.skip(f"the JavaScript client test is skipped: {problem}")
    assert node is not None
    return node
