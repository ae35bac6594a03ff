"""The viewer's pages over a real store, without a browser: what a first screen reads."""

from __future__ import annotations

import gc
import re
import weakref
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.samples import showcase as samples
from agentfolio.settings import Settings
from agentfolio.web.app import WINDOW_AHEAD, WINDOW_BEHIND, create_web_app
from agentfolio.web.html import PAGE_ENTRIES


@pytest.fixture
def stored(tmp_path: Path) -> Any:
    folio = Agentfolio.open(Settings.from_env({}).with_(data_dir=tmp_path, session_ttl=0))
    account = folio.accounts.ensure("demo")
    folio.sessions.create(account, samples.durable_session(400, seed=3), session_id="long", agent="Atlas")
    return folio, account


def test_the_first_screen_of_a_long_session_reads_only_the_entries_it_draws(stored: Any,
                                                                           monkeypatch: Any) -> None:
    folio, account = stored
    windows: list[tuple[int, int]] = []
    whole: list[str] = []
    read_window, read_bytes = folio.sessions.read_window, folio.sessions.read_bytes
    monkeypatch.setattr(folio.sessions, "read_window", lambda acc, sid, start, stop: windows.append((start, stop))
                        or read_window(acc, sid, start, stop))
    monkeypatch.setattr(folio.sessions, "read_bytes", lambda acc, sid: whole.append(sid) or read_bytes(acc, sid))
    client = TestClient(create_web_app(folio=folio, account=account))

    page = client.get("/sessions/long")
    assert page.status_code == 200
    assert whole == [] and windows == [(0, PAGE_ENTRIES + WINDOW_AHEAD)]
    assert len(re.findall(r'<section class="entry ', page.text)) == PAGE_ENTRIES
    assert 'hx-get="/sessions/long/summary"' in page.text  # totals come after the first paint

    middle = client.get("/sessions/long", params={"start": 200})
    assert windows[-1] == (200 - WINDOW_BEHIND, 200 + PAGE_ENTRIES + WINDOW_AHEAD)
    assert 'id="e200"' in middle.text and 'id="e199"' not in middle.text
    assert whole == []

    summary = client.get("/sessions/long/summary")
    assert whole == ["long"]  # read whole once, for what needs all of it
    assert 'hx-swap-oob="true"' in summary.text and "tokens in" in summary.text

    # Read whole now: later pages come from that view, not from more windows.
    count = len(windows)
    client.get("/sessions/long/entries", params={"start": 40})
    assert len(windows) == count


def test_a_window_shows_the_same_entries_as_the_whole_session(stored: Any) -> None:
    folio, account = stored
    client = TestClient(create_web_app(folio=folio, account=account))
    cut = client.get("/sessions/long/entries", params={"start": 120, "page": 30}).text
    client.get("/sessions/long/summary")
    whole = client.get("/sessions/long/entries", params={"start": 120, "page": 30}).text
    assert cut == whole


class _Cycle:
    me: Any


def test_reading_a_session_whole_leaves_other_objects_to_the_cycle_collector(stored: Any) -> None:
    """What other requests hold while a session is read (here a reference cycle) is still
    collected once they drop it: nothing process-wide keeps the collector off it."""
    folio, account = stored
    client = TestClient(create_web_app(folio=folio, account=account))
    in_flight = _Cycle()
    in_flight.me = in_flight
    dropped = weakref.ref(in_flight)
    try:
        assert client.get("/sessions/long/summary").status_code == 200  # reads the session whole
        del in_flight
        gc.collect()
        assert dropped() is None
    finally:
        gc.unfreeze()  # whatever a failing version froze goes back to the collector


def test_every_span_of_a_trace_has_a_detail_pane_and_llm_spans_show_their_messages(stored: Any) -> None:
    from agentfolio.app.demo import load_trace_demo

    folio, account = stored
    instance = load_trace_demo(folio, account, spans=40, otel=False)
    client = TestClient(create_web_app(folio=folio, account=account))
    page = client.get(f"/traces/{instance}")
    assert page.status_code == 200
    span_ids = re.findall(r'class="span-row[^"]*"[^>]*\bdata-id="([^"]+)"', page.text)
    assert len(span_ids) == 40
    with_messages = 0
    for span_id in span_ids:
        pane = client.get(f"/traces/{instance}/span", params={"id": span_id})
        assert pane.status_code == 200, (span_id, pane.text[:500])
        assert f'data-span="{span_id}"' in pane.text
        with_messages += 'class="span-messages"' in pane.text
    assert with_messages > 0  # LLM spans' messages drawn as entries
