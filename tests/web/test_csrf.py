"""Login CSRF: a page on another origin (another port of the same host counts) cannot sign
the viewer in as someone else, sign it out, or open files in it — checked in Chromium."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.settings import Settings
from tests.storage import InProcessServer
from tests.web.browser import free_port


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A viewer that asks for a token; the victim's and the attacker's tokens."""
    folio = Agentfolio.open(Settings.from_env({}).with_(data_dir=tmp_path, session_ttl=0))
    victim, _ = folio.accounts.create_token("victim")
    attacker, _ = folio.accounts.create_token("attacker")
    served = InProcessServer(create_server(folio=folio))
    try:
        yield served.url, victim, attacker
    finally:
        served.stop()
        folio.close()


@pytest.fixture
def attacker_site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A static site on another port of the same host."""
    root = tmp_path / "evil"
    root.mkdir()
    port = free_port()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *_: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()


def _auto_post(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{name}" value="{value}">' for name, value in fields.items())
    return (f'<html><body><form id="f" method="POST" action="{action}">{inputs}</form>'
            '<script>document.getElementById("f").submit()</script></body></html>')


def _signed_in_as(page: Any, base: str) -> str:
    page.goto(f"{base}/sessions")
    return page.content()


def test_another_origin_cannot_sign_the_viewer_in_as_someone_else(browser: Any, viewer: tuple[str, str, str],
                                                                  attacker_site: tuple[Path, str]) -> None:
    base, victim, attacker = viewer
    root, evil = attacker_site
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("input[name=token]", victim)
    with page.expect_navigation():
        page.locator("form button[type=submit]").first.click()
    assert "victim" in _signed_in_as(page, base)

    (root / "login.html").write_text(_auto_post(f"{base}/login", {"token": attacker, "next": "/sessions"}))
    page.goto(f"{evil}/login.html")
    page.wait_for_load_state()
    shown = _signed_in_as(page, base)
    assert "victim" in shown and "attacker" not in shown

    (root / "logout.html").write_text(_auto_post(f"{base}/logout", {}))
    page.goto(f"{evil}/logout.html")
    page.wait_for_load_state()
    assert "victim" in _signed_in_as(page, base), "a cross-site POST signed the viewer out"
    context.close()


def test_the_viewer_own_forms_and_clients_without_a_browser_still_work(viewer: tuple[str, str, str]) -> None:
    import httpx

    base, victim, _ = viewer
    with httpx.Client(base_url=base) as client:
        same = client.post("/login", data={"token": victim, "next": "/sessions"}, headers={"Origin": base})
        assert same.status_code == 303
        plain = client.post("/login", data={"token": victim, "next": "/sessions"})
        assert plain.status_code == 303
        other_port = client.post("/login", data={"token": victim}, headers={"Origin": "http://127.0.0.1:1"})
        assert other_port.status_code == 403
        fetch = client.post("/login", data={"token": victim}, headers={"Sec-Fetch-Site": "same-site"})
        assert fetch.status_code == 403
