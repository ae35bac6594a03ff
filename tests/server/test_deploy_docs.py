"""docs/deploy.md against the code: the settings, commands, endpoints and test files it
names exist and do what it says, and its compose file and balancer configuration wire
three servers, one migration, PostgreSQL and an S3 store together."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import agentfolio.settings as settings_module
from agentfolio.app import Agentfolio
from agentfolio.cli import app as cli
from agentfolio.server import create_server
from agentfolio.settings import Settings
from agentfolio.store import Store

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()
SERVERS = ("server-1", "server-2", "server-3")


def _blocks(language: str) -> list[str]:
    """The page's fenced code blocks of that language ("": unlabelled)."""
    blocks, current, label = [], None, ""
    for line in DEPLOY.splitlines():
        if line.startswith("```"):
            if current is None:
                current, label = [], line[3:].strip()
            else:
                if label == language:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _compose() -> dict[str, Any]:
    (block,) = _blocks("yaml")
    return yaml.safe_load(block)


def test_every_setting_it_names_is_a_documented_setting() -> None:
    named = set(re.findall(r"\bAGENTFOLIO_[A-Z0-9_]+", DEPLOY))
    documented = set(re.findall(r"``(AGENTFOLIO_[A-Z0-9_]+)``", settings_module.__doc__ or ""))
    assert named and named <= documented, named - documented


def test_the_servers_environment_reads_as_a_shared_deployment() -> None:
    compose = _compose()
    environments = [compose["services"][name]["environment"] for name in (*SERVERS, "migrate")]
    assert all(environment == environments[0] for environment in environments)
    settings = Settings.from_env({key: str(value) for key, value in environments[0].items()})
    assert settings.effective_database_url.startswith("postgresql+psycopg://")
    assert settings.effective_blob_url.startswith("s3://")
    assert settings.s3_endpoint_url == "http://minio:9000"
    assert (settings.migrate, settings.log_format, settings.metrics_token) == ("off", "json", "change-me")


def test_the_servers_start_after_the_migration_and_the_bucket() -> None:
    services = _compose()["services"]
    assert services["migrate"]["command"] == ["agentfolio", "db", "upgrade"]
    for name in SERVERS:
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["bucket"]["condition"] == "service_completed_successfully"
        assert "/healthz" in " ".join(services[name]["healthcheck"]["test"])
    assert services["postgres"]["image"].startswith("postgres:15")
    bucket = services["minio"]["environment"]
    server = services["server-1"]["environment"]
    assert (bucket["MINIO_ROOT_USER"], bucket["MINIO_ROOT_PASSWORD"]) == (server["AWS_ACCESS_KEY_ID"],
                                                                          server["AWS_SECRET_ACCESS_KEY"])
    assert "local/" + server["AGENTFOLIO_BLOB_URL"].removeprefix("s3://").split("/")[0] in \
        " ".join(services["bucket"]["entrypoint"])


def test_the_balancer_sends_traffic_to_ready_servers_only() -> None:
    (config,) = [block for block in _blocks("") if "backend servers" in block]
    assert "option httpchk GET /readyz" in config and "http-check expect status 200" in config
    assert re.findall(r"^\s+server (\S+) (\S+):8000 check", config, flags=re.M) == [(name, name) for name in SERVERS]


def test_every_command_it_shows_exists() -> None:
    commands = {tuple(match.split()) for match in re.findall(r"agentfolio ((?:[a-z]+ ?){1,2})", DEPLOY)}
    runner = CliRunner()
    checked = 0
    for words in commands:
        words = tuple(word for word in words if word in {"serve", "db", "upgrade", "status", "token", "create"})
        if not words:
            continue
        result = runner.invoke(cli, [*words, "--help"])
        assert result.exit_code == 0, (words, result.output)
        checked += 1
    assert checked >= 4  # serve, db upgrade, db status, token create


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_health_endpoints_answer_as_it_says(settings: Settings, store: Store) -> None:
    with TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False)) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert "`GET /healthz`" in DEPLOY and '{"status": "ok"}' in DEPLOY
        assert client.get("/readyz").json() == {"status": "ready"}
        assert '{"status": "ready"}' in DEPLOY
        assert client.get("/metrics").status_code == 403  # not loopback and no token: as the table says


def test_the_tests_it_cites_exist() -> None:
    cited = set(re.findall(r"`(tests/[\w/]+\.py)`", DEPLOY))
    assert len(cited) >= 5
    assert all((ROOT / path).is_file() for path in cited), [path for path in cited if not (ROOT / path).is_file()]
