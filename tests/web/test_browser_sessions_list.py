"""The sessions list in headless Chromium: what each row says of its session, sorting by
a column, the total count, a partial agent filter and what a search matched.

Screenshots: ``test-output/screenshots/sessions-list-*.png``.
"""

from __future__ import annotations

from typing import Any

from tests.web.test_browser import visit, wait_until

ROW = ".session-table tbody tr"


def cells(page: Any, session_id: str) -> dict[str, str]:
    row = page.locator(ROW, has=page.locator(f"a.session-id:text-is('{session_id}')"))
    return {cell.get_attribute("data-label"): cell.inner_text().strip() for cell in row.locator("td").all()}


def test_each_row_shows_the_first_message_tokens_failures_and_duration(page: Any) -> None:
    visit(page, "/sessions")
    showcase = cells(page, "showcase")
    assert "Plan a **weekend in Paris** for me:" in showcase["Session"]
    assert showcase["Tokens"] == "3,025"
    assert (showcase["Tool calls"], showcase["Failed tools"], showcase["Errors"]) == ("2", "1", "1")
    assert showcase["Duration"] == "10.9 s"
    # A session whose answers report no usage says so, instead of 0 tokens.
    assert cells(page, "xss")["Tokens"] == "no usage recorded"
    assert "70" in page.locator(".list-count").inner_text()  # 55 bulk, 5 named and 10 timed, on two pages
    page.console.screenshot("sessions-list")
    page.console.assert_clean()


def test_a_column_header_sorts_and_a_second_click_reverses(page: Any) -> None:
    visit(page, "/sessions")
    page.click("th a.sort:text('Tokens')")
    wait_until(page, "location.search.includes('sort=tokens')")
    wait_until(page, "document.querySelector('th[aria-sort]') && "
                     "document.querySelector('th[aria-sort]').textContent.includes('Tokens')")
    tokens = [int(text.replace(",", "")) for text in page.locator(f"{ROW} td[data-label=Tokens]").all_inner_texts()
              if text.strip()[:1].isdigit()]
    assert tokens == sorted(tokens, reverse=True) and tokens[0] == 21_900  # the 200-message session
    assert page.locator("th[aria-sort]").get_attribute("aria-sort") == "descending"
    page.click("th a.sort:text('Tokens')")
    wait_until(page, "location.search.includes('order=asc')")
    wait_until(page, "document.querySelector('th[aria-sort]').getAttribute('aria-sort') === 'ascending'")
    first = page.locator(f"{ROW} td[data-label=Tokens]").first.inner_text()
    assert first in ("no usage recorded", "120")
    # The order holds when a filter changes after it, and on the next page.
    page.fill("#agent-filter", "bulk")
    wait_until(page, "location.search.includes('agent=bulk')")
    assert "sort=tokens" in page.url and "order=asc" in page.url
    page.console.screenshot("sessions-list-sorted")
    page.console.assert_clean()


def test_the_agent_filter_matches_part_of_a_name_in_any_case(page: Any) -> None:
    visit(page, "/sessions")
    page.fill("#agent-filter", "tla")
    wait_until(page, "location.search.includes('agent=tla')")
    wait_until(page, "document.querySelector('.list-count b').textContent === '9'")  # 3 named, 6 timed
    agents = set(page.locator(f"{ROW} td[data-label=Agent]").all_inner_texts())
    assert agents == {"Atlas"}
    visit(page, "/sessions?agent=BREE")
    assert set(page.locator(f"{ROW} td[data-label=Agent]").all_inner_texts()) == {"Breeze"}
    assert page.locator(".list-count").inner_text().startswith("5 sessions")
    page.console.assert_clean()


def test_a_search_shows_what_matched_in_each_session(page: Any) -> None:
    visit(page, "/sessions?q=louvre")
    snippet = page.locator(f"{ROW} .match-snippet").first.inner_text()
    assert "Louvre" in snippet  # as written, not as the search index keeps it
    page.console.screenshot("sessions-list-search")
    page.console.assert_clean()
