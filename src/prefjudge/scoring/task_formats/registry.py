"""The registry of benchmark task formats: each format registers itself here, once.

A format is one module (``bigcodebench``, ``humaneval``, ``livecodebench``,
``prefjudge_jsonl`` in this package) that calls :func:`register_task_format` (or decorates its
row converter with :func:`task_format`) with its name, how its rows are told apart, its
converter, its hub datasets and the test formats its tasks get. Everything that names
task formats is derived from here: the detection order
(:func:`detect_task_format`), :data:`prefjudge.scoring.tasks.HUB_DATASETS`, the hub list
of :mod:`prefjudge.scoring.sources` and the "expected ..." of error messages.

This module imports no numeric library, nor any reader: the CLI may read names from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.records import Task
from prefjudge.scoring.registry_base import Registry, named_list
from prefjudge.scoring.source_types import HubDataset

RowReader = Callable[[Path], Iterable[tuple[int, Any]]]
"""Reads a file as ``(line or row number, record or InputIssue)`` pairs."""


@dataclass(frozen=True)
class TaskFormat:
    """One benchmark task format: how its rows are told apart and converted.

    Attributes:
        name: Its name (what :func:`detect_task_format` returns).
        title: The benchmark as messages name it (``HumanEval+``); formats that share a
            title are named once.
        detect: Whether a row is in this format (told from its fields, never a file name).
        convert: One row to a :class:`~prefjudge.records.Task`; raises
            :class:`~prefjudge.io.FieldProblem` (or pydantic's ``ValidationError``) for a
            row it cannot convert.
        order: Detection order, lowest first (ties: registration order); a catch-all
            format such as ``prefjudge`` comes last.
        hub: The hub datasets whose rows it reads, with their defaults (split, subsets).
        test_formats: The ``test_format`` values its tasks get.
        detect_file: Whether a file is in this format before any row is read (for files
            that are not JSONL); None: told from the rows.
        read_file: Reads such a file as rows; None: JSONL (:func:`prefjudge.io.iter_objects`).
    """

    name: str
    title: str
    detect: Callable[[Mapping[str, Any]], bool]
    convert: Callable[[dict[str, Any]], Task]
    order: int = 50
    hub: tuple[HubDataset, ...] = ()
    test_formats: tuple[str, ...] = ()
    detect_file: Callable[[Path], bool] | None = None
    read_file: RowReader | None = None


_FORMATS: Registry[TaskFormat] = Registry("task format")


def register_task_format(fmt: TaskFormat, *, replace_existing: bool = False) -> TaskFormat:
    """Add a task format to the registry.

    Args:
        fmt: The format.
        replace_existing: Replace a format of the same name instead of refusing it.

    Returns:
        ``fmt``.

    Raises:
        ValueError: When a format of that name is registered already, or one of its hub
            datasets is not a ``tasks`` dataset or belongs to another format.
    """
    for entry in fmt.hub:
        owner = next((f.name for f in _FORMATS.entries() if f.name != fmt.name and any(
            e.repo.lower() == entry.repo.lower() for e in f.hub)), None)
        if entry.kind != "tasks" or owner is not None:
            raise ValueError(f"{fmt.name}: hub dataset {entry.repo!r} is not a tasks dataset "
                             f"or belongs to {owner!r}")
    return _FORMATS.add(fmt, replace_existing=replace_existing)


def task_format(
    *, name: str, title: str, detect: Callable[[Mapping[str, Any]], bool], **options: Any
) -> Callable[[Callable[[dict[str, Any]], Task]], Callable[[dict[str, Any]], Task]]:
    """Register the decorated row converter as a task format (see :class:`TaskFormat`).

    Args:
        name: See :class:`TaskFormat`.
        title: See :class:`TaskFormat`.
        detect: See :class:`TaskFormat`.
        **options: The other fields of :class:`TaskFormat` (``order``, ``hub``, ...).

    Returns:
        A decorator that registers the converter and returns it unchanged.
    """

    def register(convert: Callable[[dict[str, Any]], Task]) -> Callable[[dict[str, Any]], Task]:
        register_task_format(TaskFormat(name, title, detect, convert, **options))
        return convert

    return register


unregister_task_format = _FORMATS.remove
"""Remove a task format by name (tests that register one of their own); None when unknown."""

task_formats = _FORMATS.entries
"""Every registered task format, in registration order."""

task_format_names = _FORMATS.names
"""The names of every registered task format, in registration order."""

get_task_format = _FORMATS.get
"""The task format of that name (KeyError, listing the names, when there is none)."""

detection_order = _FORMATS.ordered
"""The formats in the order rows are tried: by ``order``, then registration."""


def detect_task_format(record: Mapping[str, Any]) -> TaskFormat | None:
    """The first format, in :func:`detection_order`, whose ``detect`` accepts ``record``."""
    return next((fmt for fmt in detection_order() if fmt.detect(record)), None)


def file_task_format(path: Path) -> TaskFormat | None:
    """The format that claims ``path`` as a whole (``detect_file``), if any."""
    return next(
        (fmt for fmt in detection_order() if fmt.detect_file is not None and fmt.detect_file(path)),
        None,
    )


def is_task_record(record: Mapping[str, Any]) -> bool:
    """Whether a record is a benchmark task row in some registered format."""
    return detect_task_format(record) is not None


def task_hub_datasets() -> tuple[HubDataset, ...]:
    """Every hub dataset a task format reads, in registration order."""
    return tuple(entry for fmt in _FORMATS.entries() for entry in fmt.hub)


def expected_titles() -> str:
    """``A, B or C``: every format's title once, in registration order (for messages)."""
    return named_list([fmt.title for fmt in _FORMATS.entries()])
