"""The screenshot gallery the browser tests leave behind: every picture, in order, escaped."""

from __future__ import annotations

from pathlib import Path

from tests.web.browser import write_gallery


def test_the_gallery_pages_through_every_screenshot_in_order(tmp_path: Path) -> None:
    assert write_gallery(tmp_path) is None  # no pictures, no page
    for name in ("traces-list", "agents", "trace-<b>x", "traces-dark"):
        (tmp_path / f"{name}.png").write_bytes(b"\x89PNG")
    index = write_gallery(tmp_path)
    assert index == tmp_path / "index.html"
    page = index.read_text(encoding="utf-8")
    assert page.count("<figure ") == 4
    assert "<b>x" not in page and "trace-&lt;b&gt;x" in page
    order = [page.index(f'<figure id="{name}"') for name in ("agents", "trace-&lt;b&gt;x", "traces-dark",
                                                              "traces-list")]
    assert order == sorted(order)
    assert '<a href="#traces-dark">traces-dark →</a>' in page and '<a href="#trace-&lt;b&gt;x">←' in page
    assert 'href="#group-traces">traces (2)</a>' in page
