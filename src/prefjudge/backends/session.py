"""One event loop for a backend's whole life, and running coroutines from any caller.

:class:`Session` keeps the loop and the replicas' clients (so the connections of one batch
serve the next); :func:`run_sync` and :func:`off_running_loop` run a coroutine or a call
also from code that already runs an event loop (a notebook's, an async caller's);
:func:`within` awaits with a deadline without a task of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
Work = Callable[[list[Any]], Awaitable[T]]
"""A batch's coroutine, given the replicas' clients (in ``OpenAIBackend.replicas`` order)."""


class Session:
    """One event loop for the backend's whole life, and the replicas' clients on it.

    ``asyncio.run`` per batch would close the loop, and with it every connection, after
    each ``generate`` call. The loop is an :class:`asyncio.Runner` (Ctrl-C cancels the
    batch as under ``asyncio.run``); the clients are made on first use and closed by
    :meth:`close`. One batch at a time: :meth:`run` returns None without running anything
    when another thread's batch holds the session (or in a forked child, whose copy of
    the parent's connections it must not use), and the caller runs that batch on a loop
    of its own.

    Args:
        make_clients: Returns one new client per replica.
    """

    def __init__(self, make_clients: Callable[[], list[Any]]):
        self._make_clients = make_clients
        self._runner: Any = asyncio.Runner()  # type: ignore[attr-defined]
        self._clients: list[Any] | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def run(self, work: Work[T]) -> tuple[T] | None:
        """Run one batch on the kept loop and clients.

        Args:
            work: The batch, given the clients.

        Returns:
            ``(its result,)``, or None when the session is busy or not this process's.
        """
        if os.getpid() != self._pid or not self._lock.acquire(blocking=False):
            return None
        try:
            return (off_running_loop(
                lambda: ctrl_c_as_interrupt(lambda: self._runner.run(self._with_clients(work)))
            ),)
        finally:
            self._lock.release()

    async def _with_clients(self, work: Work[T]) -> T:
        if self._clients is None:
            self._clients = self._make_clients()
        return await work(self._clients)

    def close(self) -> None:
        """Close the clients (their connections) and the loop."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            clients, self._clients = self._clients, None

            async def close_clients() -> None:
                await asyncio.gather(*(client.close() for client in clients or []))

            try:
                if clients:
                    off_running_loop(lambda: self._runner.run(close_clients()))
            finally:
                off_running_loop(self._runner.close)


def off_running_loop(function: Callable[[], T]) -> T:
    """Call ``function`` here, or in a thread of its own when this thread runs an event loop.

    A loop cannot be run from inside another one (a notebook's, an async caller's).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function).result()


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """Await with a deadline (:class:`TimeoutError` past it), without a task of its own.

    ``asyncio.timeout`` (Python 3.11) cancels in place; ``asyncio.wait_for`` wraps the
    awaitable in a task per call, and is what Python 3.10 has.
    """
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(seconds):  # type: ignore[attr-defined]
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def run_sync(coroutine: Any) -> Any:
    """Run a coroutine to completion, also from code that already runs an event loop."""
    return off_running_loop(lambda: ctrl_c_as_interrupt(lambda: asyncio.run(coroutine)))


def ctrl_c_as_interrupt(run_loop: Callable[[], T]) -> T:
    """Run an event loop's call so that a Ctrl-C always ends it as :class:`KeyboardInterrupt`.

    ``asyncio.Runner.run`` (and ``asyncio.run``) installs its Ctrl-C handler and only then
    sets its count of interrupts to zero: a SIGINT handled in between cancels the main
    task but is no longer counted, so the run ends with a bare ``CancelledError`` and the
    command with a traceback instead of "interrupted, resume with ...". Only that handler
    cancels the main task of a loop run here (prefjudge's coroutines never cancel their
    caller), so in the main thread a ``CancelledError`` out of the call is that Ctrl-C.

    Args:
        run_loop: Runs the loop to completion (``runner.run(...)``, ``asyncio.run(...)``).

    Returns:
        What ``run_loop`` returns.
    """
    try:
        return run_loop()
    except asyncio.CancelledError:
        if threading.current_thread() is not threading.main_thread():
            raise
        raise KeyboardInterrupt from None


