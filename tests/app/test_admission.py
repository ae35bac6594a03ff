"""The admission gate on its own: places never over-given, waiters served first come first
served, bounded, refused past their deadline, every place given back whatever the order in
which requests arrive, finish and give up, and a wait for no request to be in hand."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.app.admission import AdmissionGate

T = TypeVar("T")
#: Far off: a test never reaches it unless it means to.
FOREVER = 3600.0


#: How long a scenario may take before it counts as hung (a failure, not a timing).
PATIENCE = 60.0


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, PATIENCE)

    return asyncio.run(bounded())


async def settle() -> None:
    """Let every callback already scheduled run to its end (a waiter giving up, the place
    it passes on, the next waiter resuming: a chain of a dozen loop turns at most)."""
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_released_place_goes_to_the_first_waiter_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        gate = AdmissionGate(1, waiters=3, wait_seconds=FOREVER)
        assert await gate.enter()
        served: list[str] = []

        async def wait(name: str) -> None:
            assert await gate.enter()
            served.append(name)

        tasks = []
        for name in ("a", "b", "c"):
            tasks.append(asyncio.create_task(wait(name)))
            await settle()
        assert (gate.admitted, gate.waiting) == (1, 3)
        assert not gate.admit()  # no passing the line
        for _ in range(3):
            gate.release()
            await settle()
        await asyncio.gather(*tasks)
        gate.release()
        assert (gate.admitted, gate.waiting) == (0, 0)
        return served

    assert run(scenario()) == ["a", "b", "c"]


def test_the_waiting_room_is_bounded() -> None:
    async def scenario() -> None:
        gate = AdmissionGate(1, waiters=2, wait_seconds=FOREVER)
        assert await gate.enter()
        waiting = [asyncio.create_task(gate.enter()) for _ in range(2)]
        await settle()
        assert await gate.enter() is False  # the third waiter is refused at once
        assert gate.waiting == 2
        for task in waiting:
            task.cancel()
        await settle()
        assert (gate.admitted, gate.waiting) == (1, 0)

    run(scenario())


def test_a_waiter_past_its_deadline_is_refused_and_leaves_the_line() -> None:
    async def scenario() -> None:
        gate = AdmissionGate(1, waiters=1, wait_seconds=0.05)
        assert await gate.enter()
        assert await gate.enter() is False
        assert (gate.admitted, gate.waiting) == (1, 0)
        gate.release()
        assert await gate.enter()  # the freed place is free, not handed to the one gone

    run(scenario())


def test_without_a_waiting_room_enter_refuses_at_once() -> None:
    async def scenario() -> None:
        gate = AdmissionGate(1, waiters=5, wait_seconds=0)
        assert await gate.enter()
        assert await gate.enter() is False
        assert gate.waiting == 0

    run(scenario())


def test_a_waiter_that_gives_up_as_the_place_reaches_it_passes_the_place_on() -> None:
    """The place is handed to the first waiter (its turn scheduled), and that request is
    cancelled before it runs again: the place goes to the next waiter, not lost."""
    async def scenario() -> None:
        gate = AdmissionGate(1, waiters=2, wait_seconds=FOREVER)
        assert await gate.enter()
        first = asyncio.create_task(gate.enter())
        second = asyncio.create_task(gate.enter())
        await settle()
        first.cancel()  # its request ends: it will leave the line when it next runs ...
        gate.release()  # ... but the place is handed to it first
        await settle()
        assert first.cancelled()
        assert await second is True  # the place went on
        gate.release()
        assert (gate.admitted, gate.waiting) == (0, 0)

    run(scenario())


def test_a_place_given_back_from_another_thread_reaches_the_waiter() -> None:
    async def scenario() -> None:
        gate = AdmissionGate(1, waiters=1, wait_seconds=FOREVER)
        assert await gate.enter()
        waiter = asyncio.create_task(gate.enter())
        await settle()
        releasing = threading.Thread(target=gate.release)
        releasing.start()
        assert await asyncio.wait_for(waiter, 60) is True
        releasing.join()
        gate.release()
        assert (gate.admitted, gate.waiting) == (0, 0)

    run(scenario())


STEPS = st.lists(st.sampled_from(["arrive", "finish", "give_up", "give_up_as_one_finishes"]), max_size=40)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(1, 3), st.integers(0, 3))
def test_places_are_never_over_given_and_all_come_back(steps: list[str], limit: int, waiters: int) -> None:
    """Any order of requests arriving, finishing and giving up while waiting: at every
    settled moment the places taken are exactly the requests holding one (never more than
    the limit), at most ``waiters`` wait, and at the end every place is free."""
    async def scenario() -> None:
        gate = AdmissionGate(limit, waiters=waiters, wait_seconds=FOREVER)
        arrived: list[asyncio.Task[bool]] = []
        released: set[int] = set()

        def holders() -> list[int]:
            return [index for index, task in enumerate(arrived)
                    if task.done() and not task.cancelled() and task.result() and index not in released]

        for step in steps:
            pending = [task for task in arrived if not task.done()]
            if step == "arrive":
                arrived.append(asyncio.create_task(gate.enter()))
            if step in ("give_up", "give_up_as_one_finishes") and pending:
                pending[0].cancel()
            if step in ("finish", "give_up_as_one_finishes") and holders():
                # In the same instant as a give-up: the place may be handed to the waiter leaving.
                released.add(holders()[0])
                gate.release()
            await settle()
            assert gate.admitted == len(holders()) <= limit
            assert gate.waiting == sum(1 for task in arrived if not task.done()) <= waiters
        for task in arrived:
            if not task.done():
                task.cancel()
        await settle()
        for index in holders():
            released.add(index)
            gate.release()
        await settle()
        assert (gate.admitted, gate.waiting) == (0, 0)

    run(scenario())


def test_places_are_bounded_and_given_back() -> None:
    gate = AdmissionGate(2)
    assert gate.admit() and gate.admit()
    assert not gate.admit() and gate.admitted == 2
    gate.release()
    assert gate.admit() and gate.admitted == 2


def test_waiting_for_idle_returns_when_the_last_place_is_given_back() -> None:
    # Quiet for no time at all: nobody holds a place.
    gate = AdmissionGate(4)
    assert gate.wait_quiet(0, 0)  # nobody in: no wait
    assert gate.admit() and gate.admit()
    assert not gate.wait_quiet(0, 0.01)  # still held: the wait ends at its timeout, saying so
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(gate.wait_quiet(0, 3600)))
    waiter.start()
    gate.release()
    assert gate.admitted == 1
    gate.release()
    waiter.join(60)
    assert not waiter.is_alive() and answers == [True]


def test_a_quiet_gate_is_one_that_has_held_no_request_for_the_whole_quiet_time() -> None:
    gate = AdmissionGate(4)
    assert gate.wait_quiet(0.05, 0)  # never held one: quiet already
    assert gate.admit()
    assert not gate.wait_quiet(0.01, 0.05)  # held all along
    gate.release()
    assert not gate.wait_quiet(3600, 0.05)  # just given back: not quiet long enough yet
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(gate.wait_quiet(0.3, 3600)))
    waiter.start()
    for _ in range(5):  # requests one after the other, never quiet for 0.3 s
        assert gate.admit()
        gate.release()
        waiter.join(0.1)
        assert waiter.is_alive()
    waiter.join(60)
    assert not waiter.is_alive() and answers == [True]


def test_a_place_handed_to_a_waiter_keeps_the_gate_busy() -> None:
    async def scenario() -> bool:
        gate = AdmissionGate(1, waiters=1, wait_seconds=FOREVER)
        assert await gate.enter()
        waiter = asyncio.create_task(gate.enter())
        await settle()
        gate.release()  # handed over, not freed: the receiver is not idle
        idle_now = gate.wait_quiet(0, 0)
        assert await waiter
        gate.release()
        return idle_now or not gate.wait_quiet(0, 0)

    assert run(scenario()) is False
