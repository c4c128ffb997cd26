"""The augment run's summary: category distribution and invalid-parameter rate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from prefjudge.io import dumps_json
from prefjudge.records import AugmentedTask
from prefjudge.scoring.taxonomy import CATEGORIES, Taxonomy, load_taxonomy


def summarize(
    augmented: Iterable[AugmentedTask], taxonomy: Taxonomy | None = None
) -> dict[str, Any]:
    """Category distribution and invalid-parameter rate of augmented tasks.

    Args:
        augmented: Augmented tasks (from this run or resumed).
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        ``tasks``, ``instructions``, ``categories`` (count per category, all five),
        ``category_share``, ``by_instruction`` (count per id), ``selectors`` (count per
        selector), ``param_assignments``, ``param_repaired``, ``invalid_param_rate``
        (None when nothing was assigned) and ``short_tasks`` (ids given fewer than k).
    """
    taxonomy = taxonomy or load_taxonomy()
    categories = Counter(dict.fromkeys(CATEGORIES, 0))
    by_instruction: Counter[str] = Counter()
    selectors: Counter[str] = Counter()
    assignments = repaired = tasks = 0
    short = []
    for task in augmented:
        tasks += 1
        selectors[task.selector] += 1
        stats = task.augment_stats()
        assignments += stats.param_assignments
        repaired += stats.param_repaired
        if stats.k is not None and len(task.instructions) < stats.k:
            short.append(task.task_id)
        for ref in task.instructions:
            by_instruction[ref.id] += 1
            categories[taxonomy.get(ref.id).category] += 1
    total = sum(categories.values())
    return {
        "tasks": tasks,
        "instructions": total,
        "categories": dict(categories),
        "category_share": {c: (n / total if total else 0.0) for c, n in categories.items()},
        "by_instruction": dict(sorted(by_instruction.items())),
        "selectors": dict(selectors),
        "param_assignments": assignments,
        "param_repaired": repaired,
        "invalid_param_rate": repaired / assignments if assignments else None,
        "short_tasks": short,
    }


def dumps_summary(summary: dict[str, Any]) -> str:
    """The summary as indented JSON text."""
    return dumps_json(summary, indent=2)
