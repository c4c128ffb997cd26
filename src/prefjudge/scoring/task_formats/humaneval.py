"""HumanEval and the EvalPlus releases (HumanEval+, MBPP+), from files or the hub.

- ``humaneval`` (``prompt``, ``canonical_solution``, ``test``, ``entry_point``):
  ``check(candidate)`` tests, reference ``prompt + canonical_solution``. It also reads the
  hub rows of HumanEval+ (``evalplus/humanevalplus``), which lack the EvalPlus inputs;
- ``humanevalplus`` and ``mbppplus`` (EvalPlus release files: ``base_input``,
  ``plus_input``, ``atol``; MBPP+ also has ``assertion``): differential tests against
  the reference;
- ``mbppplus_hub`` (the hub release of MBPP+, ``evalplus/mbppplus``): no EvalPlus inputs
  and no entry point, so loaded but not runnable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefjudge.io import FieldProblem, text_field
from prefjudge.records import Task
from prefjudge.scoring.source_types import HubDataset
from prefjudge.scoring.task_formats.registry import task_format

EVALPLUS_FIELDS = (
    "task_id",
    "prompt",
    "entry_point",
    "canonical_solution",
    "base_input",
    "plus_input",
)
HUMANEVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")

HUMANEVAL_HUB = (
    HubDataset("openai/openai_humaneval", "tasks", ("humaneval",), split="test", note="HumanEval"),
    HubDataset(
        "evalplus/humanevalplus",
        "tasks",
        ("humanevalplus", "humaneval+"),
        split="test",
        note="HumanEval+ without the EvalPlus inputs (check() tests)",
    ),
)
MBPPPLUS_HUB = HubDataset(
    "evalplus/mbppplus",
    "tasks",
    ("mbppplus", "mbpp+"),
    split="test",
    note="MBPP+ without the EvalPlus inputs (not runnable)",
)


def _is_humaneval(record: Mapping[str, Any]) -> bool:
    return {"prompt", "canonical_solution", "test", "entry_point"} <= record.keys()


@task_format(
    name="humaneval",
    title="HumanEval",
    detect=_is_humaneval,
    order=40,
    hub=HUMANEVAL_HUB,
    test_formats=("humaneval",),
)
def humaneval_task(record: dict[str, Any]) -> Task:
    """A HumanEval record to a Task (``check(candidate)`` tests)."""
    fields = {name: text_field(record, name) for name in HUMANEVAL_FIELDS}
    return Task(
        task_id=fields["task_id"],
        prompt=fields["prompt"],
        entry_point=fields["entry_point"],
        test_format="humaneval",
        tests=fields["test"],
        canonical_solution=fields["prompt"] + fields["canonical_solution"],
        source="humaneval",
    )


def _inputs(record: dict[str, Any], field: str) -> list[Any]:
    value = record.get(field)
    if value is None or value == {}:
        return []  # MBPP+ has one task whose plus_input is an empty object
    if not isinstance(value, list) or not all(isinstance(item, list) for item in value):
        raise FieldProblem(field, "expected a list of argument lists")
    return value


def _mbpp_prompt_text(raw: str) -> str:
    text = raw.strip()
    if text.startswith('"""') and text.endswith('"""') and len(text) >= 6:
        text = text[3:-3]
    return text.strip()


def evalplus_task(record: dict[str, Any], dataset: str) -> Task:
    """An EvalPlus release record (``dataset``: ``humaneval`` or ``mbpp``) to a Task."""
    fields = {name: text_field(record, name) for name in EVALPLUS_FIELDS[:4]}
    atol = record.get("atol", 0)
    if isinstance(atol, bool) or not isinstance(atol, (int, float)):
        raise FieldProblem("atol", "expected a number")
    metadata: dict[str, Any] = {"evalplus_dataset": dataset}
    if isinstance(record.get("contract"), str):
        metadata["contract"] = record["contract"]
    prompt = fields["prompt"]
    if dataset == "mbpp":
        metadata["raw_prompt"] = prompt
        metadata["assertion"] = text_field(record, "assertion")
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


def _is_evalplus(record: Mapping[str, Any], mbpp: bool) -> bool:
    return {"base_input", "plus_input"} <= record.keys() and ("assertion" in record) == mbpp


@task_format(
    name="humanevalplus",
    title="HumanEval+",
    detect=lambda record: _is_evalplus(record, mbpp=False),
    order=30,
    test_formats=("evalplus",),
)
def humanevalplus_task(record: dict[str, Any]) -> Task:
    """A HumanEval+ record of the EvalPlus release to a Task."""
    return evalplus_task(record, "humaneval")


@task_format(
    name="mbppplus",
    title="MBPP+",
    detect=lambda record: _is_evalplus(record, mbpp=True),
    order=30,
    test_formats=("evalplus",),
)
def mbppplus_task(record: dict[str, Any]) -> Task:
    """An MBPP+ record of the EvalPlus release to a Task."""
    return evalplus_task(record, "mbpp")


def _is_mbppplus_hub(record: Mapping[str, Any]) -> bool:
    return {"task_id", "prompt", "code", "test_list", "test"} <= record.keys()


@task_format(
    name="mbppplus_hub",
    title="MBPP+",
    detect=_is_mbppplus_hub,
    order=50,
    hub=(MBPPPLUS_HUB,),
    test_formats=("none",),
)
def mbppplus_hub_task(record: dict[str, Any]) -> Task:
    """The hub release of MBPP+ (``evalplus/mbppplus``): no EvalPlus inputs, no entry point.

    Its ``test`` is a script that calls the function by name, which no sandbox adapter
    runs, so the task gets ``test_format "none"`` with the reason in ``metadata``; use the
    EvalPlus release file (``MbppPlus-v0.2.0.jsonl.gz``) to score MBPP+ functionally.
    """
    fields = {name: text_field(record, name) for name in ("prompt", "code", "test")}
    raw_id = record.get("task_id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
        raise FieldProblem("task_id", "expected a string or an integer")
    task_id = str(raw_id)
    if not task_id.startswith("Mbpp/"):
        task_id = f"Mbpp/{task_id}"
    return Task(
        task_id=task_id,
        prompt=fields["prompt"],
        test_format="none",
        tests=fields["test"],
        canonical_solution=fields["code"],
        source="mbppplus",
        metadata={
            "evalplus_dataset": "mbpp",
            "not_runnable": "hub release of MBPP+ lacks base/plus inputs and the entry "
            "point; load MbppPlus-v0.2.0.jsonl.gz (EvalPlus release) to run its tests",
        },
    )
