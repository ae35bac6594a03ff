"""The served OpenAPI document describes what the server does: a method a path does not
take answers 405 with an ``Allow`` header naming every method the path does take."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store

METHODS = ("get", "put", "post", "delete", "patch")


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "some-id", template)


def _matches(template: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)), path) is not None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_documented_path_answers_405_with_the_methods_it_takes(store: Store) -> None:
    token, _ = store.accounts.create_token("allow")
    with TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        paths = client.get("/openapi.json").json()["paths"]
        assert len(paths) >= 20
        checked = 0
        for template in paths:
            path = _concrete(template)
            # A concrete path may match several templates (/agent/show and /agent/{agent_id}):
            # the server answers each of their methods there.
            documented = {method.upper() for other, operations in paths.items() if _matches(other, path)
                          for method in operations if method in METHODS}
            for method in ["OPTIONS", *(m.upper() for m in METHODS if m.upper() not in documented)]:
                answer = client.request(method, path)
                assert answer.status_code == 405, (method, path, answer.status_code, answer.text)
                allowed = {item.strip() for item in answer.headers["allow"].split(",")}
                assert allowed == documented, (method, path, allowed, documented)
                assert answer.json()["status"] == "error" and "not allowed" in answer.json()["message"]
                checked += 1
        assert checked > len(paths)
