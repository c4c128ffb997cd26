"""Performance-exercising inputs, made once per task and kept: one file per benchmark.

The file lies beside the reference outputs (:func:`prefjudge.sandbox.references.store_dir`;
``$PREFJUDGE_REFERENCE_CACHE=off`` keeps nothing on disk) and is named, like them, by
what would change its content: the benchmark (``humaneval``/``mbpp``), the store's
format version (:data:`PERF_VERSION`, which also stands for the scaling and acceptance
rules), the harness digest and the Python version. It keeps, per task, the **recipe**
(seed input, strategy, each step's factor and candidate, the reference's CPU time) and
each input's SHA-256, not the inputs: they are made again exactly from the recipe
(:func:`~prefjudge.judge.facts.perf_inputs.accept.from_recipe`) and checked by digest. An
entry is keyed by the task's :func:`~prefjudge.sandbox.references.reference_key`: a
changed task is made again. A task with no accepted input is kept as ``null`` (not
tried again).

Writes merge with what is on disk and go to a temporary file renamed into place.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefjudge.journal import atomic_write
from prefjudge.judge.facts.perf_inputs.accept import PerfInputs, from_recipe
from prefjudge.records import Task
from prefjudge.sandbox.adapters import evalplus_dataset
from prefjudge.sandbox.digest import harness_digest
from prefjudge.sandbox.references import reference_key, store_dir

log = logging.getLogger(__name__)

PERF_VERSION = 5
"""The format and the rules that made the inputs; bumped when either changes."""
NONE_RULES = 2
"""The rules for a task none of whose families grows (2: ``inner`` tried too). A task kept
with no inputs under older rules is tried again; tasks with inputs are kept as they are,
since the rules for them did not change."""
_MISSING = object()
Loader = Callable[[Task, Any], "PerfInputs | None"]


def store_path(folder: Path, task: Task, kind: str = "scaled") -> Path:
    """The file that keeps the perf inputs of ``task``'s benchmark in ``folder``.

    ``kind``: ``scaled`` (grown from the task's inputs) or ``model`` (a model's generator's,
    kept in a file of their own, ``perf-inputs-model-...``).
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    prefix = "perf-inputs-" if kind == "scaled" else f"perf-inputs-{kind}-"
    return folder / (f"{prefix}{evalplus_dataset(task)}-v{PERF_VERSION}-"
                     f"{harness_digest()[:12]}-py{version}.json")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        log.warning("ignoring kept perf inputs %s (%s)", path, type(exc).__name__)
        return {}
    return data.get("tasks", {}) if isinstance(data, dict) else {}


class PerfInputStore:
    """Perf inputs by task: in memory, and in one file per benchmark on disk.

    Args:
        folder: Where the files go; by default :func:`store_dir` when first asked.
        kind: ``scaled`` or ``model`` (:func:`store_path`).
    """

    def __init__(self, folder: Path | None = None, kind: str = "scaled") -> None:
        """An empty store."""
        self._folder = folder
        self.kind = kind
        self._lock = threading.Lock()
        self._held: dict[str, PerfInputs | None] = {}
        self.made = 0

    def _dir(self) -> Path | None:
        return self._folder if self._folder is not None else store_dir()

    def _load(self, task: Task, key: str, load: Loader) -> Any:
        folder = self._dir()
        if folder is None:
            return _MISSING
        entry = _read(store_path(folder, task, self.kind)).get(task.task_id)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return _MISSING
        if entry.get("recipe") is None:
            return None if entry.get("none_rules", 1) >= NONE_RULES else _MISSING
        found = load(task, entry["recipe"])
        if found is None:
            log.warning("kept perf inputs of %s do not come back from their recipe; "
                        "making them again", task.task_id)
            return _MISSING
        return found

    def _save(self, task: Task, key: str, found: PerfInputs | None) -> None:
        folder = self._dir()
        if folder is None:
            return
        path = store_path(folder, task, self.kind)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tasks = _read(path)
            tasks[task.task_id] = {"key": key,
                                   "recipe": None if found is None else found.recipe()}
            if found is None:
                tasks[task.task_id]["none_rules"] = NONE_RULES
            atomic_write(path, json.dumps({"version": PERF_VERSION, "harness": harness_digest(),
                                           "tasks": tasks}, sort_keys=True, indent=1))
        except OSError as exc:
            log.warning("could not keep the perf inputs of %s in %s: %s",
                        task.task_id, folder, exc)

    def get(self, task: Task, make: Callable[[], PerfInputs | None], *, key_extra: str = "",
            load: Loader = from_recipe) -> PerfInputs | None:
        """The task's perf inputs: held, kept on disk, else made by ``make`` and kept.

        Args:
            task: The task.
            make: Makes them (None: the task has none).
            key_extra: What else they depend on (the model that wrote a generator).
            load: Makes kept ones again from their recipe (None where they do not come back).
        """
        key = reference_key(task) + (f"|{key_extra}" if key_extra else "")
        with self._lock:
            if key in self._held:
                return self._held[key]
            found = self._load(task, key, load)
            if found is _MISSING:
                found = make()
                self.made += 1
                self._save(task, key, found)
            self._held[key] = found
            return found

    def clear(self) -> None:
        """Forget what is held in memory (the files are left as they are)."""
        with self._lock:
            self._held.clear()


PERF_INPUTS = PerfInputStore()
MODEL_PERF_INPUTS = PerfInputStore(kind="model")
