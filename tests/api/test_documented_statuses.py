"""What the README promises about HTTP statuses is what the service answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_readme_names_the_status_a_stale_if_match_gets(settings, store: Store) -> None:
    text = README.read_text()
    # Each mention of a stale version near "If-Match", with the statuses it names.
    windows = [text[match.start():match.start() + 60] for match in re.finditer(r"stale", text)
               if "If-Match" in text[max(0, match.start() - 80):match.start() + 60]]
    assert windows, "the README does not say what a stale If-Match gets"
    documented = {int(status) for window in windows for status in re.findall(r"\b([1-5][0-9]{2})\b", window)}
    token, _ = store.accounts.create_token("readme")
    with TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False)) as client:
        headers = {"Authorization": f"Bearer {token}"}
        client.post("/api/v1/sessions", params={"id": "s"}, headers=headers,
                    json={"schemaVersion": "1.2.0", "data": {"conversationHistory": []}})
        entry = {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": "x"}]}]}
        assert client.post("/api/v1/sessions/s/entries", json=entry, headers={**headers, "If-Match": '"1"'}
                           ).status_code == 201
        stale = client.post("/api/v1/sessions/s/entries", json=entry, headers={**headers, "If-Match": '"1"'})
    assert stale.status_code == 412  # RFC 9110 §13.1.1: a failed If-Match is 412 Precondition Failed
    assert documented == {stale.status_code}, windows
