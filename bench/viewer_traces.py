"""How a trace page opens at two sizes, in headless Chromium: a 2,000- and a 20,000-span trace.

Stores two runs of a LangChain agent (``agentfolio.samples.traces.agent_run``: LLM calls
whose params and results hold their messages, tool calls, nested steps) and serves the
viewer with uvicorn on 127.0.0.1.  For each trace, with the browser's Performance API:

* ``first paint``: first-contentful-paint of the trace page, from the start of navigation;
* ``rows shown``: when the first span rows are laid out;
* ``server``: responseEnd (the HTML fully received); ``page``: the HTML's bytes;
* the same for a link to the trace's last span (``?span=``), which opens on it;
* ``rows pages``: every span read page after page through ``…/rows?after=`` (what
  scrolling does), the server time of each page: the median, and the last page's.

The page holds the first rows, never payloads: its weight and first paint must not grow
with the trace.  Prints the 20,000 vs 2,000 ratios (first paint, bytes, rows page);
exits 1 when the first paint ratio is over ``SIZE_RATIO`` or a span is not reached.

Run: ``.venv/bin/python bench/viewer_traces.py [--sizes 2000 20000] [--runs 5]`` (also
``bench/viewer.py --only-traces``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.web.browser import chromium, chromium_problem, running_server  # noqa: E402

SIZE_RATIO = 1.5

TIMINGS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {server: nav.responseEnd, fcp: fcp ? fcp.startTime : null,
          rows: document.querySelectorAll('.span-row[data-id]').length};
}"""


def fetch(url: str) -> tuple[bytes, float]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
    return body, (time.perf_counter() - started) * 1000


def open_trace(page, url: str) -> dict[str, float]:
    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_selector(".span-row[data-id]", state="visible")
    shown = (time.perf_counter() - started) * 1000
    page.wait_for_load_state("load")
    figures: dict[str, float] = page.evaluate(TIMINGS)
    figures["shown"] = shown
    return figures


def walk(base: str, path: str) -> tuple[int, list[float], str]:
    """Every row of the trace, page after page as scrolling reads them: how many, each
    page's time, and the last row's id."""
    html, _ = fetch(base + path)
    ids = re.findall(rb'<div class="span-row[^"]*" role="row" id="span-[^"]*" data-id="([^"]+)"', html)
    after = re.findall(rb'data-after="([^"]+)"', html)
    times: list[float] = []
    seen = len(ids)
    last = ids[-1]
    while after:
        fragment, took = fetch(f"{base}{path}/rows?after={after[0].decode()}")
        times.append(took)
        found = re.findall(rb'role="row" id="span-[^"]*" data-id="([^"]+)"', fragment)
        seen += len(found)
        last = found[-1] if found else last
        after = re.findall(rb'data-after="([^"]+)"', fragment)
    return seen, times, last.decode()


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def measure(browser, base: str, sizes: tuple[int, int], runs: int) -> bool:
    listing, _ = fetch(base + "/traces?sort=spans")
    links = {label.decode(): href.decode() for href, label in
             re.findall(rb'<td class="trace-id"><a href="([^"]+)"[^>]*>([^<]+)</a>', listing)}
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(base + "/traces")  # the browser's own start-up is not the page's
    page.wait_for_load_state("load")
    figures = {}
    for size in sizes:
        path = links[f"research-{size}"]
        reached, pages, last = walk(base, path)
        opened = [open_trace(page, base + path) for _ in range(runs)]
        linked = [open_trace(page, f"{base}{path}?span={last}") for _ in range(runs)]
        page_bytes = len(fetch(base + path)[0])
        linked_bytes = len(fetch(f"{base}{path}?span={last}")[0])
        figures[size] = {"fcp": median_of(opened, "fcp"), "shown": median_of(opened, "shown"),
                         "server": median_of(opened, "server"), "bytes": page_bytes,
                         "linked_fcp": median_of(linked, "fcp"), "linked_server": median_of(linked, "server"),
                         "linked_bytes": linked_bytes, "rows_page": statistics.median(pages) if pages else 0.0,
                         "last_page": pages[-1] if pages else 0.0, "pages": len(pages) + 1, "reached": reached}
        f = figures[size]
        print(f"  {size:>7,} spans (median of {runs}): first paint {f['fcp']:.0f} ms · rows shown {f['shown']:.0f} ms · "
              f"server {f['server']:.0f} ms · page {f['bytes'] / 1024:.1f} KB · {opened[0]['rows']:.0f} rows drawn")
        print(f"          linked to its last span: first paint {f['linked_fcp']:.0f} ms · server "
              f"{f['linked_server']:.0f} ms · page {f['linked_bytes'] / 1024:.1f} KB")
        print(f"          every span read page by page: {reached:,} spans in {f['pages']:.0f} pages · rows page "
              f"median {f['rows_page']:.0f} ms · last page {f['last_page']:.0f} ms")
    context.close()
    small, large = sizes
    ratio = figures[large]["fcp"] / figures[small]["fcp"]
    print(f"  {large:,} vs {small:,} spans: first paint {ratio:.2f}x · page bytes "
          f"{figures[large]['bytes'] / figures[small]['bytes']:.2f}x · server "
          f"{figures[large]['server'] / figures[small]['server']:.2f}x · rows page "
          f"{figures[large]['rows_page'] / max(figures[small]['rows_page'], 1e-9):.2f}x — "
          f"{'within' if ratio <= SIZE_RATIO else 'OVER'} {SIZE_RATIO}x")
    complete = all(figures[size]["reached"] == size for size in sizes)
    if not complete:
        print("  NOT every span was reached: " + ", ".join(f"{figures[s]['reached']:,} of {s:,}" for s in sizes))
    if errors:
        print(f"  console errors: {errors[:3]}")
    return ratio <= SIZE_RATIO and complete and not errors


def run(sizes: tuple[int, int], runs: int) -> int:
    problem = chromium_problem()
    if problem:
        print(f"trace bench skipped: {problem}")
        return 0
    print(f"viewer: a {sizes[0]:,}- and a {sizes[1]:,}-span trace (first paint ratio must stay <= {SIZE_RATIO}x; "
          f"load average {os.getloadavg()[0]:.1f})")
    with running_server(*(arg for size in sizes for arg in ("--trace-spans", str(size))),
                        timeout=3600) as base, chromium() as browser:
        held = measure(browser, base, sizes, runs)
    return 0 if held else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[2_000, 20_000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    return run((args.sizes[0], args.sizes[1]), args.runs)


if __name__ == "__main__":
    sys.exit(main())
