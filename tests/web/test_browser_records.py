"""Every record kind in ``tests/fixtures`` opened in headless Chromium, with its data visible.

Opens each fixture on "Open a file" as a user does and checks that what the record holds is
on the page (outcomes, compactions, ids, model, media URLs, exceptions, unknown JSON), that
nothing a record carries becomes markup, and that no console error happened.  Screenshots:
``test-output/screenshots/records-*.png``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.web.test_browser import open_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# A 1x1 PNG: what every media URL outside the viewer answers here (there is no network).
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ff"
                      "ff3f0005fe02fea7d6a4b40000000049454e44ae426082")


@pytest.fixture(autouse=True)
def offline_media(page: Any) -> None:
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"),
               lambda route: route.fulfill(status=200, content_type="image/png", body=PIXEL))


def text_of(page: Any) -> str:
    return page.locator("main").inner_text()


def open_fixture(page: Any, relative: str) -> None:
    open_file(page, Path(relative).name, (FIXTURES / relative).read_bytes())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")


def test_a_2_0_state_shows_each_outcome_with_answer_usage_and_finish_reason(page: Any) -> None:
    open_fixture(page, "durable_state/shared-durable-agent-state-2.0.json")
    outcome = page.locator("section.outcome", has_text="corr-2")
    assert outcome.count() == 1
    shown = outcome.inner_text()
    for expected in ("succeeded", "finish stop", "Artifact generated.", "tokens: in 5 · out 3 · total 8"):
        assert expected in shown
    expired = page.locator(".outcomes-tail section.outcome")
    assert "failed" in expired.inner_text() and "result unavailable" in expired.inner_text()
    assert "tokens in 5" in page.locator(".totals").inner_text()  # no longer "0 tokens"
    properties = page.locator("details.more-props", has_text="session properties")
    properties.locator(":scope > summary").click()
    assert "historyBinding" in properties.inner_text() and "contoso.support-history.v1" in properties.inner_text()
    page.console.screenshot("records-durable-2.0")
    page.console.assert_clean()


def test_a_1_2_compaction_shows_its_summary_and_the_range_it_replaced(page: Any) -> None:
    open_fixture(page, "durable_state/python-durable-agent-state-1.2.json")
    compaction = page.locator("section.entry-compaction")
    assert "summary replacing entries #0–#2" in compaction.inner_text()
    assert "summary" in compaction.locator("article.msg").inner_text()
    assert "producer-request-id" in page.locator(".message-id").first.inner_text()
    entry_more = page.locator("section.entry details.more-props", has_text="entry properties")
    entry_more.locator(":scope > summary").click()
    assert "requestFuture" in entry_more.inner_text()
    session_more = page.locator("details.more-props", has_text="session properties")
    session_more.locator(":scope > summary").click()
    assert "ingestedPositions" in session_more.inner_text()
    page.console.screenshot("records-durable-1.2")
    page.console.assert_clean()


#: Fixtures with a test of their own below or above; every other one is opened here.
CHECKED_ALONE = {"durable_state/shared-durable-agent-state-2.0.json",
                 "durable_state/python-durable-agent-state-1.2.json", "envelope/gallery.json"}
OTHERS = sorted(str(path.relative_to(FIXTURES)) for path in FIXTURES.rglob("*.json")
                if str(path.relative_to(FIXTURES)) not in CHECKED_ALONE)


@pytest.mark.parametrize("name", OTHERS)
def test_every_other_fixture_opens_with_its_content_shown(page: Any, name: str) -> None:
    open_fixture(page, name)
    shown = page.locator("section.entry, .outcomes-tail section.outcome, article.seg-part")
    assert shown.count() >= 1, f"{name}: nothing of it is drawn"
    assert page.locator(".as-read").count() == 0, f"{name}: not recognised"
    page.console.screenshot("records-" + name.replace("/", "-").removesuffix(".json"))
    page.console.assert_clean()


def test_an_envelope_shows_its_model_message_ids_and_media_urls(page: Any) -> None:
    open_fixture(page, "envelope/gallery.json")
    assert "gpt-4o-2024-08-06" in page.locator(".conv-meta").inner_text()
    assert page.locator(".message-id", has_text="m2").count() == 1
    assert "https://example.com/lyon.jpg" in page.locator("figure.media-image figcaption").first.inner_text()
    page.console.screenshot("records-envelope")
    page.console.assert_clean()


def test_a_tool_exception_and_media_that_cannot_load_are_shown(page: Any) -> None:
    state = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "response", "correlationId": "c1", "messages": [
            {"role": "assistant", "contents": [
                {"$type": "functionCall", "callId": "k1", "name": "fetch", "arguments": {}},
                {"$type": "uri", "uri": "javascript:alert(1)", "mediaType": "image/png"}]},
            {"role": "tool", "contents": [
                {"$type": "functionResult", "callId": "k1", "result": None,
                 "exception": "<b>TimeoutError</b>: gave up"}]}]}]}}
    open_file(page, "exception.json", state)
    exception = page.locator(".exception")
    assert "<b>TimeoutError</b>: gave up" in exception.inner_text()  # escaped, shown as text
    assert page.locator(".exception b", has_text="TimeoutError").count() == 0
    assert "javascript:alert(1)" in page.locator(".media-unshown").inner_text()
    assert page.locator("img[src^='javascript']").count() == 0
    page.console.screenshot("records-exception")
    page.console.assert_clean()


def test_an_acp_message_and_an_array_of_parts_open_as_conversations(page: Any) -> None:
    acp = {"role": "user", "parts": [{"content_type": "text/plain", "content": "Hello from ACP"}]}
    open_file(page, "acp.json", acp)
    assert page.locator("article.msg .role").inner_text() == "user"
    assert "Hello from ACP" in text_of(page)
    assert page.locator(".problems").count() == 0  # a whole ACP Message is a valid body (docs/body.md)
    page.console.screenshot("records-acp")
    parts = [{"content_type": "text/plain", "content": "part one", "extra": True}]
    open_file(page, "parts.json", parts)
    assert "part one" in text_of(page)
    page.console.assert_clean()


def test_a_document_of_no_known_kind_is_drawn_as_json_not_refused(page: Any) -> None:
    open_file(page, "unknown.json", {"hello": ["<script>alert(1)</script>"]})
    assert "<script>alert(1)</script>" in page.locator(".as-read").inner_text()
    page.console.screenshot("records-unknown")
    page.console.assert_clean()


def test_the_fixtures_checked_alone_exist() -> None:
    assert all((FIXTURES / name).exists() for name in CHECKED_ALONE)
    assert orjson.loads((FIXTURES / "envelope/gallery.json").read_bytes())["model"]
