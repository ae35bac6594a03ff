"""The admission gate: a bounded count of requests in hand, and a wait for none to be."""

from __future__ import annotations

import threading

from agentfolio.app.admission import AdmissionGate


def test_places_are_bounded_and_given_back() -> None:
    gate = AdmissionGate(2)
    assert gate.admit() and gate.admit()
    assert not gate.admit() and gate.admitted == 2
    gate.release()
    assert gate.admit() and gate.admitted == 2


def test_waiting_for_idle_returns_when_the_last_place_is_given_back() -> None:
    gate = AdmissionGate(4)
    assert gate.wait_idle(0)  # nobody in: no wait
    assert gate.admit() and gate.admit()
    assert not gate.wait_idle(0.01)  # still held: the wait ends at its timeout, saying so
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(gate.wait_idle(3600)))
    waiter.start()
    gate.release()
    assert gate.admitted == 1
    gate.release()
    waiter.join(60)
    assert not waiter.is_alive() and answers == [True]
