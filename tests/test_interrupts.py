"""Ctrl-C is held until a record's section ends, then raised as usual."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from prefjudge.interrupts import deferred_interrupt


def test_ctrl_c_inside_the_section_is_raised_after_it():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            finished.append("the rest of the section ran")
    assert finished == ["the rest of the section ran"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_ctrl_c_no_exception_and_the_handler_is_restored():
    with deferred_interrupt():
        value = 1
    assert value == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_other_threads_and_other_handlers_run_the_body_as_is():
    seen = []

    def body() -> None:
        with deferred_interrupt():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]  # no handler swapped from a thread

    def mine(signum, frame):
        seen.append("mine")

    previous = signal.signal(signal.SIGINT, mine)
    try:
        with deferred_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
        assert seen[-1] == "mine"
    finally:
        signal.signal(signal.SIGINT, previous)
