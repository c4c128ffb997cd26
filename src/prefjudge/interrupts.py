"""Ctrl-C between records, never inside one: a short section that defers SIGINT.

Python raises ``KeyboardInterrupt`` at whatever bytecode runs when Ctrl-C arrives. Inside
pydantic's serializer (which calls back into Python for custom fields) it comes out wrapped
in a ``PydanticSerializationError``, a traceback instead of the resume hint; inside a
write it could cut a record and the bookkeeping about it apart. :func:`deferred_interrupt`
holds the interrupt until the section ends, then raises it as usual.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the ``with`` body whole: a Ctrl-C during it is raised when it ends.

    Only the main thread receives ``KeyboardInterrupt``, and only it may change signal
    handlers: elsewhere, or when SIGINT is not Python's default handler (a test runner, an
    embedding application), the body runs as is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[tuple[int, FrameType | None]] = []

    def hold(signum: int, frame: FrameType | None) -> Any:
        caught.append((signum, frame))

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        signal.default_int_handler(*caught[0])
