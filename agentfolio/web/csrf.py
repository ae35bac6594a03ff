"""Cross-site requests are refused: a page on another origin must not be able to sign a
viewer in as someone else (login CSRF), sign it out, or open files in it.

Browsers say where a request comes from: ``Sec-Fetch-Site`` (all current browsers) and,
for browsers without it, ``Origin`` (every cross-origin POST). A state-changing request is accepted only when they
name this very origin — scheme, host *and port*, since ``SameSite`` cookies do not
separate two ports of one host. A request with neither header does not come from a
browser page (curl, the SDKs), so it cannot be a cross-site forgery and is let through.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import HTTPException, Request

__all__ = ["refuse_cross_site"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME = frozenset({"same-origin", "none"})  # "none": typed in the address bar, a bookmark


def _own_origin(request: Request) -> str:
    host = request.headers.get("host") or (
        f"{request.url.hostname}:{request.url.port}" if request.url.port else str(request.url.hostname))
    return f"{request.url.scheme}://{host}".lower()


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def refuse_cross_site(request: Request) -> None:
    """A FastAPI dependency: 403 for a state-changing request another origin sent."""
    if request.method in SAFE_METHODS:
        return
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        # Set by the browser and not by the page; with the viewer's no-referrer policy
        # the browser sends ``Origin: null`` even for its own forms, so this comes first.
        if fetch_site.lower() in SAME:
            return
        raise HTTPException(403, "cross-site request refused: this form can only be sent from the viewer itself")
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        origin = _origin_of(referer) if referer else None
        if origin is None:
            return
    if origin.lower() != _own_origin(request):
        raise HTTPException(403, "cross-site request refused: this form can only be sent from the viewer itself")
