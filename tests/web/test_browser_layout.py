"""Layout in headless Chromium: dark mode, phone width, long unbroken text, the Raw toggle,
and a long stored session whose first screen comes before its whole-history summary.

Screenshots: ``test-output/screenshots/layout-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.test_browser import open_file, visit, wait_until

LUMINANCE = """(selector) => {
  const color = getComputedStyle(document.querySelector(selector)).backgroundColor;
  const [r, g, b] = color.match(/\\d+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""
FOREGROUND = """(selector) => {
  const color = getComputedStyle(document.querySelector(selector)).color;
  const [r, g, b] = color.match(/\\d+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def dark(browser: Any, server: str) -> Iterator[Any]:
    from tests.web.conftest import DESKTOP, console_page

    with console_page(browser, base_url=server, color_scheme="dark", **DESKTOP) as opened:
        yield opened


@pytest.mark.parametrize("path", ["/sessions/showcase", "/sessions", "/open", "/traces", "/agents"])
def test_dark_mode_follows_the_system_and_keeps_text_readable(dark: Any, page: Any, path: str) -> None:
    visit(dark, path)
    assert dark.evaluate(LUMINANCE, "html") < 0.15
    assert dark.evaluate(FOREGROUND, "main") > 0.7
    visit(page, path)  # the same page in a light context is light
    assert page.evaluate(LUMINANCE, "html") > 0.85
    dark.console.screenshot("layout-dark" + path.replace("/", "-"))
    dark.console.assert_clean()


def test_dark_mode_cards_and_code_are_dark_too(dark: Any) -> None:
    visit(dark, "/sessions/showcase")
    for selector in ("details.seg", "pre", "button", ".find"):
        assert dark.evaluate(LUMINANCE, selector) < 0.25, selector
    dark.console.assert_clean()


@pytest.mark.parametrize("path", ["/sessions/showcase", "/sessions", "/sessions/long", "/open", "/traces",
                                  "/agents", "/compare?a=weather-12&b=weather-40"])
def test_phone_width_has_no_sideways_scroll(phone: Any, path: str) -> None:
    visit(phone, path)
    assert phone.evaluate(OVERFLOW) <= 1
    phone.console.screenshot("layout-phone" + path.split("?")[0].replace("/", "-"))
    phone.console.assert_clean()


def test_phone_toolbar_hides_nothing_at_the_top_or_at_an_anchor(phone: Any) -> None:
    visit(phone, "/sessions/showcase")
    toolbar = phone.locator(".toolbar").bounding_box()
    title = phone.locator("h1.conv-title").bounding_box()
    assert title["y"] >= toolbar["y"] + toolbar["height"] - 1
    # Jump to an entry far down: it lands below the sticky toolbar, not under it.
    last = phone.locator("section.entry").last
    target = last.get_attribute("id")
    phone.evaluate("(id) => { location.hash = id; }", target)
    phone.wait_for_timeout(200)
    box = last.bounding_box()
    bar = phone.locator(".toolbar").bounding_box()
    assert box["y"] >= bar["y"] + bar["height"] - 1
    phone.console.assert_clean()


def test_long_unbroken_text_wraps_instead_of_widening_the_page(page: Any) -> None:
    unbroken = "x" * 60_000
    state = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "user", "contents": [
            {"$type": "text", "text": "short " + "y" * 3_000},
            {"$type": "text", "text": unbroken}]}]},
        {"$type": "response", "messages": [{"role": "assistant", "contents": [
            {"$type": "functionCall", "callId": "c", "name": "f", "arguments": {"blob": "z" * 20_000}},
            {"$type": "functionResult", "callId": "c", "result": "w" * 20_000}]}]}]}}
    open_file(page, "unbroken.json", state)
    page.click(".expand-all")
    assert page.evaluate(OVERFLOW) <= 1
    page.click(".toggle-raw")
    assert page.evaluate(OVERFLOW) <= 1
    page.click(".toggle-raw")
    page.console.screenshot("layout-unbroken")
    page.console.assert_clean()


def test_the_raw_toggle_names_the_state_the_page_is_in(page: Any) -> None:
    visit(page, "/sessions/showcase")
    toggle = page.locator(".toggle-raw")
    assert toggle.inner_text() == "Raw: off" and toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert toggle.inner_text() == "Raw: on" and toggle.get_attribute("aria-pressed") == "true"
    assert page.locator("body.raw").count() == 1
    page.reload()
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert page.locator(".toggle-raw").inner_text() == "Raw: on"
    page.locator(".toggle-raw").click()
    assert page.locator(".toggle-raw").inner_text() == "Raw: off"
    page.console.assert_clean()


def test_a_long_session_paints_its_first_screen_then_its_whole_history_summary(page: Any) -> None:
    visit(page, "/sessions/long")
    wait_until(page, "!document.querySelector('.totals.pending')")
    assert "tokens in" in page.locator(".totals").inner_text()
    assert page.locator(".tools-aside code", has_text="get_weather").count() == 1
    assert page.locator("section.entry").count() < 200
    page.console.screenshot("layout-long-summary")
    page.console.assert_clean()
