"""Load benchmark tasks from local files into :class:`~prefjudge.records.Task`.

Accepted, as distributed (``.jsonl`` or ``.jsonl.gz``), the format told apart by the
fields of the records, never by the file name:

- BigCodeBench (``instruct_prompt``, ``complete_prompt``, ``canonical_solution``,
  ``test``, ``entry_point``, ``libs``): the prompt is the instruction, the reference is
  ``complete_prompt + canonical_solution``, tests are ``unittest`` ``TestCases``;
- HumanEval (``prompt``, ``canonical_solution``, ``test``, ``entry_point``):
  ``check(candidate)`` tests, reference ``prompt + canonical_solution``;
- HumanEval+ and MBPP+ (EvalPlus: ``base_input``, ``plus_input``, ``atol``; MBPP+ also
  has ``assertion``): differential tests against the reference;
- the project's own task JSONL (records shaped like ``Task``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import warnings
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from prefjudge.io import InputError, InputIssue, iter_objects, validation_issues
from prefjudge.records import Task

BIGCODEBENCH_FIELDS = (
    "task_id",
    "instruct_prompt",
    "complete_prompt",
    "canonical_solution",
    "test",
    "entry_point",
)
EVALPLUS_FIELDS = (
    "task_id",
    "prompt",
    "entry_point",
    "canonical_solution",
    "base_input",
    "plus_input",
)
HUMANEVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


class _FieldProblem(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def detect_format(record: dict[str, Any]) -> str | None:
    """Name the benchmark a record comes from, by its fields.

    Args:
        record: One parsed JSONL record.

    Returns:
        ``bigcodebench``, ``mbppplus``, ``humanevalplus``, ``humaneval``, ``prefjudge``
        (the project's own task format), or None when it is none of them.
    """
    keys = set(record)
    if {"instruct_prompt", "complete_prompt"} <= keys:
        return "bigcodebench"
    if {"base_input", "plus_input"} <= keys:
        return "mbppplus" if "assertion" in keys else "humanevalplus"
    if {"prompt", "canonical_solution", "test", "entry_point"} <= keys:
        return "humaneval"
    if "test_format" in keys or ("task_id" in keys and "prompt" in keys):
        return "prefjudge"
    return None


def _text(record: dict[str, Any], field: str) -> str:
    if field not in record:
        raise _FieldProblem(field, "missing")
    value = record[field]
    if not isinstance(value, str):
        raise _FieldProblem(field, f"expected a string, got {type(value).__name__}")
    return value


def _inputs(record: dict[str, Any], field: str) -> list[Any]:
    value = record.get(field)
    if value is None or value == {}:
        return []  # MBPP+ has one task whose plus_input is an empty object
    if not isinstance(value, list) or not all(isinstance(item, list) for item in value):
        raise _FieldProblem(field, "expected a list of argument lists")
    return value


def parse_libs(value: Any) -> list[str]:
    """BigCodeBench ``libs``: a list, or (in some versions) the string repr of one."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, SyntaxError) as exc:
            raise _FieldProblem("libs", f"not a list literal: {value[:80]!r}") from exc
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _FieldProblem("libs", "expected a list of library names")
    return sorted(set(value))


def _bigcodebench(record: dict[str, Any]) -> Task:
    fields = {name: _text(record, name) for name in BIGCODEBENCH_FIELDS}
    return Task(
        task_id=fields["task_id"],
        prompt=fields["instruct_prompt"],
        entry_point=fields["entry_point"],
        test_format="bigcodebench",
        tests=fields["test"],
        canonical_solution=fields["complete_prompt"] + fields["canonical_solution"],
        libs=parse_libs(record.get("libs", [])),
        source="bigcodebench",
        metadata={
            "complete_prompt": fields["complete_prompt"],
            "code_prompt": record.get("code_prompt", ""),
        },
    )


def _humaneval(record: dict[str, Any]) -> Task:
    fields = {name: _text(record, name) for name in HUMANEVAL_FIELDS}
    return Task(
        task_id=fields["task_id"],
        prompt=fields["prompt"],
        entry_point=fields["entry_point"],
        test_format="humaneval",
        tests=fields["test"],
        canonical_solution=fields["prompt"] + fields["canonical_solution"],
        source="humaneval",
    )


def _mbpp_prompt_text(raw: str) -> str:
    text = raw.strip()
    if text.startswith('"""') and text.endswith('"""') and len(text) >= 6:
        text = text[3:-3]
    return text.strip()


def _evalplus(record: dict[str, Any], dataset: str) -> Task:
    fields = {name: _text(record, name) for name in EVALPLUS_FIELDS[:4]}
    atol = record.get("atol", 0)
    if isinstance(atol, bool) or not isinstance(atol, (int, float)):
        raise _FieldProblem("atol", "expected a number")
    metadata: dict[str, Any] = {"evalplus_dataset": dataset}
    if isinstance(record.get("contract"), str):
        metadata["contract"] = record["contract"]
    prompt = fields["prompt"]
    if dataset == "mbpp":
        metadata["raw_prompt"] = prompt
        metadata["assertion"] = _text(record, "assertion")
        prompt = _mbpp_prompt_text(prompt)
    return Task(
        task_id=fields["task_id"],
        prompt=prompt,
        entry_point=fields["entry_point"],
        test_format="evalplus",
        tests=record["assertion"] if dataset == "mbpp" else str(record.get("test", "")),
        canonical_solution=fields["prompt"] + fields["canonical_solution"],
        base_inputs=_inputs(record, "base_input"),
        plus_inputs=_inputs(record, "plus_input"),
        atol=float(atol),
        source="mbppplus" if dataset == "mbpp" else "humanevalplus",
        metadata=metadata,
    )


CONVERTERS: dict[str, Callable[[dict[str, Any]], Task]] = {
    "bigcodebench": _bigcodebench,
    "humaneval": _humaneval,
    "humanevalplus": lambda record: _evalplus(record, "humaneval"),
    "mbppplus": lambda record: _evalplus(record, "mbpp"),
    "prefjudge": Task.model_validate,
}


def _convert(
    path: str, number: int, record: Any, fmt: str | None
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
                f"{sorted(record)[:12]}; expected BigCodeBench, HumanEval, "
                "HumanEval+, MBPP+ or prefjudge task records",
            )
        ]
    try:
        return CONVERTERS[fmt](record), []
    except _FieldProblem as exc:
        return None, [InputIssue(path, number, exc.field, f"{exc} ({fmt} format)")]
    except ValidationError as exc:
        return None, validation_issues(path, number, exc)


def load_tasks(path: str | os.PathLike[str]) -> dict[str, Task]:
    """Load every task of a benchmark file, detecting its format.

    Args:
        path: BigCodeBench, HumanEval, HumanEval+, MBPP+ or prefjudge task JSONL
            (optionally gzipped).

    Returns:
        Tasks by ``task_id``, in file order.

    Raises:
        InputError: With every problem found (file, line, field): lines that are not
            JSON objects, missing or mistyped fields, duplicate task ids, no tasks.
    """
    spath = str(path)
    tasks: dict[str, Task] = {}
    first_line: dict[str, int] = {}
    issues: list[InputIssue] = []
    fmt: str | None = None
    for number, record in iter_objects(path):
        if isinstance(record, InputIssue):
            issues.append(record)
            continue
        if fmt is None:
            fmt = detect_format(record)
        task, found = _convert(spath, number, record, fmt)
        issues.extend(found)
        if task is None:
            continue
        if task.task_id in tasks:
            issues.append(
                InputIssue(
                    spath,
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
        issues.append(InputIssue(spath, 0, "", "no tasks in the file"))
    if issues:
        raise InputError(issues)
    return tasks


def imported_modules(source: str) -> set[str]:
    """Top-level modules ``source`` imports (absolute imports only; empty if unparsable)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
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
