"""How fast a long session opens in the viewer, measured in headless Chromium.

Stores a 10,000-message durable state, serves the API and the viewer with uvicorn on
127.0.0.1 (as ``agentfolio serve`` does), and opens the session page in Debian's
chromium: the first screen must be painted within 1 second.  Figures are from the
browser's own Performance API:

* ``first paint``: first-contentful-paint, from the start of navigation;
* ``entries shown``: when the first conversation entries are in the DOM and laid out
  (the page streams no more than a screen's worth; the rest loads as you scroll);
* ``server``: responseEnd (the HTML fully received).

``cold`` is the first open (the server reads and prepares the whole session); ``warm``
the next ones.  Also timed: the same session dropped on "Open a file" (upload, read,
first screen), and loading every entry to search the whole session.

Run: ``.venv/bin/python bench/viewer.py [--messages 10000] [--runs 5]``; exits 1 when
the median first paint of a session page is over the budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from agentfolio.samples.showcase import durable_session  # noqa: E402
from tests.web.browser import chromium, chromium_problem, running_server  # noqa: E402

BUDGET_MS = 1000.0

TIMINGS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {server: nav.responseEnd, fcp: fcp ? fcp.startTime : null,
          dcl: nav.domContentLoadedEventEnd, entries: document.querySelectorAll('section.entry').length};
}"""


def open_session(page, url: str) -> dict[str, float]:
    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_selector("section.entry", state="visible")
    shown = (time.perf_counter() - started) * 1000
    page.wait_for_load_state("load")
    figures = page.evaluate(TIMINGS)
    figures["shown"] = shown
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    problem = chromium_problem()
    if problem:
        print(f"viewer bench skipped: {problem}")
        return 0
    print(f"viewer: a {args.messages:,}-message session in headless chromium (budget: first paint < {BUDGET_MS:.0f} ms)")
    with running_server("--long", str(args.messages), timeout=600) as base, chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        # The browser's own start-up is not the viewer's: open another page first, so
        # "cold" is the first open of this session (the server reads and prepares it).
        page.goto(f"{base}/open")
        page.wait_for_load_state("load")
        runs = [open_session(page, f"{base}/sessions/long") for _ in range(args.runs + 1)]
        cold, warm = runs[0], runs[1:]
        print(f"  session page, cold:  first paint {cold['fcp']:.0f} ms · entries shown {cold['shown']:.0f} ms · "
              f"server {cold['server']:.0f} ms · {cold['entries']} of {args.messages:,} entries in the first screen")
        median_fcp = statistics.median(run["fcp"] for run in warm)
        print(f"  session page, warm:  first paint {median_fcp:.0f} ms median "
              f"(min {min(r['fcp'] for r in warm):.0f}, max {max(r['fcp'] for r in warm):.0f}) · "
              f"entries shown {statistics.median(r['shown'] for r in warm):.0f} ms · "
              f"server {statistics.median(r['server'] for r in warm):.0f} ms")

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "long.json"
            path.write_bytes(orjson.dumps(durable_session(args.messages, seed=3)))
            page.goto(f"{base}/open")
            page.wait_for_load_state("load")
            started = time.perf_counter()
            with page.expect_navigation(wait_until="commit"):
                page.set_input_files("#file", str(path))
            page.wait_for_selector("section.entry", state="visible")
            opened_ms = (time.perf_counter() - started) * 1000
            print(f"  open a file ({path.stat().st_size / 1e6:.1f} MB): first screen {opened_ms:.0f} ms "
                  "after picking it (upload, read, render)")

        page.goto(f"{base}/sessions/long")
        page.wait_for_selector("section.entry")
        page.keyboard.press("/")
        page.keyboard.type("Question 9998:")
        page.wait_for_selector(".find-load-all")
        started = time.perf_counter()
        page.click(".find-load-all")
        deadline = time.monotonic() + 300
        while page.evaluate("() => document.querySelectorAll('section.entry').length") < args.messages:
            if time.monotonic() > deadline:
                print("  load all: did not finish in 300 s")
                return 1
            page.wait_for_timeout(100)
        loaded_ms = (time.perf_counter() - started) * 1000
        status = page.locator(".find-status").inner_text()
        print(f"  load all {args.messages:,} entries and search them: {loaded_ms / 1000:.1f} s ({status})")
        context.close()
        if errors:
            print(f"  console errors: {errors[:3]}")
            return 1
    worst = max(cold["fcp"], median_fcp)
    verdict = "within" if worst < BUDGET_MS else "OVER"
    print(f"  first paint {verdict} budget: {worst:.0f} ms (cold or warm median, whichever is worse) "
          f"vs {BUDGET_MS:.0f} ms")
    return 0 if worst < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
