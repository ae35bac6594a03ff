"""The served OpenAPI document describes what the server does: a method a path does not
take answers 405 with an ``Allow`` header naming every method the path does take."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store

METHODS = ("get", "put", "post", "delete", "patch")


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "some-id", template)


def _excluded(operations: dict[str, Any]) -> dict[str, set[str]]:
    """The values each path parameter is documented never to take (``not: {enum}``)."""
    return {parameter["name"]: set(parameter["schema"]["not"]["enum"])
            for operation in operations.values() if isinstance(operation, dict)
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "path" and "not" in parameter.get("schema", {})}


def _matches(template: str, operations: dict[str, Any], path: str) -> bool:
    pattern = re.sub(r"\\\{([^}]+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    found = re.fullmatch(pattern, path)
    return found is not None and not any(found[name] in words for name, words in _excluded(operations).items())


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
            # A concrete path may match several templates unless the document says an id
            # never takes a sibling's literal segment (/agent/show beside /agent/{agent_id}).
            documented = {method.upper() for other, operations in paths.items() if _matches(other, operations, path)
                          for method in operations if method in METHODS}
            for method in ["OPTIONS", *(m.upper() for m in METHODS if m.upper() not in documented)]:
                answer = client.request(method, path)
                assert answer.status_code == 405, (method, path, answer.status_code, answer.text)
                allowed = {item.strip() for item in answer.headers["allow"].split(",")}
                assert allowed == documented, (method, path, allowed, documented)
                assert answer.json()["status"] == "error" and "not allowed" in answer.json()["message"]
                checked += 1
        assert checked > len(paths)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("path", "allowed"), [("/api/v1/agent_instance/register", {"POST"}),
                                                ("/api/v1/alerts/acknowledge", {"POST"}),
                                                ("/api/v1/agent/show", {"GET"})])
def test_a_literal_path_beside_an_id_route_answers_only_its_own_methods(store: Store, path: str,
                                                                        allowed: set[str]) -> None:
    """``/alerts/{alert_id}`` never takes ``acknowledge``: a GET of ``/alerts/acknowledge``
    is a 405 naming POST, as the document says, not a search for an alert of that id."""
    token, _ = store.accounts.create_token("literal")
    with TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        for method in ("OPTIONS", *(m.upper() for m in METHODS if m.upper() not in allowed)):
            answer = client.request(method, path)
            assert answer.status_code == 405, (method, path, answer.status_code, answer.text)
            assert {item.strip() for item in answer.headers["allow"].split(",")} == allowed, (method, path)
        parameters = [parameter for operations in client.get("/openapi.json").json()["paths"].values()
                      for operation in operations.values() for parameter in operation.get("parameters", [])
                      if parameter["in"] == "path" and path.rsplit("/", 1)[1] in
                      parameter["schema"].get("not", {}).get("enum", [])]
        assert parameters, f"no id parameter is documented as never taking {path.rsplit('/', 1)[1]!r}"
