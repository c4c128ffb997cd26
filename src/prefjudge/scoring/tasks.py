"""Convert benchmark rows into :class:`~prefjudge.records.Task`, with the registered formats.

The convert step of reading a task source: rows come from a file (:func:`load_tasks`),
or from what :mod:`prefjudge.scoring.sources` fetched (:func:`tasks_from_fetched`); the
format is told apart by the fields of the first record, never by the file name, and each
row goes through that format's converter. The formats are those of
:mod:`prefjudge.scoring.task_formats`, as distributed (``.jsonl`` or ``.jsonl.gz``):

- BigCodeBench (``instruct_prompt``, ``complete_prompt``, ``canonical_solution``,
  ``test``, ``entry_point``, ``libs``): the prompt is the instruction, the reference is
  ``complete_prompt + canonical_solution``, tests are ``unittest`` ``TestCases``;
- HumanEval (``prompt``, ``canonical_solution``, ``test``, ``entry_point``):
  ``check(candidate)`` tests, reference ``prompt + canonical_solution``;
- HumanEval+ and MBPP+ (EvalPlus: ``base_input``, ``plus_input``, ``atol``; MBPP+ also
  has ``assertion``): differential tests against the reference;
- LiveCodeBench ``code_generation_lite`` (``question_content``, ``public_test_cases``,
  ``private_test_cases``, ``starter_code``, ``metadata``);
- the project's own task JSONL (records shaped like ``Task``).

The same converters read the public hub releases (:mod:`prefjudge.scoring.sources`);
:data:`HUB_DATASETS` names them, derived from the registry.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prefjudge.io import (
    FieldProblem,
    InputError,
    InputIssue,
    iter_objects,
    validation_issues,
)
from prefjudge.live_views import LiveMapping
from prefjudge.records import Task
from prefjudge.scoring.source_types import Fetched, HubUnavailableError, SourceError
from prefjudge.scoring.task_formats import (
    TaskFormat,
    detect_task_format,
    expected_titles,
    file_task_format,
    task_formats,
    task_hub_datasets,
)
from prefjudge.scoring.task_formats.bigcodebench import BIGCODEBENCH_FIELDS, parse_libs
from prefjudge.scoring.task_formats.humaneval import EVALPLUS_FIELDS, HUMANEVAL_FIELDS
from prefjudge.scoring.task_formats.livecodebench import (
    LCB_FUNCTIONAL_NOTE,
    LCB_FUNCTIONAL_REASON,
    LCB_STDIO_NOTE,
    decode_lcb_cases,
)

__all__ = [
    "BIGCODEBENCH_FIELDS",
    "CONVERTERS",
    "EVALPLUS_FIELDS",
    "HUB_DATASETS",
    "HUMANEVAL_FIELDS",
    "LCB_FUNCTIONAL_NOTE",
    "LCB_FUNCTIONAL_REASON",
    "LCB_STDIO_NOTE",
    "HubUnavailableError",
    "decode_lcb_cases",
    "detect_format",
    "imported_modules",
    "load_tasks",
    "missing_libraries",
    "parse_libs",
    "tasks_from_fetched",
    "tasks_from_records",
]


HUB_DATASETS: Mapping[str, str] = LiveMapping(
    lambda: {entry.repo: entry.note for entry in task_hub_datasets()}
)
"""Hub id -> note, for every task dataset known by name (the task formats' ``hub``)."""

CONVERTERS: Mapping[str, Callable[[dict[str, Any]], Task]] = LiveMapping(
    lambda: {fmt.name: fmt.convert for fmt in task_formats()}
)
"""Format name -> row converter, for every registered task format."""


def detect_format(record: dict[str, Any]) -> str | None:
    """Name the benchmark a record comes from, by its fields.

    Args:
        record: One parsed JSONL record.

    Returns:
        The name of the first registered format, in detection order, that takes it:
        ``livecodebench``, ``bigcodebench``, ``mbppplus``, ``humanevalplus``,
        ``humaneval``, ``mbppplus_hub`` (the hub release of MBPP+, which lacks the
        EvalPlus inputs), ``prefjudge`` (the project's own task format), or None when it
        is none of them.
    """
    fmt = detect_task_format(record)
    return fmt.name if fmt is not None else None


def _convert(
    path: str, number: int, record: Any, fmt: TaskFormat | None
) -> tuple[Task | None, list[InputIssue]]:
    if not isinstance(record, dict):
        return None, [InputIssue(path, number, "", "expected a JSON object")]
    if fmt is None:
        return None, [
            InputIssue(
                path,
                number,
                "",
                "cannot tell the benchmark from the fields "
                f"{sorted(record)[:12]}; expected {expected_titles()} task records",
            )
        ]
    try:
        return fmt.convert(record), []
    except FieldProblem as exc:
        return None, [InputIssue(path, number, exc.field, f"{exc} ({fmt.name} format)")]
    except ValidationError as exc:
        return None, validation_issues(path, number, exc)


def load_tasks(path: str | os.PathLike[str]) -> dict[str, Task]:
    """Load every task of a benchmark file, detecting its format.

    Args:
        path: BigCodeBench, HumanEval, HumanEval+, MBPP+, LiveCodeBench or prefjudge
            task JSONL (optionally gzipped), or a file of any other registered format.

    Returns:
        Tasks by ``task_id``, in file order.

    Raises:
        InputError: With every problem found (file, line, field): lines that are not
            JSON objects, missing or mistyped fields, duplicate task ids, no tasks.
    """
    fmt = file_task_format(Path(path))
    if fmt is not None and fmt.read_file is not None:
        return tasks_from_records(fmt.read_file(Path(path)), str(path), fmt=fmt)
    return tasks_from_records(iter_objects(path), str(path), fmt=fmt)


def tasks_from_records(
    records: Iterable[tuple[int, dict[str, Any] | InputIssue]],
    where: str,
    *,
    fmt: TaskFormat | None = None,
) -> dict[str, Task]:
    """Convert benchmark records (format detected from the first one) into tasks.

    Args:
        records: ``(line number, record or issue)`` pairs, as :func:`iter_objects` gives.
        where: The source named in error messages (a path or ``hub:NAME[SPLIT]``).
        fmt: The format, when known already; None: told from the first record.

    Returns:
        Tasks by ``task_id``, in order.

    Raises:
        InputError: With every problem found (see :func:`load_tasks`).
    """
    tasks: dict[str, Task] = {}
    first_line: dict[str, int] = {}
    issues: list[InputIssue] = []
    for number, record in records:
        if isinstance(record, InputIssue):
            issues.append(record)
            continue
        if fmt is None and isinstance(record, dict):
            fmt = detect_task_format(record)
        task, found = _convert(where, number, record, fmt)
        issues.extend(found)
        if task is None:
            continue
        if task.task_id in tasks:
            issues.append(
                InputIssue(
                    where,
                    number,
                    "task_id",
                    f"duplicate task_id "
                    f"{task.task_id!r} (first on line {first_line[task.task_id]})",
                )
            )
            continue
        tasks[task.task_id] = task
        first_line[task.task_id] = number
    if not tasks and not issues:
        issues.append(InputIssue(where, 0, "", "no tasks in the file"))
    if issues:
        raise InputError(issues)
    return tasks


def tasks_from_fetched(fetched: Fetched, limit: int | None = None) -> dict[str, Task]:
    """The tasks of a fetched source: its rows, or its files read in order and merged.

    Args:
        fetched: What :func:`prefjudge.scoring.sources.fetch_source` fetched.
        limit: Keep only the first N tasks (files after the one that reaches N are not read).

    Returns:
        Tasks by ``task_id``, in source order.

    Raises:
        SourceError: When a task id is in two of the source's files.
        InputError: See :func:`load_tasks`.
    """
    if fetched.rows is not None:
        tasks = tasks_from_records(fetched.rows, fetched.origin.label)
    else:
        tasks = {}
        for path in fetched.files:
            for task_id, task in load_tasks(path).items():
                if task_id in tasks:
                    raise SourceError(
                        f"{fetched.origin.label}: task {task_id!r} is in two of its files"
                    )
                tasks[task_id] = task
            if limit is not None and len(tasks) >= limit:
                break
    return tasks if limit is None else dict(islice(tasks.items(), limit))


def imported_modules(source: str) -> set[str]:
    """Top-level modules ``source`` imports (absolute imports only; empty if unparsable)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested too deeply too
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".", 1)[0])
    return names


def missing_libraries(task: Task) -> list[str]:
    """Libraries the task needs that this interpreter cannot import.

    Args:
        task: A task; its ``libs`` and the modules its reference solution and tests
            import are checked (BigCodeBench tests import libraries its ``libs`` omit).

    Returns:
        Sorted names of the top-level modules that are not installed.
    """
    needed = {lib.split(".", 1)[0] for lib in task.libs}
    needed |= imported_modules(task.canonical_solution or "") | imported_modules(task.tests)
    missing = []
    for name in sorted(needed):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing
