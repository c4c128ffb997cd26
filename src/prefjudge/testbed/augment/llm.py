"""The LLM selector: a model chooses the instructions and parameters, and its answer is repaired.

The model gets the task and its permutation (:func:`~.selection.scan_order`; every
instruction with its parameter schema and conflicts) and returns, as JSON validated by a
pydantic schema (:class:`SelectorReply`), the kept ids in scan order with parameters.
Repairs, each recorded in ``param_repairs``: unknown ids, duplicates, conflicting ids and
ids beyond k are dropped; kept ids are put back in scan order; unknown parameter keys are
removed and invalid values reverted to defaults (:meth:`Taxonomy.repair`); when fewer than
k survive, the rule selector's scan (:func:`~.rule.rule_scan`, which reads the taxonomy's
``applies_when``) fills the rest (recorded as ``filled by rule``); a failed model call falls
back to the rule selection (recorded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.backends.base import Backend, OnResult, Request, Result, Sampling, chat
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, InstructionRef, InstructionSpec, Task
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.testbed.augment.facts import task_facts
from prefjudge.testbed.augment.rule import rule_params, rule_scan, select_rule
from prefjudge.testbed.augment.selection import (
    Selection,
    augmented_task,
    conflicting,
    scan_order,
)


class ParamValue(BaseModel):
    """One parameter assignment in the selector's reply."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: int | str


class SelectedInstruction(BaseModel):
    """One kept instruction in the selector's reply."""

    model_config = ConfigDict(extra="forbid")

    id: str
    params: list[ParamValue] = Field(default_factory=list)


class SelectorReply(BaseModel):
    """The selector model's structured reply: kept instructions in scan order."""

    model_config = ConfigDict(extra="forbid")

    instructions: list[SelectedInstruction]


def _param_schema(spec: InstructionSpec) -> str:
    parts = []
    for p in spec.params:
        if p.type == "int":
            parts.append(f"{p.name}: integer {p.min}..{p.max} (default {p.default})")
        else:
            parts.append(f"{p.name}: one of {p.choices} (default {p.default!r})")
    return "; ".join(parts) or "no parameters"


def selector_prompt(task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy) -> str:
    """The selector model's prompt for one task (template ``rubrics/prompts/augment_selector.md``).

    Args:
        task: The task (prompt and, when known, reference solution).
        order: The permutation to scan.
        k: How many instructions to keep.
        taxonomy: The taxonomy.

    Returns:
        The prompt text.
    """
    template = (data_dir("rubrics") / "prompts" / "augment_selector.md").read_text("utf-8")
    lines = []
    for position, instruction_id in enumerate(order, start=1):
        spec = taxonomy.get(instruction_id)
        conflicts = f"; conflicts with {', '.join(spec.conflicts)}" if spec.conflicts else ""
        lines.append(
            f"{position}. {spec.id} ({spec.category}): {spec.description.strip()} "
            f"[parameters: {_param_schema(spec)}{conflicts}]"
        )
    text = task.prompt.strip()
    if task.canonical_solution:
        text += "\n\nReference solution:\n```python\n" + task.canonical_solution[:4000] + "\n```"
    return template.format(k=k, task=text, candidates="\n".join(lines))


def selector_request(
    task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy, sampling: Sampling | None = None
) -> Request:
    """The structured-output request the LLM selector sends for one task.

    Args:
        task: The task.
        order: The permutation to scan.
        k: How many instructions to keep.
        taxonomy: The taxonomy.
        sampling: Sampling settings (default: greedy, 512 tokens).

    Returns:
        A request whose reply must match :class:`SelectorReply`.
    """
    return chat(
        f"augment:{task.task_id}",
        selector_prompt(task, order, k, taxonomy),
        sampling=sampling or Sampling(max_tokens=512),
        schema_model=SelectorReply,
    )


def parse_selection(
    task: Task,
    reply: SelectorReply,
    order: Sequence[str],
    k: int,
    taxonomy: Taxonomy,
) -> Selection:
    """Turn a selector reply into a valid selection, recording every repair.

    Args:
        task: The task (for the rule fill when fewer than k survive).
        reply: The model's parsed reply.
        order: The permutation that was scanned.
        k: How many instructions to keep.
        taxonomy: The taxonomy.

    Returns:
        The selection: unknown, duplicate, conflicting and surplus ids dropped, the rest
        in scan order with repaired parameters, topped up to k by the rule scan.
    """
    selection = Selection()
    kept: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(reply.instructions):
        where = f"instructions[{index}] {item.id!r}"
        if item.id not in taxonomy:
            selection.repairs.append(f"{where}: unknown instruction id -> dropped")
            continue
        if any(item.id == other for other, _ in kept):
            selection.repairs.append(f"{where}: duplicate -> dropped")
            continue
        clash = conflicting(taxonomy, item.id, [other for other, _ in kept])
        if clash:
            selection.repairs.append(f"{where}: conflicts with {clash[0]} -> dropped")
            continue
        if len(kept) >= k:
            selection.repairs.append(f"{where}: beyond k={k} -> dropped")
            continue
        params: dict[str, Any] = {}
        for assignment in item.params:
            params[assignment.name] = assignment.value
        kept.append((item.id, params))
    position = {instruction_id: i for i, instruction_id in enumerate(order)}
    ordered = sorted(kept, key=lambda pair: position.get(pair[0], len(order)))
    if [i for i, _ in ordered] != [i for i, _ in kept]:
        selection.repairs.append("selection: not in scan order -> reordered")
    filled = rule_scan(task, order, k, taxonomy, kept=[i for i, _ in ordered])
    if filled:
        selection.repairs.append(
            f"selection: {len(ordered)} of {k} kept -> filled by rule: {', '.join(filled)}"
        )
    facts = task_facts(task)
    rule_refs = {i: rule_params(taxonomy.get(i), facts) for i in filled}
    merged = ordered + [(i, rule_refs[i]) for i in filled]
    merged.sort(key=lambda pair: position.get(pair[0], len(order)))
    for instruction_id, params in merged:
        selection.add(taxonomy, InstructionRef(id=instruction_id, params=params))
    return selection


def select_llm(
    tasks: Sequence[Task],
    backend: Backend,
    *,
    k: int = 5,
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
    sampling: Sampling | None = None,
    on_result: OnResult | None = None,
) -> list[AugmentedTask]:
    """Choose instructions with a selector model (one structured request per task).

    Args:
        tasks: The tasks.
        backend: A backend (its ``model_id`` names the selector).
        k: Instructions per task.
        seed: Permutation seed.
        taxonomy: The taxonomy (the bundled one by default).
        sampling: Sampling settings for the selector.
        on_result: Called once per finished request (progress).

    Returns:
        One augmented task per task, in order. A failed request falls back to the rule
        selection for that task (``selector="rule"``, the failure recorded).
    """
    taxonomy = taxonomy or load_taxonomy()
    orders = [scan_order(seed, task.task_id, taxonomy.ids) for task in tasks]
    requests = [
        selector_request(task, order, k, taxonomy, sampling)
        for task, order in zip(tasks, orders, strict=True)
    ]
    results: list[Result] = backend.generate(requests, on_result=on_result)
    out = []
    for task, order, result in zip(tasks, orders, results, strict=True):
        if result.ok and isinstance(result.parsed, SelectorReply):
            selection = parse_selection(task, result.parsed, order, k, taxonomy)
            out.append(augmented_task(task, selection, f"llm:{backend.model_id}", seed, order, k))
            continue
        fallback = select_rule(task, k, seed, taxonomy)
        fallback.param_repairs.insert(
            0, f"llm selector failed ({result.error or 'no parsed reply'}) -> rule selection"
        )
        out.append(fallback)
    return out
