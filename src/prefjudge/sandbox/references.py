"""Reference outputs of HumanEval+/MBPP+ tasks: run once, then kept in memory and on disk.

A candidate's outputs are compared with what the task's reference solution returns on
the same inputs, and its time limits come from the reference's CPU times (EvalPlus's
rule). Like EvalPlus, which keeps its expected outputs on disk keyed by the dataset,
prefjudge runs the reference once and keeps what it returned:

- in memory, by :func:`reference_key`, computed once per task even when several workers
  ask at the same time (:class:`ReferenceCache`); an error is not kept;
- on disk, content-addressed: one gzip'd JSON file per task, named by a digest of the
  task's reference data (code, inputs, oracle), the harness digest (the code that runs
  and compares, :func:`~prefjudge.sandbox.digest.harness_digest`), the store's format
  version and the Python version. A change to any of them is a new name, never a stale
  hit. The folder is ``$PREFJUDGE_REFERENCE_CACHE`` when set (``off`` keeps nothing on
  disk), else ``$XDG_CACHE_HOME/prefjudge/references``
  (``~/.cache/prefjudge/references``).

A file that cannot be read back as the harness writes it (cut short, edited, another
task's) is ignored with a warning and computed again; writes go to a temporary file
renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import marshal
import os
import sys
import tempfile
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox.adapters import evalplus_dataset, interpret, reference_payload
from prefjudge.sandbox.compare import (
    ReferenceOutputs,
    SpoiledOutputs,
    _bounded,
    _output_line,
    input_positions,
    read_lines,
)
from prefjudge.sandbox.digest import harness_digest
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import RunOutcome

log = logging.getLogger(__name__)

STORE_ENV = "PREFJUDGE_REFERENCE_CACHE"
STORE_OFF = frozenset({"off", "0", "none", "no"})
STORE_VERSION = 1
"""The on-disk format; bumped when it changes (a new version is a new file name)."""

Runner = Callable[[dict, SandboxLimits], RunOutcome]
KEYS_KEPT = 4096
"""Task objects whose :func:`reference_key` a :class:`ReferenceCache` keeps."""


def reference_key(task: Task) -> str:
    """What identifies a task's reference outputs (code, inputs, oracle, MBPP number).

    A digest of their ``marshal`` form (a few times faster than JSON on a task's
    thousand inputs, and asked for on every sample); inputs ``marshal`` cannot write
    (never those read from JSON) are digested as JSON, with ``repr`` for the rest.
    """
    parts = [task.task_id, task.entry_point, evalplus_dataset(task), task.canonical_solution,
             task.base_inputs or [], task.plus_inputs or []]
    try:
        data = b"m" + marshal.dumps(parts, 2)
    except ValueError:
        data = b"j" + json.dumps(parts, sort_keys=True, default=repr).encode()
    return hashlib.sha256(data).hexdigest()


def reference_from(task: Task, outcome: RunOutcome, limits: SandboxLimits
                   ) -> ReferenceOutputs | FuncResult:
    """The reference outputs from its run, or the ``error`` that says why there are none."""
    status = (outcome.result or {}).get("status")
    if status != "ran":
        result = interpret(outcome, limits) if status != "pass" else None
        why = result.detail if result is not None else "it reported no outputs"
        if result is not None and result.status == "error":
            return FuncResult(status="error", detail=_bounded(why))
        return FuncResult(status="error", detail=_bounded(
            f"the reference solution did not run on every input: {why}"))
    checked = checked_lines(task, read_lines(outcome.outputs))
    return checked if isinstance(checked, ReferenceOutputs) else FuncResult(
        status="error", detail=checked)


def checked_lines(task: Task, lines: list) -> ReferenceOutputs | str:
    """The reference's output lines if they are what the harness writes, else why not."""
    positions = input_positions(task)
    if len(lines) != len(positions):
        return f"the reference solution gave {len(lines)} outputs for {len(positions)} inputs"
    try:
        checked = tuple(_output_line(line, name, index)
                        for line, (name, index, _) in zip(lines, positions, strict=True))
        for line in checked:
            if "raised" in line or "timeout" in line:
                raise SpoiledOutputs(f"{line['set']} input #{line['i']} has no output")
            float(line["cpu"])
    except (SpoiledOutputs, KeyError, TypeError, ValueError) as exc:
        return f"the reference solution's outputs: {exc}"
    return ReferenceOutputs(checked)


def store_dir() -> Path | None:
    """The on-disk store's folder, or None when ``$PREFJUDGE_REFERENCE_CACHE`` is ``off``."""
    chosen = os.environ.get(STORE_ENV, "").strip()
    if chosen.lower() in STORE_OFF:
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "prefjudge" / "references"


def store_name(task: Task) -> str:
    """The file name of a task's reference outputs on disk (content-addressed)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    parts = [reference_key(task), harness_digest(), STORE_VERSION, version]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40] + ".json.gz"


class ReferenceStore:
    """Reference outputs on disk, one content-addressed file per task.

    Args:
        folder: Where the files go (created when first written).
    """

    def __init__(self, folder: Path) -> None:
        """A store in ``folder``."""
        self.folder = folder

    def path(self, task: Task) -> Path:
        """Where ``task``'s reference outputs are (or would be) kept."""
        return self.folder / store_name(task)

    def load(self, task: Task) -> ReferenceOutputs | None:
        """The kept outputs of ``task``; None when there are none or they cannot be used."""
        path = self.path(task)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError,
                RecursionError) as exc:
            log.warning("ignoring kept reference outputs %s (%s); running the reference "
                        "again", path, type(exc).__name__)
            return None
        if not (isinstance(data, dict) and data.get("key") == reference_key(task)
                and isinstance(data.get("lines"), list)):
            log.warning("ignoring kept reference outputs %s (not this task's); running the "
                        "reference again", path)
            return None
        checked = checked_lines(task, data["lines"])
        if not isinstance(checked, ReferenceOutputs):
            log.warning("ignoring kept reference outputs %s (%s); running the reference again",
                        path, checked)
            return None
        return checked

    def save(self, task: Task, reference: ReferenceOutputs) -> None:
        """Keep ``task``'s outputs (a failure to write is a warning: the run goes on)."""
        path = self.path(task)
        data = {"key": reference_key(task), "task_id": task.task_id,
                "harness": harness_digest(), "lines": list(reference.lines)}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-",
                                                 suffix=".json.gz")
            try:
                with os.fdopen(handle, "wb") as raw, gzip.GzipFile(
                        fileobj=raw, mode="wb", compresslevel=1, mtime=0) as zipped:
                    zipped.write(json.dumps(data, separators=(",", ":")).encode())
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("could not keep the reference outputs of %s in %s: %s",
                        task.task_id, self.folder, exc)


class ReferenceCache:
    """Reference outputs by :func:`reference_key`, in memory and in a :class:`ReferenceStore`.

    Computed once per task even when several workers ask at the same time; an error is
    not kept (the next sample asks again).

    Args:
        store: Where outputs are kept on disk; by default the folder :func:`store_dir`
            names when first asked (so ``$PREFJUDGE_REFERENCE_CACHE`` set later counts).
    """

    def __init__(self, store: ReferenceStore | None = None) -> None:
        """An empty cache."""
        self._lock = threading.Lock()
        self._keys: dict[str, threading.Lock] = {}
        self._done: dict[str, ReferenceOutputs | FuncResult] = {}
        self._task_keys: dict[int, tuple[tuple, str]] = {}
        self._store = store
        self.disk_hits = 0

    def _disk(self) -> ReferenceStore | None:
        if self._store is not None:
            return self._store
        folder = store_dir()
        return None if folder is None else ReferenceStore(folder)

    def _key(self, task: Task) -> str:
        """:func:`reference_key`, digested once per task object (every sample asks).

        Kept while the task object and the fields the key reads are the same objects; at
        most :data:`KEYS_KEPT` of them.
        """
        fields = (task, task.task_id, task.entry_point, task.canonical_solution,
                  task.base_inputs, task.plus_inputs, task.metadata)
        held = self._task_keys.get(id(task))
        if held is not None and all(a is b for a, b in zip(held[0], fields, strict=True)):
            return held[1]
        key = reference_key(task)
        with self._lock:
            if len(self._task_keys) >= KEYS_KEPT:
                self._task_keys.clear()
            self._task_keys[id(task)] = (fields, key)
        return key

    def get(self, task: Task, compute: Callable[[], ReferenceOutputs | FuncResult]
            ) -> ReferenceOutputs | FuncResult:
        """The task's reference outputs: from memory, from disk, else from ``compute``."""
        key = self._key(task)
        with self._lock:
            key_lock = self._keys.setdefault(key, threading.Lock())
        with key_lock:
            if key in self._done:
                return self._done[key]
            store = self._disk()
            found: ReferenceOutputs | FuncResult | None = None
            if store is not None:
                found = store.load(task)
                if found is not None:
                    self.disk_hits += 1
            if found is None:
                found = compute()
                if store is not None and isinstance(found, ReferenceOutputs):
                    store.save(task, found)
            if isinstance(found, ReferenceOutputs):  # an error may pass: asked again next time
                self._done[key] = found
            return found

    def clear(self) -> None:
        """Forget every task's outputs held in memory (the disk store is left as it is)."""
        with self._lock:
            self._done.clear()
            self._keys.clear()
            self._task_keys.clear()


REFERENCES = ReferenceCache()


def reference_outputs(task: Task, limits: SandboxLimits, run: Runner
                      ) -> ReferenceOutputs | FuncResult:
    """The task's reference outputs: kept ones, else its reference solution run in a sandbox.

    Args:
        task: An EvalPlus (HumanEval+/MBPP+) task.
        limits: The limits of the reference's own run.
        run: Runs a payload (a fresh sandbox, or a zygote pool's ``run``).

    Returns:
        The outputs, or the ``error`` result that says why there are none.
    """
    return REFERENCES.get(
        task, lambda: reference_from(task, run(reference_payload(task), limits), limits))
