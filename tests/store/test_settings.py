"""Settings from the environment: documented defaults, one-line errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfolio.settings import Settings, SettingsError
from agentfolio.store.blobs import FolderBlobStore, S3BlobStore, open_blob_store


def test_defaults_need_no_set_up(tmp_path: Path) -> None:
    settings = Settings.from_env({"XDG_DATA_HOME": str(tmp_path)})
    assert settings.data_dir == tmp_path / "agentfolio"
    assert settings.effective_database_url == f"sqlite:///{tmp_path / 'agentfolio' / 'agentfolio.sqlite3'}"
    assert isinstance(open_blob_store(settings), FolderBlobStore)
    assert settings.session_ttl == 14 * 24 * 3600


def test_environment_overrides(tmp_path: Path) -> None:
    settings = Settings.from_env({"AGENTFOLIO_DATA_DIR": str(tmp_path), "AGENTFOLIO_SESSION_TTL": "0",
                                  "AGENTFOLIO_DATABASE_URL": "postgresql+psycopg://u:p@h/db",
                                  "AGENTFOLIO_BLOB_URL": "s3://bucket/prefix",
                                  "AGENTFOLIO_S3_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert settings.session_ttl == 0 and settings.effective_database_url.startswith("postgresql+psycopg://")
    store = open_blob_store(settings)
    assert isinstance(store, S3BlobStore) and store.bucket == "bucket" and store.prefix == "prefix/"


@pytest.mark.parametrize("name,value", [("SESSION_TTL", "soon"), ("BLOB_THRESHOLD", "-1")])
def test_bad_values_are_named(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"AGENTFOLIO_{name}"):
        Settings.from_env({f"AGENTFOLIO_{name}": value})


def test_bad_blob_url() -> None:
    with pytest.raises(SettingsError):
        open_blob_store(Settings(blob_url="ftp://nowhere"))
