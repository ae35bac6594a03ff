"""The trace pages in headless Chromium: the list's names, filters and sorting; the split
pane (selection in the URL through back, forward and reload), collapsing, zooming,
j/k; every span of a 6,000-span trace reached by scrolling while the page weighs the
same as a small trace's; headers over their columns to the pixel; LLM spans' messages
drawn as a conversation; script payloads in names and attributes shown as text."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agentfolio.samples import showcase as samples
from tests.web.accessibility import assert_accessible
from tests.web.browser import running_server
from tests.web.test_browser import open_file, wait_until
from tests.web.xss import xss_span_export

BIG = 6000
SMALL = 300


@pytest.fixture(scope="module")
def trace_server() -> Iterator[str]:
    with running_server("--trace-spans", str(SMALL), "--trace-spans", str(BIG), timeout=600) as base:
        yield base


@pytest.fixture
def tpage(browser: Any, trace_server: str) -> Iterator[Any]:
    from tests.web.conftest import console_page

    with console_page(browser, viewport={"width": 1500, "height": 950}, base_url=trace_server) as opened:
        yield opened


def ready(page: Any, path: str) -> None:
    page.goto(path)
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    if "/traces/" in path or "/open/" in path:
        page.wait_for_selector("html[data-trace-ready]", state="attached")


def trace_links(page: Any) -> dict[str, str]:
    """Trace label (its external identifier) → its page, from the list."""
    ready(page, "/traces")
    links = page.locator(".trace-table tbody td.trace-id a")
    return {links.nth(i).inner_text(): links.nth(i).get_attribute("href") for i in range(links.count())}


def selected_id(page: Any) -> str | None:
    found = page.locator(".span-row[aria-selected=true]")
    return found.get_attribute("data-id") if found.count() else None


def detail_span(page: Any) -> str | None:
    pane = page.locator(".trace-detail .span-detail-pane")
    return pane.get_attribute("data-span") if pane.count() else None


def wait_detail(page: Any, span_id: str) -> None:
    wanted = json.dumps(span_id)  # ids may hold anything (an opened file's do): compared, never spliced in
    wait_until(page, f"Array.from(document.querySelectorAll('.trace-detail .span-detail-pane'))"
                     f".some(pane => pane.getAttribute('data-span') === {wanted})")


# -- the list ---------------------------------------------------------------------------


def test_the_list_names_agents_filters_and_sorts(tpage: Any) -> None:
    links = trace_links(tpage)
    assert {f"research-{SMALL}", f"research-{BIG}"} <= set(links)
    rows = tpage.locator(".trace-table tbody tr")
    agents = {rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())}
    assert {"Atlas research", "Breeze", "Atlas"} <= agents  # names, not ids
    assert not any(re.fullmatch(r"[0-9a-z]{32}", name) for name in agents)
    big = rows.filter(has_text=f"research-{BIG}")
    assert big.locator("td").nth(5).inner_text() == f"{BIG:,}"
    assert re.search(r"\d", big.locator("td").nth(3).inner_text())  # a duration
    assert big.locator("td").nth(4).locator(".badge").inner_text() == "complete"
    tpage.console.screenshot("traces-list")
    tpage.fill("input[name=agent]", "breeze")
    with tpage.expect_navigation():
        tpage.click(".trace-filters button[type=submit]")
    names = tpage.locator(".trace-table tbody td:nth-child(2)").all_inner_texts()
    assert names and set(names) == {"Breeze"}
    ready(tpage, "/traces?flagged=yes")
    flagged = tpage.locator(".trace-table tbody tr")
    assert flagged.count() >= 1
    assert all(int(flagged.nth(i).locator("td").nth(7).inner_text().replace(",", "")) > 0
               for i in range(flagged.count()))
    ready(tpage, "/traces")
    with tpage.expect_navigation():
        tpage.click(".trace-table thead th:nth-child(6) a")  # Spans: most first
    counts = [int(text.replace(",", "")) for text in tpage.locator(".trace-table tbody td:nth-child(6)").all_inner_texts()]
    assert counts == sorted(counts, reverse=True) and counts[0] == BIG
    assert tpage.locator(".trace-table thead th:nth-child(6)").get_attribute("aria-sort") == "descending"
    with tpage.expect_navigation():
        tpage.click(".trace-table thead th:nth-child(6) a")
    counts = [int(text.replace(",", "")) for text in tpage.locator(".trace-table tbody td:nth-child(6)").all_inner_texts()]
    assert counts == sorted(counts)
    tpage.console.assert_clean()


# -- the split pane ------------------------------------------------------------------------


def test_selection_lives_in_the_url_through_back_forward_and_reload(tpage: Any) -> None:
    page = tpage
    ready(page, trace_links(page)[f"research-{SMALL}"])
    rows = page.locator(".span-row[role=row][data-id]")
    first, second = rows.nth(1).get_attribute("data-id"), rows.nth(4).get_attribute("data-id")
    rows.nth(1).click()
    wait_detail(page, first)
    assert page.url.endswith(f"?span={first}")
    rows.nth(4).click()
    wait_detail(page, second)
    assert page.url.endswith(f"?span={second}") and selected_id(page) == second
    page.go_back()
    wait_detail(page, first)
    assert selected_id(page) == first and page.url.endswith(f"?span={first}")
    page.go_forward()
    wait_detail(page, second)
    assert selected_id(page) == second
    page.reload()
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    assert selected_id(page) == second and detail_span(page) == second  # drawn by the server
    detail = page.locator(".trace-detail")
    for part in ("Params", "Result", "validation"):
        assert part.lower() in detail.inner_text().lower()
    page.console.screenshot("trace-split-pane")
    page.console.assert_clean()


def test_subtrees_collapse_and_expand(tpage: Any) -> None:
    page = tpage
    ready(page, trace_links(page)[f"research-{SMALL}"])
    step = page.locator(".span-row[aria-expanded]", has=page.locator(".span-type", has_text="workflow:step")).first
    step_id, depth = step.get_attribute("data-id"), int(step.get_attribute("data-depth"))
    children = page.locator(f".span-row[data-parent='{step_id}']")
    assert children.count() >= 2 and children.first.is_visible()
    step.locator(".twisty").click()
    assert step.get_attribute("aria-expanded") == "false"
    assert all(not children.nth(i).is_visible() for i in range(children.count()))
    assert "Expand" in step.locator(".twisty").get_attribute("aria-label")
    step.locator(".twisty").click()
    assert all(children.nth(i).is_visible() for i in range(children.count()))
    page.click(".trace-collapse-all")
    visible = page.locator(".span-row[data-id]:visible")
    assert visible.count() == 1 and int(visible.first.get_attribute("data-depth")) == 0
    page.click(".trace-expand-all")
    assert page.locator(f".span-row[data-id][data-depth='{depth + 1}']:visible").count() >= 2
    page.console.assert_clean()


def test_the_timeline_zooms_and_shows_its_window(tpage: Any) -> None:
    page = tpage
    ready(page, trace_links(page)[f"research-{SMALL}"])
    labels = "els => els.map(e => e.textContent)"
    before = page.locator(".axis .ticks text").evaluate_all(labels)
    assert before[0] == "0" and len(before) >= 3
    bar = page.locator(".span-row[data-id] .cell-bar rect").nth(3)
    x0, w0 = float(bar.get_attribute("x").rstrip("%")), float(bar.get_attribute("width").rstrip("%"))
    page.click(".trace-zoom-in")
    page.click(".trace-zoom-in")
    w1 = float(bar.get_attribute("width").rstrip("%"))
    assert w1 == pytest.approx(w0 * 4, rel=0.02) or w0 <= 0.15  # four times as wide at a quarter of the window
    assert page.locator(".axis .ticks text").evaluate_all(labels) != before
    assert "of" in page.locator(".trace-window").inner_text()
    row = page.locator(".span-row[data-id]").nth(3)
    row.click()
    wait_detail(page, row.get_attribute("data-id"))
    page.click(".trace-detail .trace-zoom-span")
    zoomed = [float(v) for v in page.locator(".trace-grid").get_attribute("data-zoom").split(",")]
    start, end = float(row.get_attribute("data-start")), float(row.get_attribute("data-end"))
    assert zoomed[0] <= start and zoomed[1] >= end and zoomed[1] - zoomed[0] <= (end - start) * 1.3 + 2
    rect = row.locator(".cell-bar rect")
    assert float(rect.get_attribute("width").rstrip("%")) > 70  # the span fills most of the window
    page.click(".trace-zoom-reset")
    assert float(bar.get_attribute("x").rstrip("%")) == pytest.approx(x0, abs=0.01)
    page.console.screenshot("trace-zoomed")
    page.console.assert_clean()


def test_j_and_k_step_between_spans_and_arrows_fold(tpage: Any) -> None:
    page = tpage
    ready(page, trace_links(page)[f"research-{SMALL}"])
    rows = page.locator(".span-row[data-id]")
    page.locator(".trace-grid").focus()
    page.keyboard.press("j")
    assert selected_id(page) == rows.nth(0).get_attribute("data-id")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert selected_id(page) == rows.nth(2).get_attribute("data-id")
    page.keyboard.press("k")
    assert selected_id(page) == rows.nth(1).get_attribute("data-id")
    wait_detail(page, rows.nth(1).get_attribute("data-id"))
    assert page.url.endswith("?span=" + rows.nth(1).get_attribute("data-id"))
    page.keyboard.press("k")
    page.keyboard.press("ArrowLeft")  # the root: its subtree folds
    assert rows.nth(0).get_attribute("aria-expanded") == "false"
    page.keyboard.press("j")  # nothing below it is visible: j reaches the next visible row (none: stays)
    assert selected_id(page) == rows.nth(0).get_attribute("data-id")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("j")
    assert selected_id(page) == rows.nth(1).get_attribute("data-id")
    page.console.assert_clean()


# -- any size ----------------------------------------------------------------------------


def page_bytes(base: str, path: str) -> int:
    with urllib.request.urlopen(base + path) as answer:
        return len(answer.read())


def test_every_span_of_a_big_trace_is_reached_and_the_page_weighs_the_same(tpage: Any, trace_server: str) -> None:
    page = tpage
    links = trace_links(page)
    small, big = page_bytes(trace_server, links[f"research-{SMALL}"]), page_bytes(trace_server, links[f"research-{BIG}"])
    assert big < small * 1.3, (small, big)  # the first page, not the trace: no payload inlined
    ready(page, links[f"research-{BIG}"])
    assert page.locator(".span-row[data-id]").count() < 300
    scroller = page.locator(".trace-scroll")
    ids: list[str] = []
    seen: set[str] = set()
    in_page = "rows => rows.map(r => r.getAttribute('data-id'))"
    most = 0
    for _ in range(400):
        done = page.locator(".rows-after").count() == 0
        shown = page.locator(".span-row[data-id]").evaluate_all(in_page)
        most = max(most, len(shown))
        fresh = [span_id for span_id in shown if span_id not in seen]
        assert not fresh or shown[-len(fresh):] == fresh  # read in order: new rows only at the end
        ids.extend(fresh)
        seen.update(fresh)
        if done:
            break
        scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(120)
    assert len(ids) == BIG and len(seen) == BIG
    assert most <= 1400  # rows far above are dropped from the page (read again on the way back)
    assert page.locator(".rows-before").count() == 1
    last = ids[-1]
    page.locator(f"#span-{last}").click()
    wait_detail(page, last)
    # A link to the last span opens on it: the rows around it, some earlier ones to load.
    ready(page, f"{links[f'research-{BIG}']}?span={last}")
    assert selected_id(page) == last and detail_span(page) == last
    assert page.locator(".rows-before").count() == 1
    assert page.locator(".span-row[data-id]").count() <= 260
    page.keyboard.press("k")
    assert selected_id(page) == ids[-2]
    linked_bytes = page_bytes(trace_server, f"{links[f'research-{BIG}']}?span={last}")
    assert linked_bytes < small * 1.3
    page.console.screenshot("trace-6000-end")
    page.console.assert_clean()


def test_headers_sit_over_their_columns_and_rows_never_wrap(tpage: Any) -> None:
    page = tpage
    ready(page, trace_links(page)[f"research-{SMALL}"])
    head = page.locator(".span-head .cell")
    failed = page.locator(".span-row[data-id]", has=page.locator(".badge.status-failed")).first
    complete = page.locator(".span-row[data-id]", has=page.locator(".badge.status-complete")).first
    for row in (complete, failed, page.locator(".span-row[data-id]").nth(7)):
        cells = row.locator(".cell")
        assert cells.count() == head.count() == 5
        for i in range(5):
            header, cell = head.nth(i).bounding_box(), cells.nth(i).bounding_box()
            assert abs(header["x"] - cell["x"]) <= 1, (i, header, cell)
            assert abs(header["width"] - cell["width"]) <= 1, (i, header, cell)
        assert row.locator(".cell-status .badge").count() == 1  # the status is a badge in its own cell
    heights = page.locator(".span-row[data-id]").evaluate_all(
        "rows => rows.slice(0, 80).map(r => Math.round(r.getBoundingClientRect().height))")
    assert max(heights) - min(heights) <= 1, heights  # one line each: nothing wraps
    tint = "el => getComputedStyle(el).backgroundColor"
    assert failed.evaluate(tint) == complete.evaluate(tint)  # no row tint for a status
    page.console.assert_clean()


# -- messages ----------------------------------------------------------------------------


def test_llm_spans_messages_are_drawn_as_a_conversation(tpage: Any) -> None:
    page = tpage
    links = trace_links(page)
    ready(page, links[f"research-{SMALL}"])
    llm = page.locator(".span-row[data-id]", has=page.locator(".span-type", has_text="langchain:llm")).first
    llm.click()
    wait_detail(page, llm.get_attribute("data-id"))
    detail = page.locator(".trace-detail")
    assert detail.locator(".span-messages .msg.role-system").count() == 1
    assert detail.locator(".span-messages .msg.role-user").first.inner_text().count("Plan step") == 1
    assert detail.locator(".span-messages .msg.role-assistant").count() >= 2
    assert detail.locator(".span-messages [data-kind=tool_call], .span-messages .tool-call, "
                          ".span-messages details").count() >= 1
    assert "tokens" in detail.locator(".span-messages").inner_text().lower()
    assert_accessible(page)  # the split pane with a conversation in its detail
    genai = next(href for label, href in links.items() if re.fullmatch(r"[0-9a-f]{32}", label) and "5555" not in label)
    ready(page, genai)
    chat = page.locator(".span-row[data-id]", has=page.locator(".span-name", has_text="chat")).nth(1)
    chat.click()
    wait_detail(page, chat.get_attribute("data-id"))
    messages = detail.locator(".span-messages")
    assert "You are a weather assistant." in messages.locator(".msg.role-system").inner_text()
    assert messages.locator(".msg.role-user").count() == 2
    assert "get_weather" in messages.inner_text()
    assert detail.locator(".span-otel .jt-node, .span-otel pre.json").count() >= 1  # attributes as JSON
    tool = page.locator(".span-row[data-id]", has=page.locator(".badge.status-failed")).first
    tool.click()
    wait_detail(page, tool.get_attribute("data-id"))
    assert "upstream timeout" in detail.inner_text()
    assert "cache.miss" in detail.locator(".span-events").inner_text()
    assert_accessible(page)  # an OpenTelemetry span: attributes, events, a failed status
    page.console.screenshot("trace-genai-chat")
    page.console.assert_clean()


# -- escaping and opened exports -----------------------------------------------------------


def test_payloads_in_span_names_and_attributes_stay_text(tpage: Any) -> None:
    page = tpage
    links = trace_links(page)
    stored = next(href for label, href in links.items() if label == "5" * 32)
    agent = page.locator(".trace-table tbody tr", has=page.locator(f"a[href='{stored}']")).locator("td").nth(1)
    assert "<script>" in agent.inner_text()  # the agent's name, as sent
    ready(page, stored)
    assert "<script>" in page.locator(".trace-head").inner_text()
    rows = page.locator(".span-row[data-id]")
    rows.first.click()
    wait_detail(page, rows.first.get_attribute("data-id"))
    text = page.locator(".trace-detail").inner_text()
    assert "span name</svg>" in text and "attribute value" in text and "event value" in text
    assert "status message" in text
    assert page.evaluate("() => window.__xss") is None
    open_file(page, "xss-trace.json", xss_span_export(), via="/traces")
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    rows = page.locator(".span-row[data-id]")
    assert rows.count() == 2
    for i in range(2):
        rows.nth(i).click()
        wait_detail(page, rows.nth(i).get_attribute("data-id"))
        assert "<script>" in page.locator(".trace-detail").inner_text()
    assert page.locator(".trace-detail .span-otel .span-events").count() == 1
    assert page.evaluate("() => window.__xss") is None
    page.console.screenshot("trace-xss")


def test_an_opened_export_reads_like_a_stored_trace(tpage: Any) -> None:
    page = tpage
    open_file(page, "trace.json", samples.span_export(), via="/traces")
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    rows = page.locator(".span-row[data-id]")
    assert rows.count() == 5
    assert [rows.nth(i).get_attribute("aria-level") for i in range(5)] == ["1", "2", "2", "1", "1"]
    assert rows.nth(1).locator(".span-name").inner_text() == "get_weather(Paris)"
    assert page.locator(".span-row.flagged").count() == 2
    page.locator(".span-row.flagged").last.click()
    page.wait_for_selector(".trace-detail .span-problems")
    assert "parent_span_id names no span" in page.locator(".trace-detail .span-problems").inner_text()
    assert "?span=s5" in page.url
    page.reload()
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    assert selected_id(page) == "s5" and detail_span(page) == "s5"
    assert page.locator(".trace-head .badge.risk-low, .trace-head .badge.risk-medium, .trace-head .badge.risk-high, "
                        ".trace-head .badge.risk-critical").count() == 1
    page.console.screenshot("trace-opened")
    page.console.assert_clean()
