"""Per-agent usage over time in headless Chromium: answer latency percentiles, tokens and
failures per day, drawn on the server as SVG, with the same figures as a table.

Screenshots: ``test-output/screenshots/usage-*.png``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from agentfolio.samples import showcase as samples
from tests.web.test_browser import visit

# As tests/web/serve_app.py stores them: timed-N, agent Atlas unless N % 3 == 0, on day N % 7.
ATLAS = [number for number in range(10) if number % 3]


def atlas_by_day() -> dict[str, dict[str, Any]]:
    """Answers, their latencies and failures per day, read from the documents themselves."""
    days: dict[str, dict[str, Any]] = defaultdict(lambda: {"latencies": [], "errors": 0, "failed": 0, "in": 0})
    for number in ATLAS:
        history = samples.timed_session(6, seed=number, day=number % 7)["data"]["conversationHistory"]
        for question, answer in zip(history[::2], history[1::2], strict=True):
            at = datetime.fromisoformat(answer["createdAt"])
            day = days[at.astimezone(UTC).strftime("%m-%d")]
            day["latencies"].append(at.timestamp() - datetime.fromisoformat(question["createdAt"]).timestamp())
            day["errors"] += answer["$type"] == "errorResponse"
            day["in"] += answer.get("usage", {}).get("inputTokenCount", 0)
            day["failed"] += sum(1 for message in answer["messages"] for content in message["contents"]
                                 if content["$type"] == "functionResult" and "error" in content["result"])
    return days


def table(page: Any, chart: int) -> list[dict[str, str]]:
    section = page.locator("section.chart-card").nth(chart)
    heads = section.locator("thead th").all_text_contents()
    return [dict(zip(heads, row.locator("td").all_text_contents(), strict=True))
            for row in section.locator("tbody tr").all()]


def test_an_agents_latency_tokens_and_failures_per_day(page: Any) -> None:
    visit(page, "/usage?agent=Atlas")
    assert page.locator(".agent-picker a[aria-current=page]").inner_text() == "Atlas"
    assert page.locator("section.chart-card svg.chart").count() == 3
    expected = atlas_by_day()
    latency = {row["from"]: row for row in table(page, 0)}
    assert set(latency) >= set(expected)
    for day, figures in expected.items():
        assert latency[day]["answers"] == str(len(figures["latencies"]))
        median = statistics.median(figures["latencies"])
        assert latency[day]["median (p50)"] == f"{median:.1f} s", day
    # The other Atlas sessions (long: 100 answers, weather-40: 20, showcase: 2) are all of 11-04.
    assert latency["11-04"]["answers"] == "122"
    tokens = {row["from"]: row for row in table(page, 1)}
    failures = {row["from"]: row for row in table(page, 2)}
    for day, figures in expected.items():
        assert tokens[day]["tokens in"] == f"{figures['in']:,}"
        assert failures[day]["errors"] == str(figures["errors"])
        assert failures[day]["failed tool calls"] == str(figures["failed"])
    # Each point says what it is; nothing is drawn for a day without answers.
    points = page.locator("section.chart-card").first.locator("circle.s-p50")
    assert points.count() == len(expected) + 1  # and 11-04
    assert "median (p50)" in points.first.locator("title").text_content()
    page.console.screenshot("usage-agent")
    page.console.assert_clean()


def test_every_agent_and_an_agent_with_nothing_counted(page: Any) -> None:
    visit(page, "/usage")
    names = page.locator(".agent-picker li a").all_inner_texts()
    assert names[0] == "all agents" and {"Atlas", "Breeze", "Bulk", "Mallory"} <= set(names)
    assert page.locator("svg.chart").count() == 3
    visit(page, "/usage?agent=Nobody")
    assert "No timed answers" in page.locator(".empty").inner_text()
    page.console.assert_clean()


def test_the_charts_follow_dark_mode(browser: Any, server: str) -> None:
    from tests.web.conftest import Console

    context = browser.new_context(viewport={"width": 1200, "height": 900}, base_url=server, color_scheme="dark")
    page = context.new_page()
    page.console = Console(page)
    try:
        visit(page, "/usage?agent=Atlas")
        grid = page.evaluate("() => getComputedStyle(document.querySelector('svg.chart .grid')).stroke")
        light_lines = [int(part) for part in grid[grid.index("(") + 1:-1].split(",")[:3]]
        assert sum(light_lines) / 3 < 100  # a dark line on a dark card, not the light theme's
        page.console.screenshot("usage-dark")
        page.console.assert_clean()
    finally:
        context.close()
