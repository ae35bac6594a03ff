"""Benchmark: validated spans ingested per second through ``POST /api/v1/bulk``, on SQLite
and on PostgreSQL, with ``agentfolio serve`` in its own process and this process as the
client on loopback.

For each backend, one run measures:

* **bulk**: ``--spans`` spans posted as ``agent_spans/create`` items, ``--batch`` per
  request (one-shot finished spans with a params payload and a result payload, each
  validated against its span type's JSON Schemas; every tenth payload breaks its schema
  and is stored flagged), idempotency keys on every item;
* **baseline**: ``--single`` spans created one request each through ``POST
  /api/v1/agent_spans`` (the same bodies), as an SDK without bulk does.

Figures are spans/s over the timed requests (after a warm-up request), and the count
of stored spans is checked afterwards; beside them, the server process's CPU time per
bulk span (Linux: from ``/proc``), which moves much less than the rates when others
share the machine.  Target (issue 7): at least 5,000 validated
spans/s on SQLite through bulk.

PostgreSQL comes from ``AGENTFOLIO_TEST_POSTGRES_URL`` or ``scripts/ensure-postgres.sh``;
without one its row says why it was skipped.  Usage:
python bench/spans.py [--spans N] [--batch N] [--single N]
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import orjson  # noqa: E402

from agentfolio.settings import Settings  # noqa: E402
from agentfolio.store import Store  # noqa: E402

SCHEMA = {
    "external_identifier": "bench",
    "span_type_schemas": [
        {"name": "agent:llm", "title": "LLM Call", "template": "{{model}}: {{prompt}} → {{response}}",
         "params_schema": {"type": "object", "required": ["model", "prompt"],
                           "properties": {"model": {"type": "string"}, "prompt": {"type": "string", "maxLength": 4000},
                                          "temperature": {"type": "number", "minimum": 0, "maximum": 2}}},
         "result_schema": {"type": "object", "required": ["response"],
                           "properties": {"response": {"type": "string"},
                                          "usage": {"type": "object", "properties": {
                                              "input_tokens": {"type": "integer"},
                                              "output_tokens": {"type": "integer"}}}}}},
        {"name": "agent:tool", "title": "Tool", "template": "{{tool}}",
         "params_schema": {"type": "object", "required": ["tool"], "properties": {"tool": {"type": "string"}}},
         "result_schema": {"type": "object"}},
    ],
}


JSON = {"Content-Type": "application/json"}


def postgres_url() -> tuple[str | None, str]:
    url = os.environ.get("AGENTFOLIO_TEST_POSTGRES_URL")
    if url:
        return url, ""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "ensure-postgres.sh")], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip().splitlines()[-1], ""
    return None, (done.stderr.strip().splitlines() or ["no server"])[-1]


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def span_body(instance_id: str, index: int, parent: str | None) -> dict:
    if index % 2:
        details = {"agent_instance_id": instance_id, "schema_name": "agent:tool", "status": "complete",
                   "payload": {"tool": f"search-{index}"}, "result_payload": {"hits": index % 7}}
    else:
        payload = {"model": "gpt-bench", "prompt": f"question {index} " + "x" * 200, "temperature": 0.2}
        if index % 10 == 0:
            payload["temperature"] = "hot"  # breaks the schema: stored and flagged
        details = {"agent_instance_id": instance_id, "schema_name": "agent:llm", "status": "complete",
                   "payload": payload, "result_payload": {"response": "answer " + "y" * 200,
                                                          "usage": {"input_tokens": 210, "output_tokens": 205}},
                   "started_at": "2025-11-24T10:00:00.000000+00:00", "finished_at": "2025-11-24T10:00:01Z"}
    if parent:
        details["parent_span_id"] = parent
    return details


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process ``pid`` (None where ``/proc`` is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, settings: Settings) -> None:
        env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTFOLIO_")}
        env.update(AGENTFOLIO_DATA_DIR=str(settings.data_dir), AGENTFOLIO_DATABASE_URL=settings.effective_database_url,
                   AGENTFOLIO_LOG_LEVEL="warning")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "agentfolio.cli", "serve", "--port", str(self.port)],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120  # a loaded machine imports the server slowly
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(self.process.stderr.read().decode()[-2000:])  # type: ignore[union-attr]
            try:
                httpx.get(self.url + "/openapi.json", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()  # not left running behind the error
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def run_backend(name: str, settings: Settings, spans: int, batch: int, single: int) -> dict[str, float]:
    with Store.open(settings) as store:
        token, _ = store.accounts.create_token("bench")
    server = Server(settings)
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as api:
            agent = api.post("/api/v1/agent", json={"details": {"name": "bench"}}).json()["details"]["id"]
            registered = api.post("/api/v1/agent_instance/register", json={
                "agent_id": agent, "agent_version": {"name": "bench", "external_identifier": "v1"},
                "agent_schema_version": SCHEMA, "idempotency_key": secrets.token_hex(8)}).json()["details"]
            instance = registered["id"]
            root = api.post("/api/v1/agent_spans", json={"details": {
                "agent_instance_id": instance, "schema_name": "agent:tool", "status": "active",
                "payload": {"tool": "root"}}}).json()["details"]["id"]

            def bulk_request(start: int, count: int) -> dict:
                return {"items": [{"_type": "agent_spans/create", "idempotency_key": f"span-{start + i:09d}",
                                   "details": span_body(instance, start + i, root)} for i in range(count)]}

            warm = api.post("/api/v1/bulk", json=bulk_request(-batch, batch))
            assert warm.status_code == 200, warm.text
            requests = [bulk_request(start, min(batch, spans - start)) for start in range(0, spans, batch)]
            cpu_before = cpu_seconds(server.process.pid)
            started = time.perf_counter()
            for body in requests:
                answer = api.post("/api/v1/bulk", content=orjson.dumps(body), headers=JSON)
                assert answer.status_code == 200 and len(orjson.loads(answer.content)["outputs"]) == len(body["items"])
            bulk_seconds = time.perf_counter() - started
            cpu_after = cpu_seconds(server.process.pid)

            bodies = [{"details": {**span_body(instance, 10_000_000 + i, root), "idempotency_key": f"one-{i:09d}"}}
                      for i in range(single)]
            started = time.perf_counter()
            for body in bodies:
                answer = api.post("/api/v1/agent_spans", content=orjson.dumps(body), headers=JSON)
                assert answer.status_code == 200, answer.text
            single_seconds = time.perf_counter() - started

            listed = api.get("/api/v1/agent_spans", params={"agent_instance_id": instance,
                                                            "validation_status": "invalid",
                                                            "pagination[page_size]": "1"}).json()
            total = api.get(f"/api/v1/agent_instance/{instance}").json()["details"]["span_counts"]["total"]
            assert total == 1 + batch + spans + single, total
    finally:
        server.stop()
    return {"bulk": spans / bulk_seconds, "single": single / single_seconds,
            "flagged": listed["pagination"]["item_count"], "stored": total,
            "server_cpu_us": float("nan") if cpu_before is None or cpu_after is None
            else (cpu_after - cpu_before) * 1e6 / spans}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000, help="spans sent through bulk (timed)")
    parser.add_argument("--batch", type=int, default=500, help="items per bulk request")
    parser.add_argument("--single", type=int, default=1_000, help="spans sent one request each (baseline)")
    args = parser.parse_args()
    print(f"spans ingested through /api/v1/bulk ({args.spans:,} spans, {args.batch} per request) vs one "
          f"POST /api/v1/agent_spans each ({args.single:,}); server and client on loopback; "
          f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentfolio-bench-") as folder:
        rows.append(("SQLite", Settings(data_dir=Path(folder) / "sqlite")))
        url, why = postgres_url()
        schema = None
        if url:
            import sqlalchemy as sa

            schema = "bench_" + secrets.token_hex(4)
            admin = sa.create_engine(url)
            with admin.begin() as connection:
                connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
            separator = "&" if "?" in url else "?"
            rows.append(("PostgreSQL", Settings(data_dir=Path(folder) / "pg",
                                                database_url=f"{url}{separator}options=-csearch_path%3D{schema}")))
        try:
            print(f"{'backend':<11} {'bulk spans/s':>13} {'single spans/s':>15} {'speed-up':>9} {'flagged':>8} "
                  f"{'server CPU µs/bulk span':>24}")
            for name, settings in rows:
                result = run_backend(name, settings, args.spans, args.batch, args.single)
                print(f"{name:<11} {result['bulk']:>13,.0f} {result['single']:>15,.0f} "
                      f"{result['bulk'] / result['single']:>8.1f}x {int(result['flagged']):>8,} "
                      f"{result['server_cpu_us']:>24,.0f}", flush=True)
            if not url:
                print(f"PostgreSQL  skipped: {why}")
        finally:
            if schema:
                with admin.begin() as connection:
                    connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
                admin.dispose()


if __name__ == "__main__":
    main()
