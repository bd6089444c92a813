"""Calls run in a thread, in order; a failure stops the rest and reaches the caller."""

from __future__ import annotations

import threading

import pytest

from pipelines.in_order import InOrder


class Boom(Exception):
    pass


def test_calls_run_in_order_in_another_thread() -> None:
    ran: list[tuple[int, str]] = []
    with InOrder("test") as calls:
        for i in range(20):
            calls.submit(lambda i=i: ran.append((i, threading.current_thread().name)))
    assert [i for i, _ in ran] == list(range(20))
    assert {name for _, name in ran} == {"test"}


def test_a_failed_call_skips_the_later_ones_and_is_raised_to_the_caller() -> None:
    ran: list[int] = []
    release = threading.Event()

    def fail() -> None:
        release.wait(5)
        raise Boom("third")

    with pytest.raises(Boom, match="third"), InOrder("test", ahead=3) as calls:
        calls.submit(lambda: ran.append(1))
        calls.submit(lambda: ran.append(2))
        calls.submit(fail)
        calls.submit(lambda: ran.append(4))  # queued behind the failing call
        release.set()
        for i in range(5, 50):  # the error surfaces at a later submit, or at the end
            calls.submit(lambda i=i: ran.append(i))
    assert ran == [1, 2]


def test_the_callers_own_error_wins_and_the_thread_still_stops() -> None:
    ran: list[int] = []
    calls = InOrder("test")
    with pytest.raises(KeyError), calls:
        calls.submit(lambda: ran.append(1))
        raise KeyError("caller")
    assert ran == [1]  # what was submitted before the error still ran
    assert not calls._thread.is_alive()


def test_submit_waits_while_as_many_calls_as_allowed_are_unfinished() -> None:
    release = threading.Event()
    submitted = threading.Event()
    calls = InOrder("test", ahead=2)
    calls.submit(lambda: release.wait(5))  # running
    calls.submit(lambda: None)  # waiting

    def third() -> None:
        calls.submit(lambda: None)
        submitted.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not submitted.wait(0.2)  # bounded: no third call is taken while two are unfinished
    release.set()
    assert submitted.wait(5)
    thread.join()
    calls.finish()


def test_at_least_one_call_is_allowed_ahead() -> None:
    with pytest.raises(ValueError):
        InOrder("test", ahead=0)
