"""Helpers shared by the in-sandbox test runners (standalone, stdlib only).

The ``_pj_`` prefix keeps these module names clear of anything the code under test
might import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import linecache
import os
import sys
import traceback
from typing import Any

DETAIL_MAX = 2000
RESULT_NAME = ".prefjudge-result.json"


def truncate(text: str, limit: int = DETAIL_MAX) -> str:
    """Shorten ``text`` to ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    half = (limit - 20) // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars cut ...]\n{text[-half:]}"


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr`` of ``value``, cut to ``limit`` characters, never raising."""
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ResultWriter:
    """Writes the result file, tagged with the run's nonce, only from the harness process."""

    def __init__(self, nonce: str):
        self.nonce = nonce
        self.pid = os.getpid()

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` (plus nonce) atomically; forked children never write."""
        if os.getpid() != self.pid:
            return
        data = json.dumps({**record, "nonce": self.nonce})
        tmp = f"{RESULT_NAME}.{self.pid}.tmp"
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(tmp, RESULT_NAME)


class _ByteSink(io.RawIOBase):
    def __init__(self, owner: OutputSink):
        self._owner = owner

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._owner.count(len(data))


class OutputSink(io.TextIOBase):
    """A stdout/stderr replacement that discards output but remembers overflowing it."""

    def __init__(self, shared: dict[str, int], cap: int):
        self._shared = shared
        self._cap = cap
        self.buffer = _ByteSink(self)

    @property
    def overflowed(self) -> bool:
        """Whether more than the cap was written through any sink sharing the counter."""
        return self._shared["bytes"] > self._cap

    def count(self, size: int) -> int:
        """Add ``size`` bytes to the shared counter."""
        self._shared["bytes"] += size
        return size

    def writable(self) -> bool:
        """Sinks are writable."""
        return True

    def write(self, text: str) -> int:
        """Count and drop ``text``."""
        self.count(len(text))
        return len(text)


def install_sinks(cap: int) -> OutputSink:
    """Replace sys.stdout/stderr by counting sinks and sys.stdin by an empty stream."""
    shared = {"bytes": 0}
    sys.stdout = OutputSink(shared, cap)
    sys.stderr = OutputSink(shared, cap)
    sys.stdin = io.StringIO("")
    return sys.stdout


def register_source(filename: str, source: str) -> None:
    """Make ``source`` visible to tracebacks under ``filename``."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def compile_source(source: str, filename: str) -> Any:
    """Compile ``source`` under ``filename`` (registered for tracebacks)."""
    register_source(filename, source)
    return compile(source, filename, "exec", dont_inherit=True)


def missing_module(exc: BaseException) -> str | None:
    """Name of a top-level module that is not installed, if ``exc`` is about one."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".", 1)[0]
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    return None if installed else top


def describe_exception(exc: BaseException, keep_files: tuple[str, ...] = ()) -> str:
    """``Type: message`` plus the traceback frames that point into ``keep_files``."""
    lines = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if not keep_files or frame.filename in keep_files:
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
            if frame.line:
                lines.append(f"    {frame.line}")
    try:
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    except BaseException:
        message = type(exc).__name__
    body = "\n".join(lines[-12:])
    return truncate(f"{body}\n{message}" if body else message)


def failure_from_exception(
    exc: BaseException, keep_files: tuple[str, ...], prefix: str = ""
) -> dict[str, str]:
    """A result for an exception raised by the code or its tests."""
    module = missing_module(exc)
    if module is not None:
        return {"status": "error", "detail": f"missing module {module!r} (not installed here)"}
    if isinstance(exc, SystemExit):
        text = f"the code called exit({short_repr(exc.code)}) before the tests finished"
        return {"status": "fail", "detail": prefix + text}
    return {"status": "fail", "detail": truncate(prefix + describe_exception(exc, keep_files))}
