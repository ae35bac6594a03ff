"""How pages look in headless Chromium: the phone's folded menu and view options, the
export's toolbar, the context kinds each with a look of its own, and template variables
inline in their text.

Screenshots: ``test-output/screenshots/looks-*.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentfolio.samples import showcase as samples
from tests.web.test_browser import open_file, visit, wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_the_phone_menu_folds_away_and_unfolds(phone: Any) -> None:
    visit(phone, "/sessions")
    nav = phone.locator("#main-nav")
    assert not nav.is_visible()
    button = phone.locator(".nav-toggle")
    assert button.get_attribute("aria-expanded") == "false"
    button.click()
    assert nav.is_visible() and button.get_attribute("aria-expanded") == "true"
    phone.console.screenshot("looks-phone-menu")
    nav.locator("a", has_text="Usage").click()
    phone.wait_for_load_state("networkidle")
    assert phone.url.endswith("/usage")
    phone.console.assert_clean()


def test_the_phone_toolbar_is_one_row_until_its_options_are_asked_for(phone: Any) -> None:
    visit(phone, "/sessions/showcase")
    toolbar = phone.locator(".toolbar").bounding_box()
    assert toolbar["height"] < 60  # the find box and the View button, one row
    assert not phone.locator(".toggle-raw").is_visible()
    phone.click(".toolbar-toggle")
    assert phone.locator(".toggle-raw").is_visible() and phone.locator("select.show-filter").is_visible()
    phone.click(".toggle-raw")
    assert phone.locator(".toggle-raw").inner_text() == "Raw: on"
    # Scrolled, the title and the entries pass under the toolbar, never behind a gap above it.
    phone.mouse.wheel(0, 1500)
    phone.wait_for_timeout(200)
    assert phone.locator(".toolbar").bounding_box()["y"] == 0
    phone.console.screenshot("looks-phone-toolbar")
    phone.console.assert_clean()


def test_the_exports_toolbar_sits_at_the_top_and_its_title_below_it(page: Any, tmp_path: Any) -> None:
    visit(page, "/sessions/showcase")
    with page.expect_download() as download:
        page.click("a[download]")
    path = tmp_path / "export.html"
    download.value.save_as(path)
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    bar = page.locator(".toolbar").bounding_box()
    title = page.locator("h1.conv-title").bounding_box()
    assert title["y"] >= bar["y"] + bar["height"] - 1
    page.mouse.wheel(0, 2000)
    page.wait_for_timeout(200)
    assert page.locator(".toolbar").bounding_box()["y"] == 0  # no gap above the stuck toolbar
    page.console.screenshot("looks-export-scrolled")
    page.console.assert_clean()


def test_memory_skills_tools_and_long_text_each_look_their_own(page: Any) -> None:
    open_file(page, "envelope.json", (FIXTURES / "envelope" / "gallery.json").read_bytes())
    looks = {}
    for kind in ("memory", "skills", "tool_overview", "long_text"):
        segment = page.locator(f'details.seg-{kind}').first
        segment.locator(":scope > summary").click()
        looks[kind] = segment.evaluate("""(el) => {
          const badge = getComputedStyle(el.querySelector('.badge'));
          return [getComputedStyle(el).borderLeftColor + getComputedStyle(el).borderLeftStyle, badge.backgroundColor + badge.color];
        }""")
    borders = {look[0] for look in looks.values()}
    badges = {look[1] for look in looks.values()}
    assert len(borders) == 4 and len(badges) == 4, looks
    assert page.locator("details.seg-memory .memory-items li").count() >= 1
    assert page.locator("details.seg-skills .skill-chips li").count() >= 1
    assert page.locator("details.seg-tool_overview table.tool-table tbody tr").count() >= 1
    page.console.screenshot("looks-context-kinds")
    page.console.assert_clean()


def envelope_with_a_variable() -> dict:
    return {"version": "1.0", "messages": [{"id": "m1", "role": "user", "timestamp": 1730748785000, "segments": [
        {"kind": "text", "content": "What is the weather in"},
        {"kind": "static_var", "name": "user_city", "value": "Paris", "description": "Where the user lives"},
        {"kind": "text", "content": "this **weekend**?"},
        {"kind": "text", "content": "# A heading\n\nA paragraph of its own."}]}]}


def test_a_template_variable_sits_inline_in_its_text(page: Any) -> None:
    open_file(page, "variables.json", envelope_with_a_variable())
    flow = page.locator("p.seg-flow")
    assert flow.count() == 1
    assert " ".join(flow.inner_text().split()) == "What is the weather in {{user_city}} Paris this weekend?"
    assert flow.locator("strong").inner_text() == "weekend"
    tops = flow.evaluate("""(p) => [...p.querySelectorAll('.seg-inline, .seg-static_var')]
                              .map((el) => Math.round(el.getBoundingClientRect().top))""")
    assert max(tops) - min(tops) <= 4, tops  # one line
    # The multi-paragraph text stays a block of its own.
    assert page.locator("div.seg-text h1").inner_text() == "A heading"
    page.locator(".toggle-raw").click()
    wait_until(page, "document.body.classList.contains('raw')")
    assert "this **weekend**?" in flow.inner_text()
    page.console.screenshot("looks-inline-variable")
    page.console.assert_clean()


def test_the_showcase_variable_after_a_long_text_stays_readable(page: Any) -> None:
    open_file(page, "showcase.json", samples.showcase_session())
    variable = page.locator(".seg-static_var").first
    assert "2025-11-15 to 2025-11-16" in variable.inner_text()
    page.console.assert_clean()
