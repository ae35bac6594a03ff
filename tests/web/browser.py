"""Headless Debian chromium driven by Playwright, and the viewer served by real uvicorn.

Shared by the browser tests (``tests/web``) and the benchmark (``bench/viewer.py``).
Chromium is Debian's ``/usr/bin/chromium`` (``scripts/ensure-chromium.sh`` installs it
when missing); Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SCREENSHOTS = ROOT / "test-output" / "screenshots"


def chromium_problem() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install playwright)"
    if not os.path.exists(CHROMIUM):
        script = ROOT / "scripts" / "ensure-chromium.sh"
        if hasattr(os, "geteuid") and os.geteuid() == 0 and script.exists():
            subprocess.run(["bash", str(script)], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=900)
        if not os.path.exists(CHROMIUM):
            return f"{CHROMIUM} is missing and could not be installed (run scripts/ensure-chromium.sh as root)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(*extra: str, timeout: float = 120.0) -> Iterator[str]:
    """``tests/web/serve_app.py`` in a subprocess on a free port; yields its base URL."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="agentfolio-web-") as data_dir:
        log = open(Path(data_dir) / "server.log", "w+")
        process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "web" / "serve_app.py"), "--port", str(port),
                                    "--data-dir", data_dir, *extra], stdout=log, stderr=subprocess.STDOUT,
                                   cwd=str(ROOT))
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"the viewer server exited: {log.read()[-4000:]}")
                try:
                    with urllib.request.urlopen(base + "/static/viewer.css", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the viewer server did not start in time") from None
                    time.sleep(0.1)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


@contextmanager
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def write_gallery(folder: Path = SCREENSHOTS) -> Path | None:
    """``index.html`` beside the screenshots: every picture under its name, grouped by page
    kind (the name's first word), each with links to the one before and after, so a reviewer
    can page through what the browser tests saw.  Returns its path, or None without pictures."""
    import html
    from datetime import UTC, datetime

    pictures = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not pictures:
        return None
    groups: dict[str, list[Path]] = {}
    for picture in pictures:
        groups.setdefault(picture.stem.split("-", 1)[0], []).append(picture)
    contents = " · ".join(f'<a href="#group-{html.escape(group)}">{html.escape(group)} ({len(items)})</a>'
                          for group, items in groups.items())
    figures = []
    for group, items in groups.items():
        figures.append(f'<h2 id="group-{html.escape(group)}">{html.escape(group)}</h2>')
        for picture in items:
            at = pictures.index(picture)
            before = f'<a href="#{html.escape(pictures[at - 1].stem)}">← {html.escape(pictures[at - 1].stem)}</a>' \
                if at else ""
            after = f'<a href="#{html.escape(pictures[at + 1].stem)}">{html.escape(pictures[at + 1].stem)} →</a>' \
                if at + 1 < len(pictures) else ""
            taken = datetime.fromtimestamp(picture.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
            name = html.escape(picture.stem)
            figures.append(f'<figure id="{name}"><figcaption><b>{name}</b> <small>taken {taken}</small> '
                           f'<nav>{before} <a href="#top">↑ contents</a> {after}</nav></figcaption>'
                           f'<a href="{html.escape(picture.name)}"><img src="{html.escape(picture.name)}" alt="{name}"'
                           f' loading="lazy"></a></figure>')
    index = folder / "index.html"
    index.write_text(
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>agentfolio viewer: screenshots</title>'
        "<style>body{font:15px system-ui,sans-serif;margin:1em 2em}figure{margin:1.5em 0;border-top:1px solid #ccc}"
        "figcaption{display:flex;gap:1em;align-items:baseline;padding:0.4em 0}nav{margin-left:auto}"
        "img{max-width:100%;border:1px solid #ddd}</style>"
        f'<h1 id="top">What the browser tests saw: {len(pictures)} screenshots</h1><p>{contents}</p>'
        + "".join(figures) + "</html>\n", encoding="utf-8")
    return index
