"""The background jobs a server runs: span retention when a window is set (taken by one
server per period), and on PostgreSQL the spans table's partitions made ahead."""

from __future__ import annotations

import time

import sqlalchemy as sa

from agentfolio.app import Agentfolio
from agentfolio.app import registry as app
from agentfolio.app.jobs import background_jobs, run_if_due
from agentfolio.registry import ids
from agentfolio.store import Store
from agentfolio.store.engine import read_transaction
from agentfolio.store.registry_tables import registry_spans
from tests.store.test_trace_stats import World

DAY_MS = 86_400_000


def test_retention_runs_as_a_job_once_per_period_and_partitions_are_made_on_postgresql(store: Store) -> None:
    assert "span-retention" not in {job.name for job in background_jobs(Agentfolio(store, owned=False))}
    folio = Agentfolio(Store(store.settings.with_(span_retention_days=7), store.engine, store.blobs), owned=False)
    jobs = {job.name: job for job in background_jobs(folio)}
    assert ("span-partitions" in jobs) == (store.engine.dialect.name == "postgresql")
    world = World(store)
    instance = world.instance(1)
    now = time.time_ns() // 1_000_000
    old, recent = ids.encode(now - 100 * DAY_MS, world.partition, 1), ids.encode(now, world.partition, 2)
    world.service.bulk(world.principal, [app.BulkItem(span_id, app.SpanCreate(
        agent_instance_id=instance, schema_name="step", status="complete", id=span_id, payload={"n": 1}))
        for span_id in (old, recent)])
    ran, line = run_if_due(folio, jobs["span-retention"])
    assert ran and line is not None and "removed 1 span(s)" in line
    assert run_if_due(folio, jobs["span-retention"]) == (False, None)  # taken for this period
    with read_transaction(store.engine) as connection:
        assert set(connection.execute(sa.select(registry_spans.c.id)).scalars()) == {recent}
    if "span-partitions" in jobs:  # the migration made this period's and the next two: nothing to make
        assert run_if_due(folio, jobs["span-partitions"]) == (True, None)
