"""A Ctrl-C handled just as a batch's event loop starts still ends the run as an interrupt.

``asyncio.Runner.run`` installs its SIGINT handler and only then zeroes its count of
interrupts; a signal handled in between (CI saw it in ``generate``: exit 1 with a
``CancelledError`` traceback instead of 130) cancels the batch without being counted.
The tests deliver the signal in exactly that window: the moment the runner's handler is
installed, it is called, as Python calls a pending signal's handler at the next bytecode.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from prefjudge.backends.session import Session, ctrl_c_as_interrupt, run_sync


@pytest.fixture
def sigint_at_install(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Call the runner's SIGINT handler as soon as it is installed; counts the calls."""
    calls: list[int] = []
    install = signal.signal

    def installing(signum: int, handler: Any) -> Any:
        previous = install(signum, handler)
        if signum == signal.SIGINT and isinstance(handler, functools.partial):
            calls.append(signum)
            handler(signum, None)  # the pending Ctrl-C, handled before the count is reset
        return previous

    monkeypatch.setattr(signal, "signal", installing)
    yield calls


async def _never_reached(clients: list[Any]) -> str:
    raise AssertionError("the batch ran although Ctrl-C came first")


def test_the_race_is_real_without_the_guard(sigint_at_install: list[int]) -> None:
    runner = asyncio.Runner()  # type: ignore[attr-defined]
    try:
        with pytest.raises(asyncio.CancelledError):
            runner.run(_never_reached([]))
    finally:
        runner.close()
    assert sigint_at_install == [signal.SIGINT]


def test_a_session_batch_ends_as_keyboard_interrupt(sigint_at_install: list[int]) -> None:
    session = Session(lambda: [])
    try:
        with pytest.raises(KeyboardInterrupt):
            session.run(_never_reached)
    finally:
        session.close()
    assert sigint_at_install == [signal.SIGINT]


def test_run_sync_ends_as_keyboard_interrupt(sigint_at_install: list[int]) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_sync(_never_reached([]))
    assert sigint_at_install == [signal.SIGINT]


def test_a_batch_without_ctrl_c_returns_and_other_errors_pass_through() -> None:
    async def fine(clients: list[Any]) -> int:
        return len(clients)

    async def broken(clients: list[Any]) -> int:
        raise ValueError("the batch's own error")

    class Client:
        closed = False

        async def close(self) -> None:
            self.closed = True

    clients = [Client(), Client()]
    session = Session(lambda: clients)
    try:
        assert session.run(fine) == (2,)
        with pytest.raises(ValueError, match="own error"):
            session.run(broken)
    finally:
        session.close()
    assert all(client.closed for client in clients)


def test_off_the_main_thread_a_cancel_stays_a_cancel() -> None:
    def cancelled() -> None:
        raise asyncio.CancelledError

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        with pytest.raises(asyncio.CancelledError):
            pool.submit(ctrl_c_as_interrupt, cancelled).result()
