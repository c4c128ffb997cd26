"""What both selectors share: the per-task scan order and the selection they build.

Each task gets one seeded random permutation of the taxonomy's instructions, from
``(seed, task_id)``, so a task's order does not depend on which other tasks are in the
file. A selector scans it once and keeps instructions that fit the task and do not conflict
with those already kept (the taxonomy's symmetric conflict map), until k. Kept
instructions stay in scan order: position matters for the position analysis.

Every parameter assignment goes through :meth:`Taxonomy.repair`, and each repair is
recorded. The **invalid-parameter rate** = repaired parameter assignments / all parameter
assignments, where the assignments of one kept instruction are its declared parameters
plus any unknown keys the selector gave.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prefjudge.records import AugmentedTask, InstructionRef, Task
from prefjudge.scoring.taxonomy import Taxonomy


def scan_order(seed: int, task_id: str, ids: Sequence[str]) -> list[str]:
    """The seeded random permutation of instruction ids a selector scans for one task.

    Args:
        seed: Run seed.
        task_id: The task (each task gets its own permutation).
        ids: Instruction ids in taxonomy order.

    Returns:
        A permutation of ``ids``; the same for the same seed, task and ids.
    """
    order = list(ids)
    random.Random(f"prefjudge-augment:{seed}:{task_id}").shuffle(order)
    return order


def conflicting(taxonomy: Taxonomy, instruction_id: str, kept: Iterable[str]) -> list[str]:
    """The kept ids that conflict with ``instruction_id``, in the order of ``kept``."""
    conflicts = set(taxonomy.get(instruction_id).conflicts)
    return [other for other in kept if other in conflicts]


@dataclass
class Selection:
    """One task's selection, before it becomes an :class:`AugmentedTask`.

    Attributes:
        refs: Kept instructions with repaired parameters, in scan order.
        repairs: One line per repair or drop.
        assignments: Parameter assignments made (declared parameters plus unknown keys).
        repaired: Assignments that had to be repaired.
    """

    refs: list[InstructionRef] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    assignments: int = 0
    repaired: int = 0

    def add(self, taxonomy: Taxonomy, ref: InstructionRef) -> None:
        """Validate one assignment with :meth:`Taxonomy.repair`, recording each repair."""
        spec = taxonomy.get(ref.id)
        declared = {p.name for p in spec.params}
        fixed, repairs = taxonomy.repair(ref)
        self.assignments += len(declared | set(ref.params))
        self.repaired += len(repairs)
        self.repairs += [f"{ref.id}.{r.field}: {r.message} -> {r.action}" for r in repairs]
        self.refs.append(fixed)


def augmented_task(
    task: Task, selection: Selection, selector: str, seed: int, order: Sequence[str], k: int
) -> AugmentedTask:
    """The task with its selection attached (``metadata["augment"]`` keeps k, order, counts).

    Args:
        task: The task.
        selection: Its selection.
        selector: ``rule`` or ``llm:<model>``.
        seed: Permutation seed.
        order: The permutation that was scanned.
        k: Instructions asked for.

    Returns:
        The augmented task (any instructions the task had are replaced).
    """
    data = task.model_dump()
    data.pop("instructions", None)
    metadata = dict(data.pop("metadata", {}) or {})
    metadata["augment"] = {
        "k": k,
        "scan_order": list(order),
        "param_assignments": selection.assignments,
        "param_repaired": selection.repaired,
    }
    return AugmentedTask(
        **data,
        metadata=metadata,
        instructions=selection.refs,
        selector=selector,
        selector_seed=seed,
        param_repairs=selection.repairs,
    )
