"""The BigCodeBench task format (``instruct_prompt``, ``complete_prompt``, ``libs``, ...).

The prompt is the instruction, the reference is ``complete_prompt + canonical_solution``,
the tests are ``unittest`` ``TestCases``. Hub: ``bigcode/bigcodebench``, whose splits are
versions (``v0.1.0_hf``, ``v0.1.1`` ... ``v0.1.4``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from prefjudge.io import FieldProblem, text_field
from prefjudge.records import Task
from prefjudge.scoring.source_types import HubDataset
from prefjudge.scoring.task_formats.registry import task_format

BIGCODEBENCH_FIELDS = (
    "task_id",
    "instruct_prompt",
    "complete_prompt",
    "canonical_solution",
    "test",
    "entry_point",
)

HUB = HubDataset(
    "bigcode/bigcodebench",
    "tasks",
    ("bigcodebench",),
    split="v0.1.4",
    note="BigCodeBench; splits are versions (v0.1.0_hf ... v0.1.4)",
)


def parse_libs(value: Any) -> list[str]:
    """BigCodeBench ``libs``: a list, or (in some versions) the string repr of one."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
            raise FieldProblem("libs", f"not a list literal: {value[:80]!r}") from exc
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise FieldProblem("libs", "expected a list of library names")
    return sorted(set(value))


def _is_bigcodebench(record: Mapping[str, Any]) -> bool:
    return {"instruct_prompt", "complete_prompt"} <= record.keys()


@task_format(
    name="bigcodebench",
    title="BigCodeBench",
    detect=_is_bigcodebench,
    order=20,
    hub=(HUB,),
    test_formats=("bigcodebench",),
)
def bigcodebench_task(record: dict[str, Any]) -> Task:
    """A BigCodeBench record to a Task."""
    fields = {name: text_field(record, name) for name in BIGCODEBENCH_FIELDS}
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
