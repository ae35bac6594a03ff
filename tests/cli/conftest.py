from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage import database_url, postgres_url, settings  # noqa: F401


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local store the commands open: a fresh SQLite file for each test."""
    monkeypatch.setenv("AGENTFOLIO_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTFOLIO_DATABASE_URL", raising=False)
    return tmp_path
