"""The run journal: one resumable, exclusive, bound JSONL output for every stage.

Every stage that takes a while (augment, generate, score, judge, judge-eval, persona
rewrite and compare) writes its records through a :class:`Journal`, which owns what makes
a rerun safe:

* **an exclusive lock**: a second run on the same output stops at once with
  ``OUTPUT is being written by another prefjudge run (pid N)`` (``OUTPUT.lock``, an
  advisory ``flock`` released by the kernel even when the process is killed);
* **no output over an input**: ``-o`` naming one of the stage's inputs is refused before
  anything is opened for writing;
* **a binding** (``OUTPUT.journal.json``): the stage, a SHA-256 of every input file and the
  settings that change results (the model's identity and sampling among them). Resuming
  with different inputs or settings refuses with a message naming each difference;
  ``force_new`` (``--force-new``) moves the old output aside and starts again;
* **validated resume**: every existing line must parse and validate (``file:line: field``
  errors otherwise), no key may appear twice, and an incomplete last line left by a killed
  run is removed (and reported);
* **append with flush**: each record is one line, flushed as soon as it is written, so a
  killed run loses at most the records in flight.

The binding is read, compared and written by :mod:`prefjudge.journal_binding` (one reader:
:func:`~prefjudge.journal_binding.read_binding`) and the lock is taken by
:mod:`prefjudge.journal_lock`; this module re-exports their names.

A record's key (given by the stage) says what the record is *of*: e.g. the model and
generation id for ``score``, so two models never collide. ``discard`` removes records
(e.g. errors about to be redone) by rewriting the file atomically, so a redo never leaves
a duplicate behind::

    with Journal(out, ScoredSample, key, stage="score", inputs={"generations": gens},
                 settings={"timeout_s": 30.0}) as journal:
        for gen in todo(journal.done):
            journal.write(score(gen))
        everything = journal.records()
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from prefjudge.interrupts import deferred_interrupt
from prefjudge.io import InputIssue, finite_json, parse_json_line
from prefjudge.journal_binding import (  # the binding's home; re-exported here
    BACKUP_SUFFIX,
    BINDING_SUFFIX,
    JOURNAL_FORMAT,
    JournalError,
    atomic_write,
    binding_path,
    check_binding,
    content_digest,
    file_fingerprint,
    model_settings,
    normalize,
    read_binding,
    write_binding,
)
from prefjudge.journal_lock import LOCK_SUFFIX, lock_output, lock_path, unlock_output
from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from prefjudge.reporting import Reporter

M = TypeVar("M", bound=BaseModel)
InputPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
JSON_LINE = json.JSONEncoder(ensure_ascii=False, check_circular=False, allow_nan=False)
"""How a record's JSON object becomes its line: ``json.dumps(..., ensure_ascii=False)``, byte
for byte, refusing NaN and infinities (one encoder for every line; a record is a tree, so the
check for cycles is left out)."""


def record_line(item: BaseModel) -> str:
    """A record's JSONL line (no newline): strict JSON, ``null`` for a non-finite number."""
    data = item.model_dump(mode="json")
    try:
        return JSON_LINE.encode(data)
    except ValueError:  # NaN or an infinity somewhere: JSON has no such number
        return JSON_LINE.encode(finite_json(data))


OUTPUT_CHOICE_HINT = "choose another -o"
"""How a command's user gives a stage another output (the default of :func:`output_choice`)."""

_output_choice: contextvars.ContextVar[str] = contextvars.ContextVar(
    "prefjudge_output_choice", default=OUTPUT_CHOICE_HINT
)


@contextlib.contextmanager
def output_choice(hint: str) -> Iterator[None]:
    """Say how to choose another output in the refusals of journals opened inside.

    A command whose outputs are not given by ``-o`` (``prefjudge run``: the experiment's
    name and results folder) names its own way in the messages of a locked output or an
    output that is an input.

    Args:
        hint: What the user does, e.g. ``give this run another [experiment] name``.

    Yields:
        Nothing; the hint applies until the block ends.
    """
    token = _output_choice.set(hint)
    try:
        yield
    finally:
        _output_choice.reset(token)


def _as_list(paths: InputPaths) -> list[Path]:
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


class Journal(Generic[M]):
    """An exclusive, bound, resumable JSONL output of one stage.

    Args:
        path: The output file.
        record: Pydantic model every line must validate as.
        key: The key of a record (what it is of); keys are unique within the output.
        stage: The stage's name (e.g. ``score``); an output of another stage is refused.
        inputs: Input files by role (``{"generations": path, "tasks": [paths]}``); their
            content is hashed into the binding, and none may be the output.
        settings: Everything else that changes the records (JSON-able); compared key by key.
        force_new: Start a new output even when one exists (the old one is kept as
            ``OUTPUT.bak``).
        flag: How the user asks for ``force_new`` (named in messages).
        changing_inputs: Input roles whose files (the same paths) may have changed since
            the binding because failed model requests in them were made again
            (``--retry-errors``): the stage checks such a change record by record through
            ``revise``, instead of the binding refusing it.
        revise: Called with the records held when an input of ``changing_inputs``
            changed; returns the keys of the records to make again (they are removed
            before anything is written), or raises :class:`JournalError` to refuse the
            change (nothing is written then: the binding still names the old input).

    Attributes:
        done: Records already in the output when it was opened, by key, in file order.
        notes: Things the user should be told (an incomplete line removed, a file replaced).
        resumed: Whether the output held records when it was opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        record: type[M],
        key: Callable[[M], str],
        *,
        stage: str,
        inputs: Mapping[str, InputPaths] | None = None,
        settings: Mapping[str, Any] | None = None,
        force_new: bool = False,
        flag: str = "--force-new",
        changing_inputs: Iterable[str] = (),
        revise: Callable[[Mapping[str, M]], Iterable[str]] | None = None,
    ):
        self.path = Path(path)
        self.record = record
        self.key = key
        self.stage = stage
        self.inputs = {role: _as_list(paths) for role, paths in (inputs or {}).items()}
        self.settings = normalize(dict(settings or {}))
        self.force_new = force_new
        self.flag = flag
        self.changing_inputs = frozenset(changing_inputs)
        self.revise = revise
        self.changed_inputs: set[str] = set()
        self.revised = 0
        self.done: dict[str, M] = {}
        self.notes: list[str] = []
        self.resumed = False
        # Every record by key, in file order; None for one written with keep=False (it is
        # then only in the file, and read back from there when asked for).
        self._records: dict[str, M | None] = {}
        self._unkept = 0
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._binding: dict[str, Any] = {}
        self._written = 0

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> Journal[M]:
        """Lock the output, check its binding and read what it holds.

        Returns:
            The journal itself.

        Raises:
            JournalError: When the output is an input, is locked by another run, was made
                by other inputs or settings, or holds a corrupt or duplicate record.
        """
        self._refuse_input_as_output()
        self._make_parent()
        self._lock()
        try:
            fingerprints = {
                role: [file_fingerprint(p) for p in paths] for role, paths in self.inputs.items()
            }
            self._binding = {
                "format": JOURNAL_FORMAT,
                "stage": self.stage,
                "inputs": fingerprints,
                "settings": self.settings,
            }
            if self.force_new:
                self._move_aside()
            self._check_binding()
            self._read_existing()
            if self.changed_inputs:
                self._revise()
            self._write_binding(created=not self.resumed)
            self._fd = _open_append(self.path)
        except BaseException:
            self._unlock()
            raise
        return self

    def _refuse_input_as_output(self) -> None:
        if self.path.is_dir():
            raise JournalError(f"{self.path}: is a folder; -o needs a file name")
        for role, paths in self.inputs.items():
            for path in paths:
                same = path.resolve() == self.path.resolve()
                if not same and path.exists() and self.path.exists():
                    same = os.path.samefile(path, self.path)
                if same:
                    raise JournalError(
                        f"the output {self.path} is the {role} input {path}: writing there would "
                        f"destroy it; {_output_choice.get()}"
                    )

    def _make_parent(self) -> None:
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(
                f"cannot create the folder {parent} for {self.path}: {exc.strerror or exc}"
            ) from exc
        if not os.access(parent, os.W_OK):
            raise JournalError(f"cannot write {self.path}: the folder {parent} is not writable")
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise JournalError(f"cannot write {self.path}: the file is not writable")

    def _lock(self) -> None:
        self._lock_fd = lock_output(self.path, _output_choice.get())

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            unlock_output(self.path, self._lock_fd)
            self._lock_fd = None

    def _move_aside(self) -> None:
        if not self.path.exists():
            return
        backup = self.path.with_name(self.path.name + BACKUP_SUFFIX)
        os.replace(self.path, backup)
        with contextlib.suppress(FileNotFoundError):
            binding_path(self.path).unlink()
        self.notes.append(f"{self.flag}: the previous {self.path.name} is kept as {backup}")

    def _check_binding(self) -> None:
        if _holds_records(self.path):  # else nothing to resume: a new output
            self.changed_inputs |= check_binding(self.path, self._binding, flag=self.flag,
                                                 changing_inputs=self.changing_inputs)

    def _read_existing(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            torn = len(data) - complete
            with self.path.open("rb+") as handle:
                handle.truncate(complete)
            self.notes.append(
                f"{self.path}: removed an incomplete last line ({torn} bytes) left by an "
                "interrupted run; that record is made again"
            )
            data = data[:complete]
        first_line: dict[str, int] = {}
        for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            item = self._parse_line(raw, number)
            key = self.key(item)
            if key in first_line:
                raise JournalError(
                    f"{self.path}:{number}: a second record for {key!r} (the first is on line "
                    f"{first_line[key]}); the output is corrupt: remove one of them, or use "
                    f"{self.flag} to start again"
                )
            first_line[key] = number
            self.done[key] = item
        self._records = dict(self.done)
        self.resumed = bool(self.done)

    def _revise(self) -> None:
        """Drop the records that ``revise`` says a changed input makes stale (see __init__)."""
        if self.revise is not None:
            self.revised = self.discard(self.revise(dict(self.done)))
            self.resumed = bool(self.done)

    def _parse_line(self, raw: bytes, number: int) -> M:
        where = f"{self.path}:{number}"
        advice = (
            f"the output is corrupt: fix or remove that line, or use {self.flag} to start again"
        )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JournalError(f"{where}: not valid UTF-8 ({exc.reason}); {advice}") from exc
        value = parse_json_line(str(self.path), number, text)  # the one JSONL line reader
        if isinstance(value, InputIssue):
            field = f"field {value.field!r}: " if value.field else ""
            raise JournalError(f"{where}: {field}{value.message}; {advice}")
        try:
            return self.record.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            article = "an" if self.stage[:1].lower() in "aeiou" else "a"
            raise JournalError(
                f"{where}: field {field!r}: {err['msg']} (not {article} {self.stage} record); "
                f"{advice}"
            ) from exc

    def _write_binding(self, *, created: bool) -> None:
        from prefjudge import __version__  # looked up on first use, not at import

        write_binding(self.path, self._binding, records=len(self._records), created=created,
                      version=__version__)

    # -- writing ---------------------------------------------------------------------------

    def write(self, item: M, *, keep: bool = True) -> None:
        """Append one record and flush it.

        Args:
            item: The record; its key must not be in the output yet.
            keep: Also hold it in memory for :meth:`records` (False: only its key is held,
                and :meth:`records` reads the records back from the file; for runs too
                large to hold).

        Raises:
            JournalError: When the key is already there, or the write fails (disk full,
                file system gone); the records written before are kept.
        """
        self.write_many([item], keep=keep)

    def write_many(self, items: Sequence[M], *, keep: bool = True) -> None:
        """Append records that are all finished, in one write (one system call).

        Writing many small records one by one costs a system call each, and a thread that
        gives up the interpreter lock for each (while another thread verifies) waits to get
        it back each time. A run killed mid-write leaves at most an incomplete last line,
        which the next run removes (see :meth:`open`).

        Args:
            items: The records, in order; their keys must be new and distinct.
            keep: As in :meth:`write`.

        Raises:
            JournalError: As in :meth:`write`; no record of ``items`` is written then, unless
                the operating system failed part way (the records before are kept).
        """
        keys = [self.key(item) for item in items]
        self._append(keys, lambda: [record_line(item) for item in items],
                     items if keep else None)

    def write_lines(self, keyed_lines: Sequence[tuple[str, str]]) -> None:
        """Append records already written as their lines, in one write, holding only keys.

        For a caller that builds each record's line itself, faster than through the model:
        each line must be what :func:`record_line` makes of a valid record whose key is
        given (``prefjudge score`` checks its fast lines against that in its tests). As
        :meth:`write_many` with ``keep=False``: :meth:`records` reads them back from the
        file.

        Args:
            keyed_lines: ``(key, line)`` per record, in order (lines without newline).

        Raises:
            JournalError: As in :meth:`write_many`.
        """
        keys = [key for key, _ in keyed_lines]
        self._append(keys, lambda: [line for _, line in keyed_lines], None)

    def _append(self, keys: list[str], lines: Callable[[], list[str]],
                items: Sequence[M] | None) -> None:
        """Refuse a repeated key, then write the lines (``items``: the records to hold)."""
        if self._fd is None:
            raise RuntimeError("the journal is not open")
        seen: set[str] = set()
        for key in keys:
            if key in self._records or key in seen:
                raise JournalError(f"{self.path}: a record for {key!r} is already there")
            seen.add(key)
        with deferred_interrupt():  # Ctrl-C lands between records, never inside one
            text = "".join(line + "\n" for line in lines())
            try:
                _write_all(self._fd, text.encode("utf-8"))
            except OSError as exc:
                raise self._write_failed(exc) from exc
            if items is None:
                self._records.update(dict.fromkeys(keys))
                self._unkept += len(keys)
            else:
                self._records.update(zip(keys, items, strict=True))
            self._written += len(keys)

    def _write_failed(self, exc: OSError) -> JournalError:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "no space left on the device"
        return JournalError(
            f"cannot write {self.path}: {reason}. The {len(self._records)} record(s) "
            "before it are kept; rerun the same command to resume"
        )

    def discard(self, keys: Iterable[str]) -> int:
        """Remove records (e.g. errors about to be redone) by rewriting the output atomically.

        Args:
            keys: Keys to remove; unknown keys are ignored.

        Returns:
            How many records were removed.
        """
        drop = {k for k in keys if k in self._records}
        if not drop:
            return 0
        was_open = self._fd is not None  # not yet while the journal is being opened
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        kept = [item for key, item in self._held().items() if key not in drop]
        text = "".join(record_line(item) + "\n" for item in kept)
        try:
            atomic_write(self.path, text)
        except OSError as exc:
            raise self._write_failed(exc) from exc
        self._records = {self.key(item): item for item in kept}
        self._unkept = 0
        self.done = {k: v for k, v in self.done.items() if k not in drop}
        if was_open:
            self._fd = _open_append(self.path)
        return len(drop)

    def records(self) -> list[M]:
        """Return every record in the output (earlier and new), in file order."""
        return list(self._held().values())

    def _held(self) -> dict[str, M]:
        """Every record by key, in file order (read back from the file after ``keep=False``)."""
        if not self._unkept:
            return self._records  # type: ignore[return-value]  # no None left
        read: dict[str, M] = {}
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if raw.strip():
                    item = self._parse_line(raw, number)
                    read[self.key(item)] = item
        return read

    @property
    def written(self) -> int:
        """Records written by this run."""
        return self._written

    def close(self) -> None:
        """Close the output, record the count in the binding and release the lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            with contextlib.suppress(OSError):
                self._write_binding(created=False)
        self._unlock()

    @property
    def is_open(self) -> bool:
        """Whether the journal is open (locked, ready to write)."""
        return self._fd is not None

    def __enter__(self) -> Journal[M]:
        return self if self.is_open else self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_journal(journal: Journal[M], reporter: Reporter) -> Journal[M]:
    """Open a stage's journal: a refusal is a :class:`~prefjudge.reporting.StageError`.

    What every use case does before it writes: the journal's notes (a partial last line
    removed, an old binding upgraded) go to the reporter.

    Args:
        journal: The journal to open.
        reporter: Where its notes go.

    Returns:
        The open journal (close it, or use it in a ``with`` block).

    Raises:
        StageError: When the journal cannot be opened (locked, bound to other inputs or
            settings, corrupt); the message says why and what to do.
    """
    try:
        journal.open()
    except JournalError as exc:
        raise StageError(str(exc)) from exc
    for note in journal.notes:
        reporter.note(f"note: {note}")
    return journal


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (unbuffered: a record is in the file once this returns)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _holds_records(path: Path) -> bool:
    """Whether ``path`` exists and holds more than whitespace."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size > 4096:
        return True
    return bool(path.read_bytes().strip())


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail early when a file that a run writes at its end could not be written.

    Args:
        path: The file (e.g. a summary or a single verdict); its folder is created.

    Raises:
        JournalError: When the folder cannot be created or written.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JournalError(f"cannot create the folder {path.parent}: {exc.strerror}") from exc
    if path.is_dir():
        raise JournalError(f"{path}: is a folder; a file name is needed")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise JournalError(f"cannot write {path}: permission denied")


__all__ = [
    "BACKUP_SUFFIX",
    "BINDING_SUFFIX",
    "JOURNAL_FORMAT",
    "JSON_LINE",
    "LOCK_SUFFIX",
    "OUTPUT_CHOICE_HINT",
    "InputPaths",
    "Journal",
    "JournalError",
    "binding_path",
    "check_binding",
    "check_writable",
    "content_digest",
    "file_fingerprint",
    "lock_path",
    "model_settings",
    "open_journal",
    "output_choice",
    "read_binding",
    "record_line",
    "write_binding",
]
