"""The provider galleries exported as HTML and opened in Chromium from disk: every block
kind visible, thinking folded, redacted thinking named, citations as links, no errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentfolio.formats import registry
from agentfolio.web.html import export_html
from tests.web.conftest import Console

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("name", ["anthropic", "openai_responses", "gemini", "langchain", "a2a", "otel_genai"])
def test_gallery_opens_in_chromium_with_every_block_shown(browser: Any, tmp_path: Path, name: str) -> None:
    document = orjson.loads((FIXTURES / name / "gallery.json").read_bytes())
    session = registry.detect(document).read(document).session
    path = tmp_path / f"{name}.html"
    path.write_text(export_html(session, title=name), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console = Console(page)
    try:
        page.goto(path.as_uri())
        segments = page.locator("[data-kind]")
        shown = sum(len(message.items) for _, message in session.messages())
        assert segments.count() >= shown  # one segment (at least) per content, none hidden
        for folded in page.locator("details.seg-reasoning").all():
            assert folded.get_attribute("open") is None  # thinking starts folded
        if name == "anthropic":
            assert page.locator('details[data-kind="redacted_reasoning"] summary').inner_text().startswith(
                "redacted thinking")
            link = page.locator('ol.citations a[href="https://example.com/paris"]')
            assert link.inner_text() == "Paris forecast"
            assert page.get_by_text("server tool call").count() >= 2
        console.screenshot(f"gallery-{name}")
        # The galleries' example.com media cannot load offline; anything else is a fault.
        console.errors = [e for e in console.errors if "ERR_NAME_NOT_RESOLVED" not in e]
        console.assert_clean()
    finally:
        context.close()
