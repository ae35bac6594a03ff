"""JSON trees and links in headless Chromium: fold, copy a value and the whole JSON,
long and base64 strings behind "show", copy a link to an entry that opens on it.

Screenshots: ``test-output/screenshots/json-*.png``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.web.test_browser import open_file, visit

BLOB = base64.b64encode(bytes(range(256)) * 40).decode()
LONG = "word " * 400
ARGUMENTS = {"city": "Paris", "nested": {"deep": [1, 2.5, True, None, {"x": "<b>y</b>"}], "empty": {}},
             "image": BLOB, "notes": LONG, "list": []}
STATE = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
    {"$type": "request", "correlationId": "corr-json", "messages": [{"role": "user", "messageId": "m-1", "contents": [
        {"$type": "text", "text": "go"}]}]},
    {"$type": "response", "correlationId": "corr-json", "messages": [{"role": "assistant", "contents": [
        {"$type": "functionCall", "callId": "call-1", "name": "lookup", "arguments": ARGUMENTS},
        {"$type": "functionResult", "callId": "call-1", "result": {"ok": True}}]}]}]}}


@pytest.fixture
def clip(browser: Any, server: str) -> Iterator[Any]:
    from tests.web.conftest import DESKTOP, console_page

    with console_page(browser, base_url=server, **DESKTOP) as opened:
        opened.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
        yield opened


def clipboard(page: Any) -> str:
    return page.evaluate("() => navigator.clipboard.readText()")


def arguments(page: Any) -> Any:
    return page.locator('[data-kind="tool_call_request"] .tool-args .json-tree')


def test_the_tree_folds_and_copies_the_json_it_was_drawn_from(clip: Any) -> None:
    open_file(clip, "json.json", STATE)
    tree = arguments(clip)
    assert tree.count() == 1
    nested = tree.locator("details.jt-node", has=clip.locator(":scope > summary > .jt-key", has_text='"nested"'))
    assert nested.evaluate("el => el.open") is True
    nested.locator(":scope > summary").click()
    assert nested.evaluate("el => el.open") is False
    assert "2 keys" in nested.locator(":scope > summary").inner_text()
    tree.locator("button.copy-json").click()
    assert orjson.loads(clipboard(clip)) == ARGUMENTS  # every value, the elided ones whole
    clip.console.screenshot("json-tree")
    clip.console.assert_clean()


def test_copy_a_single_value_and_an_id(clip: Any) -> None:
    open_file(clip, "json.json", STATE)
    tree = arguments(clip)
    assert tree.locator(".jt-leaf", has=clip.locator(".jt-key", has_text='"x"')).is_hidden()  # deep: folded
    clip.click(".expand-all")
    leaf = tree.locator(".jt-leaf", has=clip.locator(".jt-key", has_text='"x"'))
    assert leaf.locator(".jt-str").inner_text() == '"<b>y</b>"'  # escaped, shown as text
    leaf.locator("button.copy-value").click()
    assert clipboard(clip) == "<b>y</b>"
    tree.locator(".jt-leaf", has=clip.locator(".jt-index", has_text="1")).locator("button.copy-value").click()
    assert clipboard(clip) == "2.5"
    call = clip.locator('[data-kind="tool_call_request"]')
    call.locator(".call-id-line button.copy").first.click()
    assert clipboard(clip) == "call-1"
    assert call.evaluate("el => el.open") is True  # the copy did not fold the call
    clip.console.assert_clean()


def test_long_and_base64_strings_show_their_start_then_all_of_it(clip: Any) -> None:
    open_file(clip, "json.json", STATE)
    tree = arguments(clip)
    image = tree.locator(".jt-leaf", has=clip.locator(".jt-key", has_text='"image"'))
    show = image.locator("button.jt-show")
    assert "base64" in show.inner_text()
    assert len(image.locator(".jt-str").inner_text()) < 120
    show.click()
    assert BLOB in image.locator(".jt-str").inner_text()
    assert show.inner_text() == "hide"
    notes = tree.locator(".jt-leaf", has=clip.locator(".jt-key", has_text='"notes"'))
    assert "more characters" in notes.locator("button.jt-show").inner_text()
    clip.console.screenshot("json-show")
    clip.console.assert_clean()


def test_copy_link_to_an_entry_opens_on_that_entry(clip: Any) -> None:
    visit(clip, "/sessions/long")
    entry = clip.locator("section.entry").nth(5)
    entry.locator("button.copy-link").click()
    link = clipboard(clip)
    assert link.endswith("/sessions/long#e5")
    clip.goto(link)
    clip.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert clip.evaluate("() => document.querySelector(':target').id") == "e5"
    # An entry past the first screen: the link opens the session at that entry.
    clip.locator(".more").scroll_into_view_if_needed()
    clip.wait_for_selector("#e45")
    clip.locator("#e45 button.copy-link").click()
    far = clipboard(clip)
    assert "start=45" in far and far.endswith("#e45")
    clip.goto(far)
    clip.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert clip.locator("section.entry").first.get_attribute("id") == "e45"
    assert clip.evaluate("() => document.querySelector(':target').id") == "e45"
    clip.console.assert_clean()
