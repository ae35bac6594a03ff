"""Run the service with the viewer at ``/`` for the browser tests and the benchmark.

``python tests/web/serve_app.py --port P --data-dir D [--long N]``: a fresh store in D,
the ``demo`` account seeded with the sessions the tests read, served by uvicorn on
127.0.0.1:P.  The API is mounted too (``/api/v1``), as ``agentfolio serve`` mounts it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import orjson
import uvicorn

from agentfolio.app import Agentfolio
from agentfolio.app.demo import load_registry_demo, load_trace_demo
from agentfolio.app.otlp import OtlpIngest
from agentfolio.samples import showcase as samples
from agentfolio.server import create_server
from agentfolio.settings import Settings
from tests.web.xss import xss_otlp_request, xss_session


def build(data_dir: Path, long_messages: int = 0, many: int = 0,
          sized: tuple[int, ...] = (), trace_spans: tuple[int, ...] = ()) -> tuple[object, Agentfolio]:
    settings = Settings.from_env({}).with_(data_dir=data_dir, session_ttl=0)
    folio = Agentfolio.open(settings)
    account = folio.accounts.ensure("demo")
    sessions = folio.sessions
    for number in range(many):
        sessions.create(account, samples.durable_session(2, seed=100 + number), session_id=f"bulk-{number:03d}",
                        agent="Bulk")
    sessions.create(account, samples.durable_session(40, seed=1), session_id="weather-40", agent="Atlas")
    sessions.create(account, samples.durable_session(12, seed=2), session_id="weather-12", agent="Breeze")
    sessions.create(account, samples.showcase_session()["session"], session_id="showcase", agent="Atlas",
                    strict=False)
    sessions.create(account, xss_session()["session"], session_id="xss", agent="Mallory", strict=False)
    # Turns that take time, over a week, for latency and the per-agent charts.
    for number in range(10):
        sessions.create(account, samples.timed_session(6, seed=number, day=number % 7),
                        session_id=f"timed-{number}", agent="Atlas" if number % 3 else "Breeze")
    if long_messages:
        sessions.create(account, samples.durable_session(long_messages, seed=3), session_id="long",
                        agent="Atlas")
    for size in sized:
        sessions.create(account, samples.durable_session(size, seed=4), session_id=f"sized-{size}", agent="Atlas",
                        strict=False)
    instances = load_registry_demo(folio, account)
    (data_dir / "instances.txt").write_text("\n".join(instances))
    if trace_spans:
        traces = [load_trace_demo(folio, account, spans=size, otel=index == 0)
                  for index, size in enumerate(trace_spans)]
        OtlpIngest(folio.store).export(account, orjson.dumps(xss_otlp_request()), encoding="json")
        (data_dir / "traces.txt").write_text("\n".join(traces))
    # As `agentfolio serve --demo` builds it: the API, and the viewer at / as the demo account.
    app = create_server(settings, folio=folio, viewer_account=account)
    return app, folio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--long", type=int, default=0, help="Also store a session of this many messages.")
    parser.add_argument("--many", type=int, default=0, help="Also store this many small sessions (paging).")
    parser.add_argument("--sized", type=int, action="append", default=[],
                        help="Also store a session of this many messages as sized-<N> (repeatable).")
    parser.add_argument("--trace-spans", type=int, action="append", default=[],
                        help="Also store an agent run of this many spans (repeatable; the first with an "
                             "OpenTelemetry GenAI trace, and a trace carrying script payloads).")
    args = parser.parse_args()
    app, _ = build(args.data_dir, args.long, args.many, tuple(args.sized), tuple(args.trace_spans))
    print("ready", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
