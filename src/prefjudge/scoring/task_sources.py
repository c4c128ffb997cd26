"""Tasks from several task sources, merged by id: what every ``--tasks`` and ``--tests`` reads.

Each source is a task file, a dataset folder or a hub dataset
(:func:`prefjudge.scoring.sources.open_task_source`); several are merged by ``task_id``
(e.g. the HumanEval+ and MBPP+ files), and a task in two of them is a mistake in how the
option was given (:class:`RepeatedTaskError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.records import Task
from prefjudge.scoring.sources import SourceError, open_task_source


class RepeatedTaskError(SourceError):
    """Two task sources hold the same task id (a usage mistake: name each task once)."""


@dataclass(frozen=True)
class LoadedTasks:
    """The tasks of several sources, and where they came from.

    Attributes:
        tasks: Tasks by id, over every source.
        paths: The local files read (for a journal to hash).
        identities: The identities of the hub datasets and folders among the sources
            (bound as settings: they have no file to hash).
        labels: Each source as a person reads it, in order.
    """

    tasks: dict[str, Task] = field(default_factory=dict)
    paths: list[Path] = field(default_factory=list)
    identities: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def load_task_sources(
    sources: Sequence[str],
    *,
    split: str | None = None,
    subset: str | None = None,
    option: str = "--tasks",
) -> LoadedTasks:
    """Load every task source and merge their tasks by id.

    Args:
        sources: Task files, dataset folders or hub dataset names, in order.
        split: Split of the hub datasets or folders among them (None: their own).
        subset: Subset of the hub datasets among them (None: their own).
        option: The option that named the sources, for messages (``--tasks``, ``--tests``).

    Returns:
        The merged tasks, the files read, the hub and folder identities, and the labels.

    Raises:
        UnknownSourceError: When a source names no file, folder or known hub dataset (or
            an unknown split or subset).
        RepeatedTaskError: When two sources hold the same task id.
        SourceError: When a known source cannot be used (e.g. a hub dataset not cached).
        InputError: When a task file cannot be read (the message names file and line).
    """
    loaded = LoadedTasks()
    for source in sources:
        tasks, where = open_task_source(source, split=split, subset=subset)
        loaded.paths.extend(where.paths)
        if where.identity:
            loaded.identities.append(dict(where.identity))
        loaded.labels.append(where.label)
        for task_id, task in tasks.items():
            if task_id in loaded.tasks:
                raise RepeatedTaskError(f"task {task_id!r} appears in more than one {option} file")
            loaded.tasks[task_id] = task
    return loaded
