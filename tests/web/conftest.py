"""Fixtures for the browser tests: one chromium and one server for the whole run.

The tests skip, saying why, only when chromium cannot be had and ``CI`` is unset; on CI
they fail instead, so a missing browser can never pass silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.storage import database_url, postgres_url, settings  # noqa: F401
from tests.web.browser import SCREENSHOTS, chromium, chromium_problem, running_server, write_gallery


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run on CI: {reason}")
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    problem = chromium_problem()
    if problem:
        _unavailable(problem)
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    with running_server("--many", "55", "--long", "200") as base:
        yield base


class Console:
    """Console errors and uncaught exceptions of one page, and its screenshots."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda message: self.errors.append(f"console.{message.type}: {message.text}")
                if message.type in ("error", "assert") else None)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_clean(self) -> None:
        assert self.errors == [], "console errors:\n" + "\n".join(self.errors)
        assert self.dialogs == [], f"dialogs opened: {self.dialogs}"

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        # A whole-page picture from the top, so sticky bars are drawn where they belong.
        scrolled = self.page.evaluate("() => [window.scrollX, window.scrollY]")
        self.page.evaluate("() => window.scrollTo(0, 0)")
        self.page.screenshot(path=str(path), full_page=True)
        self.page.evaluate("([x, y]) => window.scrollTo(x, y)", scrolled)
        return path


DESKTOP = {"viewport": {"width": 1400, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


@contextmanager
def console_page(browser: Any, **options: Any) -> Iterator[Any]:
    """A page in a context of its own (``options`` as ``browser.new_context`` takes them),
    its console watched (``page.console``); the context is closed afterwards."""
    context = browser.new_context(**options)
    opened = context.new_page()
    opened.console = Console(opened)
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    with console_page(browser, base_url=server, **DESKTOP) as opened:
        yield opened


@pytest.fixture
def phone(browser: Any, server: str) -> Iterator[Any]:
    with console_page(browser, base_url=server, **PHONE) as opened:
        yield opened


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Page through the screenshots afterwards: ``test-output/screenshots/index.html``."""
    write_gallery()
