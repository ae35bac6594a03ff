"""Compare in headless Chromium: both sides picked from lists, turns aligned, what changed
marked word by word.

Screenshots: ``test-output/screenshots/compare-*.png``.
"""

from __future__ import annotations

import copy
from typing import Any

from agentfolio.samples import showcase as samples
from tests.web.test_browser import open_file, visit


def edited() -> tuple[dict, dict]:
    before = samples.durable_session(12, seed=1)
    after = copy.deepcopy(before)
    history = after["data"]["conversationHistory"]
    history[3]["messages"][0]["contents"][2]["text"] = "Answer 2: it is **rainy** in city 2 today."
    del history[6:8]  # a whole turn removed
    history.append({"$type": "request", "createdAt": "2025-11-04T11:00:00+00:00", "correlationId": "extra",
                    "messages": [{"role": "user", "contents": [{"$type": "text", "text": "One more question"}]}]})
    return before, after


def pick(page: Any, side: str, label: str) -> None:
    select = page.locator(f"select[name={side}]")
    value = select.locator("option", has_text=label).first.get_attribute("value")
    select.select_option(value)


def test_two_sessions_picked_from_lists_are_aligned_turn_by_turn(page: Any) -> None:
    before, after = edited()
    open_file(page, "before.json", before)
    open_file(page, "after.json", after)
    visit(page, "/compare")
    pick(page, "a", "before.json")
    pick(page, "b", "after.json")
    with page.expect_navigation():
        page.click(".compare-form button[type=submit]")
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    statuses = page.locator(".cmp-row[data-status]").evaluate_all("(rows) => rows.map((r) => r.dataset.status)")
    assert statuses == ["same"] * 3 + ["changed"] + ["same"] * 2 + ["left"] * 2 + ["same"] * 4 + ["right"]
    summary = page.locator(".compare-summary").inner_text()
    assert "9 same" in summary and "1 changed" in summary and "2 only on the left" in summary
    changed = page.locator(".cmp-row.cmp-changed")
    assert changed.locator("del").all_inner_texts() == ["**sunny**", "2."]
    assert changed.locator("ins").all_inner_texts() == ["**rainy**", "2 today."]
    # Each side keeps its own entry, and ids stay unique across the two.
    assert changed.locator("#L-e3").count() == 1 and changed.locator("#R-e3").count() == 1
    ids = page.locator("[id]").evaluate_all("(all) => all.map((e) => e.id)")
    assert len(ids) == len(set(ids))
    assert "not on this side" in page.locator(".cmp-row.cmp-right .cmp-side").first.inner_text()
    page.console.screenshot("compare-aligned")
    only = page.url + "&changes=1"
    visit(page, only.replace(page.url.split("?")[0] + "?", "/compare?"))
    assert page.locator(".cmp-row[data-status]").count() == 4  # the same turns are left out
    page.console.assert_clean()


def test_stored_sessions_compare_and_the_pickers_keep_the_choice(page: Any) -> None:
    visit(page, "/compare?a=weather-12&b=weather-40")
    assert page.locator("select[name=a]").input_value() == "weather-12"
    assert page.locator("select[name=b]").input_value() == "weather-40"
    summary = page.locator(".compare-summary").inner_text()
    assert "12 same" in summary and "28 only on the right" in summary
    page.console.assert_clean()


def test_a_side_that_is_neither_a_session_nor_a_trace_is_refused(page: Any) -> None:
    visit(page, "/compare?a=weather-12&b=no-such-session")
    assert "right: no session or open file 'no-such-session'" in page.locator(".error-text").inner_text()
    page.console.assert_clean()


def test_two_traces_are_aligned_span_by_span(page: Any) -> None:
    before = samples.span_export()
    after = copy.deepcopy(before)
    spans = {span["id"]: span for span in after["spans"]}
    spans["s2"]["result_payload"] = {"forecast": "sun"}  # the same call, another answer
    after["spans"].remove(spans["s3"])  # a failed call left out
    after["spans"].append({**copy.deepcopy(spans["s2"]), "id": "s6", "parent_span_id": "s4",
                           "payload": {"tool": "book_table", "args": {"city": "Paris"}}})
    first = open_file(page, "trace-before.json", before, via="/traces").rsplit("/", 1)[1]
    second = open_file(page, "trace-after.json", after, via="/traces").rsplit("/", 1)[1]
    visit(page, "/compare")
    pick(page, "a", "trace-before.json")
    pick(page, "b", "trace-after.json")
    with page.expect_navigation():
        page.click(".compare-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert f"a=file%3A{first}" in page.url and f"b=file%3A{second}" in page.url
    rows = page.locator(".compare-grid .cmp-row[data-status]")
    statuses = rows.evaluate_all("(all) => all.map((row) => row.dataset.status)")
    assert statuses.count("left") == 1 and statuses.count("right") == 1 and statuses.count("changed") == 1
    assert statuses.count("same") == 3  # s1, s4 and s5 as they were
    changed = rows.filter(has=page.locator(".cmp-diff"))
    assert "rain" in changed.locator("del").inner_text()
    assert "sun" in changed.locator("ins").inner_text()
    left_only = page.locator('.cmp-row[data-status="left"] .cmp-side').first
    assert left_only.locator(".badge.status-failed").count() == 1
    right_only = page.locator('.cmp-row[data-status="right"] .cmp-side').nth(1)
    assert right_only.locator(".cmp-span").get_attribute("data-span") == "s6"
    assert right_only.locator(".cmp-span").evaluate("el => el.classList.contains('depth-1')")  # under s4
    summary = page.locator(".compare-summary").inner_text()
    assert "3 same" in summary and "1 changed" in summary
    page.console.screenshot("compare-traces-aligned")
    page.console.assert_clean()
