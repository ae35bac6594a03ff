"""axe-core over every kind of page, light and dark, and a few at phone width: no serious
or critical violation (contrast, names of controls, controls nested in controls, links told
apart by more than colour, ...).  Failures list each rule with the elements it names."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentfolio.samples import showcase as samples
from tests.web.accessibility import assert_accessible
from tests.web.test_browser import open_file, visit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _stored_trace_with_a_span_selected(page: Any) -> None:
    visit(page, "/traces")
    page.locator(".trace-table tbody td.trace-id a").first.click()
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    row = page.locator(".span-row[data-id]").last
    row.click()
    page.wait_for_selector(f'.trace-detail .span-detail-pane[data-span="{row.get_attribute("data-id")}"]')


def _agent(page: Any) -> None:
    visit(page, "/agents")
    page.locator(".agent-table tbody tr a").first.click()
    page.wait_for_selector("html[data-viewer-ready]", state="attached")


def _opened(name: str, make: Callable[[], Any], via: str = "/open") -> Callable[[Any], None]:
    def opener(page: Any) -> None:
        open_file(page, name, make(), via=via)
        page.wait_for_selector("html[data-viewer-ready]", state="attached")
    return opener


def _export(page: Any) -> None:
    response = page.request.get("/sessions/showcase/export.html")
    assert response.ok
    path = Path(tempfile.mkdtemp(prefix="agentfolio-export-")) / "showcase.html"
    path.write_text(response.text(), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")


def _compared_traces(page: Any) -> None:
    after = samples.span_export()
    after["spans"][1]["result_payload"] = {"forecast": "sun"}
    first = open_file(page, "trace-a.json", samples.span_export(), via="/traces").rsplit("/", 1)[1]
    second = open_file(page, "trace-b.json", after, via="/traces").rsplit("/", 1)[1]
    visit(page, f"/compare?a=file:{first}&b=file:{second}")


def _path(path: str) -> Callable[[Any], None]:
    return lambda page: visit(page, path)


PAGES: dict[str, Callable[[Any], None]] = {
    "sessions": _path("/sessions"),
    "sessions-search": _path("/sessions?q=Question+38"),
    "session-showcase": _path("/sessions/showcase"),
    "session-long": _path("/sessions/long"),
    "session-tool-calls-only": _path("/sessions/timed-1?show=tools"),
    "usage": _path("/usage"),
    "open": _path("/open"),
    "traces": _path("/traces"),
    "trace-with-detail": _stored_trace_with_a_span_selected,
    "agents": _path("/agents"),
    "agent": _agent,
    "alerts": _path("/alerts"),
    "compare-pickers": _path("/compare"),
    "compare-sessions": _path("/compare?a=weather-12&b=weather-40"),
    "compare-traces": _compared_traces,
    "login": _path("/login"),
    "opened-envelope-gallery": _opened("gallery.json", lambda: (FIXTURES / "envelope" / "gallery.json").read_bytes()),
    "opened-durable-2.0": _opened("state.json", lambda: (
        FIXTURES / "durable_state" / "shared-durable-agent-state-2.0.json").read_bytes()),
    "opened-trace-export": _opened("trace.json", samples.span_export, via="/traces"),
    "opened-schema-version": _opened("schema-version.json", samples.schema_version),
    "opened-body": _opened("body.json", lambda: {"parts": [
        {"content_type": "text/markdown", "content": "Hello **there**"},
        {"name": "/photos/seine.png", "content_type": "image/png", "content_encoding": "base64",
         "content": samples.tiny_png().split(",", 1)[1]}]}),
    "export": _export,
}
PHONE = ["sessions", "session-showcase", "traces", "trace-with-detail", "compare-sessions"]


@pytest.fixture(params=["light", "dark"])
def scheme_page(request: Any, browser: Any, server: str) -> Iterator[Any]:
    from tests.web.conftest import DESKTOP, console_page

    with console_page(browser, base_url=server, color_scheme=request.param, **DESKTOP) as opened:
        yield opened


@pytest.mark.parametrize("name", list(PAGES))
def test_no_serious_accessibility_violations(scheme_page: Any, name: str) -> None:
    PAGES[name](scheme_page)
    assert_accessible(scheme_page)


@pytest.mark.parametrize("name", PHONE)
def test_no_serious_accessibility_violations_at_phone_width(phone: Any, name: str) -> None:
    PAGES[name](phone)
    assert_accessible(phone)
