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
first screen), and finding text near the end of the session from its first screen (the
server answers with the matching entries; the page around the match replaces the first).

Cold open by length: the first paint of a 1,000- and a 100,000-entry stored session,
each opened for the first time (nothing read or cached yet). The first screen reads only
the entries it draws, so the ratio must stay within ``LENGTH_RATIO`` (1.5x). The summary
of the whole history (token totals, tools, validation) loads after the first paint and is
answered empty here, so it cannot slow the other figures on a shared machine.

Run: ``.venv/bin/python bench/viewer.py [--messages 10000] [--runs 5] [--sizes 1000 100000]``;
exits 1 when the median first paint of a session page is over the budget, or the cold
first paint at the largest size is over ``LENGTH_RATIO`` times that at the smallest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from agentfolio.samples.showcase import durable_session  # noqa: E402
from tests.web.browser import chromium, chromium_problem, running_server  # noqa: E402

BUDGET_MS = 1000.0
LENGTH_RATIO = 1.5

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


def cold_open_by_length(browser, base: str, small: int, large: int, runs_each: int = 5) -> bool:
    """First paint of each size, opened cold; prints the figures and whether the ratio holds."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.route("**/summary", lambda route: route.fulfill(status=204, body=""))
    # Warm the code path (templates, the first window query), not either session's first
    # screen: a page from the middle of the large one.
    page.goto(f"{base}/sessions/sized-{large}?start={large // 2}")
    page.wait_for_load_state("load")
    # Nothing is kept per session until its summary is read whole (answered empty here), so
    # every open is a cold one: alternate the sizes and take medians.
    runs: dict[int, list[dict[str, float]]] = {small: [], large: []}
    for _ in range(runs_each):
        for size in (small, large):
            runs[size].append(open_session(page, f"{base}/sessions/sized-{size}"))
    figures = {size: {key: statistics.median(run[key] for run in found) for key in ("fcp", "shown", "server")}
               for size, found in runs.items()}
    for size in (small, large):
        print(f"  {size:>7,} entries, cold (median of {runs_each}): first paint {figures[size]['fcp']:.0f} ms · "
              f"entries shown {figures[size]['shown']:.0f} ms · server {figures[size]['server']:.0f} ms · "
              f"{runs[size][0]['entries']} entries in the first screen")
    context.close()
    ratio = figures[large]["fcp"] / figures[small]["fcp"]
    server_ratio = figures[large]["server"] / figures[small]["server"]
    held = ratio <= LENGTH_RATIO
    print(f"  first paint {large:,} vs {small:,} entries: {ratio:.2f}x (server {server_ratio:.2f}x) — "
          f"{'within' if held else 'OVER'} {LENGTH_RATIO}x")
    if errors:
        print(f"  console errors: {errors[:3]}")
        return False
    return held


def find_across(page, base: str, messages: int, runs: int, first_paint_ms: float) -> bool:
    """Find near the end of a long session from its first screen: the server answers with
    the matching entries' positions and the page around the first match is loaded in place
    of the first screen.  Timed in the browser (typing done to the match marked) and as the
    find request alone; printed beside the same session's first paint."""
    target = messages - 2 if messages % 2 == 0 else messages - 1
    query = f"Question {target}:"
    request_ms = []
    for _ in range(runs):
        started = time.perf_counter()
        with urllib.request.urlopen(f"{base}/sessions/long/find?" + urllib.parse.urlencode({"q": query})) as answer:
            found = orjson.loads(answer.read())
        request_ms.append((time.perf_counter() - started) * 1000)
    if found["positions"] != [target]:
        print(f"  find: expected [{target}], the server answered {found['positions'][:5]}")
        return False
    shown_ms = []
    for _ in range(runs):
        page.goto(f"{base}/sessions/long")
        page.wait_for_selector("html[data-viewer-ready]", state="attached")
        page.fill(".find", query[:-1])  # typed but the last character
        started = time.perf_counter()
        page.type(".find", query[-1])
        page.wait_for_selector(f"#e{target} mark.find-hit.hit-current")
        shown_ms.append((time.perf_counter() - started) * 1000)
    status = page.locator(".find-status").inner_text()
    request, shown = statistics.median(request_ms), statistics.median(shown_ms)
    print(f"  find across {messages:,} entries on the server (median of {runs}): request {request:.0f} ms · "
          f"typed to match shown {shown:.0f} ms, debounce of 150 ms included ({status}); "
          f"{shown / first_paint_ms:.2f}x the session's first paint")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs=2, default=[1_000, 100_000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--only-lengths", action="store_true", help="Measure only the cold open by length.")
    parser.add_argument("--skip-lengths", action="store_true",
                        help="Skip the cold open by length (storing the 100,000-entry session takes minutes).")
    parser.add_argument("--only-traces", action="store_true",
                        help="Measure only the trace pages (bench/viewer_traces.py: a 2,000- and a 20,000-span trace).")
    args = parser.parse_args()
    if args.only_traces:
        from bench.viewer_traces import run as trace_pages

        return trace_pages((2_000, 20_000), args.runs)
    problem = chromium_problem()
    if problem:
        print(f"viewer bench skipped: {problem}")
        return 0
    small, large = args.sizes
    print(f"viewer: cold open of a {small:,}- and a {large:,}-entry session (ratio must stay <= {LENGTH_RATIO}x)")
    lengths_ok = True
    if not args.skip_lengths:
        with running_server("--sized", str(small), "--sized", str(large), timeout=1800) as base, \
                chromium() as browser:
            lengths_ok = cold_open_by_length(browser, base, small, large, args.runs)
    if args.only_lengths:
        return 0 if lengths_ok else 1
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

        find_ok = find_across(page, base, args.messages, args.runs, median_fcp)
        context.close()
        if errors:
            print(f"  console errors: {errors[:3]}")
            return 1
    worst = max(cold["fcp"], median_fcp)
    if not lengths_ok or not find_ok:
        return 1
    verdict = "within" if worst < BUDGET_MS else "OVER"
    print(f"  first paint {verdict} budget: {worst:.0f} ms (cold or warm median, whichever is worse) "
          f"vs {BUDGET_MS:.0f} ms")
    return 0 if worst < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
