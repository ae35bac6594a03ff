"""Turning a part's content into bytes, whatever its encoding or location.

``data:`` URLs are decoded locally. Any other URL is fetched only when the caller
passes an allow-list of URL prefixes: a body comes from an agent, and fetching
whatever URL it names would let that agent make us call internal services (SSRF).
Redirects are re-checked against the same allow-list for the same reason.
"""

from __future__ import annotations

import base64
import binascii
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable

from .errors import ContentError

#: Callable that returns the bytes at an (already allowed) URL.
Fetcher = Callable[[str], bytes]

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0


def decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ContentError(f"content is not valid base64: {exc}") from None


def decode_data_url(url: str) -> tuple[bytes, str | None]:
    """RFC 2397: ``data:[<mediatype>][;base64],<data>`` -> (bytes, media type or None)."""
    if not url[:5].lower() == "data:":
        raise ContentError(f"not a data: URL: {url[:40]!r}")
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise ContentError("data: URL has no ',' separating header and data")
    params = header.split(";")
    is_base64 = params[-1].strip().lower() == "base64"
    if is_base64:
        params = params[:-1]
    media_type = ";".join(params).strip() or None
    raw = urllib.parse.unquote_to_bytes(payload)
    if is_base64:
        try:
            return base64.b64decode(raw, validate=True), media_type
        except (binascii.Error, ValueError) as exc:
            raise ContentError(f"data: URL payload is not valid base64: {exc}") from None
    return raw, media_type


def _origin_and_path(url: str) -> tuple[str, str, str]:
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), f"{host}:{port}", parts.path or "/"


def url_allowed(url: str, allow: Iterable[str]) -> bool:
    """True if ``url`` is under one of the ``allow`` prefixes (same scheme, host, port;
    path at or below the prefix's path). String prefixes alone would let
    ``https://cdn.example.com.evil.net/`` through, hence the parsing."""
    try:
        scheme, origin, path = _origin_and_path(url)
    except ValueError:
        return False
    if scheme not in ("http", "https"):
        return False
    if {".", ".."} & set(urllib.parse.unquote(path).split("/")):
        # '/files/../admin' starts with '/files/' but the server resolves it elsewhere.
        return False
    for prefix in allow:
        p_scheme, p_origin, p_path = _origin_and_path(prefix)
        if (scheme, origin) != (p_scheme, p_origin):
            continue
        if path == p_path or path.startswith(p_path if p_path.endswith("/") else p_path + "/"):
            return True
    return False


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, allow: tuple[str, ...]) -> None:
        self.allow = allow

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if not url_allowed(newurl, self.allow):
            raise ContentError(f"refusing redirect to {newurl!r}: not in the URL allow-list")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def http_fetcher(
    allow: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = DEFAULT_MAX_BYTES
) -> Fetcher:
    """A fetcher that GETs allowed http(s) URLs, re-checking redirects and capping size."""
    allowed = tuple(allow)
    opener = urllib.request.build_opener(_CheckedRedirects(allowed))

    def fetch(url: str) -> bytes:
        try:
            with opener.open(url, timeout=timeout) as response:
                data: bytes = response.read(max_bytes + 1)
        except ContentError:
            raise
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ContentError(f"cannot fetch {url!r}: {exc}") from None
        if len(data) > max_bytes:
            raise ContentError(f"{url!r} is larger than {max_bytes} bytes")
        return data

    return fetch


def load_url(url: str, *, allow: Iterable[str] | None = None, fetch: Fetcher | None = None) -> bytes:
    """Bytes behind ``url``: ``data:`` decoded; others only if under ``allow``."""
    if url[:5].lower() == "data:":
        return decode_data_url(url)[0]
    allowed = tuple(allow or ())
    if not allowed:
        raise ContentError(
            f"not fetching {url!r}: remote URLs are fetched only when you pass an allow-list "
            "(allow=['https://host/prefix/'])"
        )
    if not url_allowed(url, allowed):
        raise ContentError(f"not fetching {url!r}: it is not under any allowed URL prefix")
    return (fetch or http_fetcher(allowed))(url)
