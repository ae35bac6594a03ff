"""Background jobs on one database: of any number of servers asking at once, exactly one
takes a job each period; the next period starts when the run ends."""

from __future__ import annotations

import threading

from agentfolio.store import Store
from agentfolio.store.jobs import Jobs


def test_of_many_asking_at_once_exactly_one_takes_the_job(store: Store) -> None:
    # Each thread asks on its own connection: on PostgreSQL these are concurrent transactions.
    start = threading.Barrier(8)
    taken: list[str] = []
    lock = threading.Lock()

    def ask(number: int) -> None:
        jobs = Jobs(store.engine)
        start.wait()
        if jobs.claim("sweep", 60, runner=f"server-{number}", now=1000.0):
            with lock:
                taken.append(f"server-{number}")

    for _ in range(3):  # three periods, each with its own race
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        store.jobs.finish("sweep", 60, runner=taken[-1], now=1000.0 - 60)  # lease over: due again
    assert len(taken) == 3, taken
    state = store.jobs.state("sweep")
    assert state is not None and state.runs == 3


def test_a_job_is_due_again_one_period_after_its_run_ended(store: Store) -> None:
    jobs = store.jobs
    assert jobs.claim("expire", 10, runner="a", now=100.0)
    assert not jobs.claim("expire", 10, runner="b", now=105.0)  # a holds it
    jobs.finish("expire", 10, runner="a", now=108.0)
    assert not jobs.claim("expire", 10, runner="b", now=117.0)  # its period runs from the end of the run
    assert jobs.claim("expire", 10, runner="b", now=118.0)
    state = jobs.state("expire")
    assert state is not None and (state.runner, state.runs, state.started_at) == ("b", 2, 118.0)


def test_a_runner_that_died_holds_the_job_only_for_its_lease(store: Store) -> None:
    jobs = store.jobs
    assert jobs.claim("expire", 30, runner="dead", now=0.0)
    assert not jobs.claim("expire", 30, runner="alive", now=29.0)
    assert jobs.claim("expire", 30, runner="alive", now=30.0)
    jobs.finish("expire", 30, runner="dead", now=31.0)  # too late: another runner has it now
    state = jobs.state("expire")
    assert state is not None and state.runner == "alive" and state.finished_at is None


def test_jobs_are_independent(store: Store) -> None:
    assert store.jobs.claim("one", 60, now=0.0)
    assert store.jobs.claim("two", 60, now=0.0)
    assert store.jobs.state("three") is None
