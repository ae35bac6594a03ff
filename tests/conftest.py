from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def sample_path() -> Path:
    return ROOT / "agentfolio" / "samples" / "durable-agent-state.sample.json"


@pytest.fixture
def durable_fixtures() -> Path:
    return FIXTURES / "durable_state"
