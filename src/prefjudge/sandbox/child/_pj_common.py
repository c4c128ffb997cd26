"""Helpers shared by the in-sandbox test runners (standalone, stdlib only).

The ``_pj_`` prefix keeps these module names clear of anything the code under test
might import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import os
import sys
import traceback
from typing import Any

DETAIL_MAX = 2000
RESULT_NAME = ".prefjudge-result.json"
OUTPUTS_NAME = ".prefjudge-outputs.jsonl"


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


_JSON_ESCAPES = {**{code: f"\\u{code:04x}" for code in range(32)}, ord('"'): '\\"',
                 ord("\\"): "\\\\"}


class ResultWriter:
    """Writes the result file, tagged with the run's nonce, only from the harness process.

    Everything it writes with is taken when it is made, before any untrusted code runs:
    code that later replaces ``json.dumps``, ``os.replace`` or ``io.open`` (to turn the
    failing record it is handed into a passing one) changes nothing here. The record is
    written as JSON by :meth:`encode`, which uses only ``str`` methods.
    """

    def __init__(self, nonce: str):
        """Take what writing needs, including the work folder (the current one) itself."""
        self.nonce = nonce
        self.pid = os.getpid()
        # the folder, not its path: code that changes directory or renames it cannot
        # make the result land where the supervisor does not read
        self._dir = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._getpid, self._open, self._write = os.getpid, os.open, os.write
        self._close, self._unlink, self._replace = os.close, os.unlink, os.replace
        self._flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        self._escapes = dict(_JSON_ESCAPES)
        self._str, self._type, self._memoryview = str, type, memoryview

    def encode(self, record: dict[str, Any]) -> bytes:
        """``record`` (plus nonce) as a JSON object of strings, UTF-8."""
        text, escapes = self._str, self._escapes
        fields = []
        for key, value in {**record, "nonce": self.nonce}.items():
            key_text = text.translate(text(key), escapes)
            value = value if self._type(value) is text else text(value)
            fields.append(f'"{key_text}": "{text.translate(value, escapes)}"')
        return text.encode("{" + ", ".join(fields) + "}", "utf-8", "replace")

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` (plus nonce) atomically; forked children never write."""
        if self._getpid() != self.pid:
            return
        data = self.encode(record)
        tmp = f"{RESULT_NAME}.{self.pid}.tmp"
        with contextlib.suppress(OSError):
            self._unlink(tmp, dir_fd=self._dir)
        fd = self._open(tmp, self._flags, 0o600, dir_fd=self._dir)
        try:
            view = self._memoryview(data)
            while view:
                view = view[self._write(fd, view):]
        finally:
            self._close(fd)
        self._replace(tmp, RESULT_NAME, src_dir_fd=self._dir, dst_dir_fd=self._dir)


class OutputsLog:
    """Appends one JSON line per input to the outputs file, which prefjudge compares outside.

    Opened, with what it writes with, before the code runs. Nothing in it is trusted:
    code that forges or spoils lines can only make the comparison outside fail, because
    what the outputs must equal is never inside the sandbox.
    """

    def __init__(self) -> None:
        """Create the (empty) outputs file in the work folder."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW
        self._fd = os.open(OUTPUTS_NAME, flags | os.O_CLOEXEC, 0o600)
        self._write, self._memoryview = os.write, memoryview
        import json

        self._dumps = json.dumps

    def append(self, line: dict[str, Any]) -> None:
        """Write ``line`` as one JSON line (all of it, or an OSError)."""
        self.append_text(self._dumps(line))

    def append_text(self, text: str) -> None:
        """Write ``text``, one line of JSON already made, and a newline."""
        view = self._memoryview((text + "\n").encode("utf-8", "surrogatepass"))
        while view:
            view = view[self._write(self._fd, view):]


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


# The one rule for what an exception makes of a run (every runner, both sandbox modes):
# ``error`` belongs to the harness and the environment, and the only exception that is the
# environment's is a library the benchmark itself declares (its ``libs``, what its tests,
# reference solution or prompt import) that was not installed when the run began. Whatever
# else the code does -- importing any module, installed or not, raising anything, exiting
# -- is its own outcome: ``fail``.
_UNAVAILABLE: frozenset[str] = frozenset()
_MODULE_NAME = ImportError.__dict__["name"]  # the C slot: a subclass's property never runs


def note_declared(libraries: Any) -> None:
    """Remember which of the benchmark's declared libraries are not installed here.

    Called by the harness before any untrusted code runs: what the code does to the
    import system afterwards cannot make a declared library read as missing.

    Args:
        libraries: Top-level module names the task declares (the payload's ``libraries``).
    """
    global _UNAVAILABLE
    names = libraries if isinstance(libraries, (list, tuple)) else ()
    _UNAVAILABLE = frozenset(name for name in names
                             if type(name) is str and name and not _installed(name))


def _installed(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def declared_missing(name: Any) -> dict[str, str] | None:
    """The ``error`` result when module ``name`` is a declared library not installed here.

    Args:
        name: A module name (``a.b``: its top-level ``a`` counts), as an exception or a
            program's error output names it; anything not a string counts as no name.

    Returns:
        The environment's ``error`` result, or None: then a failure naming ``name`` is
        the code's own (``fail``).
    """
    if type(name) is not str or not name:
        return None
    top = name.split(".", 1)[0]
    if top not in _UNAVAILABLE:
        return None
    return {"status": "error", "detail": f"missing module {top!r} (not installed here; "
            "the task declares it, so its tests cannot run)"}


def environment_error(exc: BaseException) -> dict[str, str] | None:
    """The ``error`` result when ``exc`` is about a declared library not installed here.

    Only a ``ModuleNotFoundError`` naming such a library (:func:`declared_missing`);
    any other exception, whoever raised it, is None (the code's own outcome).
    """
    if not isinstance(exc, ModuleNotFoundError):
        return None
    try:
        name = _MODULE_NAME.__get__(exc)
    except BaseException:
        return None
    return declared_missing(name)


def describe_exception(exc: BaseException, keep_files: tuple[str, ...] = ()) -> str:
    """``Type: message`` plus the traceback frames that point into ``keep_files``."""
    lines = []
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except BaseException:
        frames = []
    for frame in frames:
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
    """A result for an exception raised by the code or its tests.

    ``error`` only by :func:`environment_error`; anything else is ``fail``, the code's
    own outcome (a ``ModuleNotFoundError`` for a module the task does not declare, an
    ``ImportError``, ``SystemExit``, ``KeyboardInterrupt``...).
    """
    found = environment_error(exc)
    if found is not None:
        return found
    if isinstance(exc, SystemExit):
        text = f"the code called exit({short_repr(exc.code)}) before the tests finished"
        return {"status": "fail", "detail": prefix + text}
    return {"status": "fail", "detail": truncate(prefix + describe_exception(exc, keep_files))}


class Snapshot:
    """Which objects a test run relies on, taken before any untrusted code runs.

    Code under test runs in the harness's interpreter (as in the benchmarks' own
    harnesses), so it could replace ``unittest``'s methods or a builtin to make failing
    tests pass. :meth:`changed` names every entry replaced or removed since the snapshot
    (entries added are allowed: libraries register things). This raises the bar; code
    written to tamper with the interpreter more cleverly (walking frames to the result
    writer) is the limit stated in the README.
    """

    def __init__(self, namespaces: dict[str, Any]):
        """Remember the entries of each namespace (a module, a class or a dict).

        Args:
            namespaces: Display name to the object whose ``__dict__`` (or itself, for a
                dict) is watched.
        """
        self._watched = namespaces
        self._saved = {name: dict(_entries(space)) for name, space in namespaces.items()}

    def changed(self) -> list[str]:
        """``namespace.entry`` for every entry replaced or removed, sorted."""
        found = []
        for name, space in self._watched.items():
            now = _entries(space)
            for key, value in self._saved[name].items():
                if key not in now or now[key] is not value:
                    found.append(f"{name}.{key}")
        return sorted(found)


def _entries(space: Any) -> Any:
    return space if isinstance(space, dict) else vars(space)


def tampered(snapshot: Snapshot) -> dict[str, str] | None:
    """A failing result when the code replaced what the tests rely on, else None."""
    changed = snapshot.changed()
    if not changed:
        return None
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return {"status": "fail", "detail": f"the code replaced what the tests rely on: {shown}"}
