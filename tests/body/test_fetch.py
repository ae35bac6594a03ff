"""The real HTTP fetcher against a local server: allow-list, redirects, size cap."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from agentfolio.body import ContentError, MessagePart
from agentfolio.body.content import http_fetcher


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/files/a.txt":
            self._send(200, b"hello")
        elif self.path == "/files/big":
            self._send(200, b"x" * 5000)
        elif self.path == "/files/inside":
            self.send_response(302)
            self.send_header("Location", "/files/a.txt")
            self.end_headers()
        elif self.path == "/files/escape":
            self.send_response(302)
            self.send_header("Location", "/secret")
            self.end_headers()
        else:
            self._send(200, b"SECRET")

    def _send(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def base() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_allowed_url_is_fetched(base: str) -> None:
    part = MessagePart(content_type="text/plain", content_url=f"{base}/files/a.txt")
    assert part.text(allow=[f"{base}/files/"]) == "hello"


def test_redirect_within_allow_list_is_followed(base: str) -> None:
    part = MessagePart(content_type="text/plain", content_url=f"{base}/files/inside")
    assert part.text(allow=[f"{base}/files/"]) == "hello"


def test_redirect_out_of_allow_list_is_refused(base: str) -> None:
    part = MessagePart(content_type="text/plain", content_url=f"{base}/files/escape")
    with pytest.raises(ContentError, match="refusing redirect"):
        part.text(allow=[f"{base}/files/"])


def test_size_cap(base: str) -> None:
    fetch = http_fetcher([f"{base}/files/"], max_bytes=100)
    part = MessagePart(content_type="text/plain", content_url=f"{base}/files/big")
    with pytest.raises(ContentError, match="larger than 100 bytes"):
        part.data(allow=[f"{base}/files/"], fetch=fetch)
