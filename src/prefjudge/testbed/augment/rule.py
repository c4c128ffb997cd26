"""The rule selector: instructions and parameters chosen by deterministic rules, no model.

It scans the task's permutation (:func:`~.selection.scan_order`) and keeps an instruction
when the instruction's ``applies_when`` predicates in the taxonomy hold for the task's
facts (:func:`~.facts.task_facts`; the predicates are
:data:`prefjudge.scoring.applicability.PREDICATES`) and it does not conflict with those
already kept, until k.

Parameters, "achievable and challenging" from the reference:

- "at most N" limits (``max_branches``, ``max_statements``, ``max_locals``,
  ``max_complexity``, ``max_nested_blocks``, ``max_bool_expr``): with ``r`` the
  reference's largest value over its functions (measured on the AST, approximating
  Ruff's counting), ``N = min(r - 1, floor(0.8 r))`` clamped to the parameter's range:
  at least one and at least 20 % tighter than the reference (so the reference itself
  does not pass), yet reachable by extracting helpers; never below the parameter's
  minimum. Without reference code: the parameter's first recommended value.
- ``line_length`` of style_3: 79 when every reference line fits in 79, else 88
  (recommended values).
- ``line_length`` of doc_2 (the docstring and comment limit): 72 (PEP 8's).
- ``convention``: ``numpy`` when the reference docstring has numpy section underlines,
  ``google`` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from prefjudge.records import AugmentedTask, InstructionRef, InstructionSpec, Task
from prefjudge.scoring.applicability import TaskFacts, applies
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.testbed.augment.facts import LIMIT_PARAMS, task_facts
from prefjudge.testbed.augment.selection import (
    Selection,
    augmented_task,
    conflicting,
    scan_order,
)


def applicable(instruction_id: str, facts: TaskFacts, taxonomy: Taxonomy | None = None) -> bool:
    """Whether an instruction's ``applies_when`` predicates hold for a task.

    Args:
        instruction_id: A taxonomy id.
        facts: The task's facts.
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        True when any of the instruction's predicates holds.

    Raises:
        UnknownInstructionError: When the taxonomy has no such instruction.
    """
    taxonomy = taxonomy or load_taxonomy()
    return applies(taxonomy.applies_when(instruction_id), facts)


def tightened_limit(reference: int, low: int, high: int) -> int:
    """An "at most N" value tighter than the reference's ``reference`` but achievable.

    Args:
        reference: The reference solution's value.
        low: Smallest allowed parameter value.
        high: Largest allowed parameter value.

    Returns:
        ``min(reference - 1, floor(0.8 * reference))`` clamped to ``[low, high]``.
    """
    return max(low, min(high, min(reference - 1, math.floor(0.8 * reference))))


def rule_params(spec: InstructionSpec, facts: TaskFacts) -> dict[str, Any]:
    """Parameter values for one instruction, chosen by the documented rules.

    Args:
        spec: The instruction.
        facts: The task's facts.

    Returns:
        A value for every parameter of the instruction.
    """
    params: dict[str, Any] = {}
    for param in spec.params:
        metric = LIMIT_PARAMS.get(param.name)
        if metric is not None and param.min is not None and param.max is not None:
            if facts.has_code:
                value: Any = tightened_limit(facts.metrics.get(metric, 0), param.min, param.max)
            else:
                value = param.recommended[0] if param.recommended else param.default
        elif spec.id == "doc_2":  # its line_length is the docstring/comment limit
            value = 72
        elif param.name == "line_length":
            value = 79 if facts.longest_line <= 79 else 88
        elif param.name == "convention":
            value = "numpy" if facts.numpy_docstring else "google"
        else:
            value = param.recommended[0] if param.recommended else param.default
        params[param.name] = value
    return params


def rule_scan(
    task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy, kept: Sequence[str] = ()
) -> list[str]:
    """Scan ``order`` once, keeping applicable, non-conflicting ids until k are kept.

    Args:
        task: The task.
        order: The permutation to scan.
        k: How many to keep in all.
        taxonomy: The taxonomy (applicability and conflicts).
        kept: Ids already kept (they count towards k and for conflicts).

    Returns:
        The newly kept ids, in scan order.
    """
    facts = task_facts(task)
    chosen = list(kept)
    new: list[str] = []
    for instruction_id in order:
        if len(chosen) >= k:
            break
        if instruction_id in chosen or conflicting(taxonomy, instruction_id, chosen):
            continue
        if applicable(instruction_id, facts, taxonomy):
            chosen.append(instruction_id)
            new.append(instruction_id)
    return new


def select_rule(
    task: Task, k: int = 5, seed: int = 0, taxonomy: Taxonomy | None = None
) -> AugmentedTask:
    """Choose k instructions and their parameters for a task by deterministic rules.

    Args:
        task: The task.
        k: Instructions to choose (fewer when fewer apply).
        seed: Permutation seed.
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        The augmented task (``selector="rule"``).
    """
    taxonomy = taxonomy or load_taxonomy()
    order = scan_order(seed, task.task_id, taxonomy.ids)
    facts = task_facts(task)
    selection = Selection()
    for instruction_id in rule_scan(task, order, k, taxonomy):
        spec = taxonomy.get(instruction_id)
        selection.add(taxonomy, InstructionRef(id=instruction_id, params=rule_params(spec, facts)))
    return augmented_task(task, selection, "rule", seed, order, k)
