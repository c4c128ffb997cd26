"""EvalPlus and BigCodeBench sample files: ``task_id`` with ``solution`` or ``completion``.

- ``evalplus`` (``evalplus.codegen`` / ``evalplus.sanitize``): ``solution`` (the full
  code) or ``completion`` (a continuation of the task's prompt: the code scored is the
  task's prompt + the completion when tasks are given, else the completion alone);
  ``solution`` wins when a line has both, as in EvalPlus;
- ``bigcodebench`` (``bigcodebench.generate`` / ``sanitize``; a ``raw_solution`` field or
  a ``BigCodeBench/`` task id): the raw response is scored when the line has one, else
  ``solution`` (or ``complete_prompt`` + ``completion``).

A ``solution`` or ``completion`` is code as a whole, never Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefjudge.io import text_field
from prefjudge.records import Task
from prefjudge.scoring.sample_formats.registry import (
    SampleFormat,
    SampleParts,
    register_sample_format,
)

EXPECTED = "EvalPlus or BigCodeBench samples ('task_id' with 'solution' or 'completion')"
MISSING = ("solution", "'solution' or 'completion'")


def _task_prompt(task: Task) -> str:
    """The prompt a completion continues: what EvalPlus / BigCodeBench concatenate."""
    for key in ("complete_prompt", "raw_prompt"):  # BigCodeBench; MBPP+ (EvalPlus release)
        value = task.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return task.prompt


def code_sample(
    data: Mapping[str, Any], task_id: str, tasks: Mapping[str, Task] | None
) -> SampleParts:
    """A ``solution``, or the task's prompt + a ``completion`` (alone without the task)."""
    if "solution" in data:
        return SampleParts(text_field(data, "solution"), is_code=True)
    completion = text_field(data, "completion")
    task = (tasks or {}).get(task_id)
    if task is None:
        return SampleParts(completion, is_code=True, bare=1)
    return SampleParts(_task_prompt(task) + completion, is_code=True)


def bigcodebench_sample(
    data: Mapping[str, Any], task_id: str, tasks: Mapping[str, Task] | None
) -> SampleParts:
    """A ``raw_solution`` (the model's Markdown reply) when there is one, else the code."""
    if data.get("raw_solution") is not None:
        return SampleParts(text_field(data, "raw_solution"))
    return code_sample(data, task_id, tasks)


def _detect_evalplus(record: Mapping[str, Any]) -> str | None:
    if not record.keys() & {"solution", "completion"}:
        return None
    return "solution" if "solution" in record else "completion"


def _detect_bigcodebench(record: Mapping[str, Any]) -> str | None:
    if not record.keys() & {"solution", "completion"}:
        return None
    if "raw_solution" in record:
        return "raw_solution"
    task_id = record.get("task_id")
    if isinstance(task_id, str) and task_id.startswith("BigCodeBench/"):
        return "task_id"
    return None


EVALPLUS = register_sample_format(
    SampleFormat(
        name="evalplus",
        description="EvalPlus samples ('task_id' with 'solution' or 'completion')",
        expected=EXPECTED,
        detect=_detect_evalplus,
        convert=code_sample,
        order=50,
        marks=("solution", "completion"),
        missing=MISSING,
    )
)

BIGCODEBENCH = register_sample_format(
    SampleFormat(
        name="bigcodebench",
        description="BigCodeBench samples ('task_id' with 'solution', 'raw_solution' or "
        "'completion')",
        expected=EXPECTED,
        detect=_detect_bigcodebench,
        convert=bigcodebench_sample,
        order=40,
        marks=("solution", "completion"),
        missing=MISSING,
    )
)
