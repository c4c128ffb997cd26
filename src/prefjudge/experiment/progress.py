"""What is left of a stage: the model requests a run would still make.

Every stage resumes through its journal: a record already in its output is never made
again (a generation by its id, a verdict by its pair, a rewrite by its task). So what a
run still asks is the stage's requests for the records its output lacks. ``run`` and
``run --dry-run`` both count it here (:func:`requests_left`), from the files a rerun would
resume: a finished experiment plans 0 requests, a fresh one all of them, and a run killed
part way what it has left.

A stage's :attr:`~prefjudge.experiment.plan.Stage.requests` are for its
:attr:`~prefjudge.experiment.plan.Stage.records` records; the requests left are that
share of the records missing. Generations are counted by the planner ``generate`` itself
resumes with (:class:`prefjudge.testbed.protocols.ProtocolRunner`), once the augmented
tasks are there: a task with fewer instructions than a k makes no record for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from prefjudge.experiment.plan import Stage
from prefjudge.io import read_existing
from prefjudge.persona.run import rejected_path
from prefjudge.reporting import StageError


@dataclass(frozen=True)
class Left:
    """The model requests of a stage: left to make, and already made (by earlier runs).

    Attributes:
        requests: Requests a run still makes.
        done: Requests whose records are already in the output.
    """

    requests: int
    done: int


def requests_left(stage: Stage) -> Left:
    """The model requests ``stage`` still makes, from the records in its output.

    Args:
        stage: A stage of the plan.

    Returns:
        The requests left and done (both 0 for a stage that asks no model).
    """
    if not stage.requests or not stage.records:
        return Left(0, 0)
    missing = min(max(_missing(stage), 0), stage.records)
    left = math.ceil(stage.requests * missing / stage.records)
    return Left(left, stage.requests - left)


def _missing(stage: Stage) -> int:
    """Records the stage's output still lacks."""
    if stage.kind == "generate":
        found = _generations_missing(stage)
        if found is not None:
            return found
    if stage.kind == "judge-rounds" and stage.rounds is not None:
        spent = sum(_lines(pair.output) for pair in stage.rounds.pairs)
        return stage.rounds.budget - max(spent, stage.rounds.seeded)
    if stage.kind == "persona-rewrite":
        return stage.records - _lines(stage.output) - _lines(rejected_path(stage.output))
    if stage.kind == "persona-compare":  # two comparisons per task whose rewrite is kept
        rejected = sum(_lines(rejected_path(tasks)) for tasks in stage.settings.tasks)
        return stage.records - 2 * rejected - _lines(stage.output)
    return stage.records - _lines(stage.output)


def _generations_missing(stage: Stage) -> int | None:
    """Generations the stage still writes, as ``generate`` plans them; None before augment.

    The tasks in the task file are planned by ``generate``'s own planner (resuming from
    the output); tasks not in it yet count in full, but for rewrites already rejected
    (the persona stages: a rejected task is never generated).
    """
    from prefjudge.testbed.generation import read_augmented
    from prefjudge.testbed.protocols import ProtocolRunner

    settings = stage.settings
    if not settings.augmented.exists():
        return None
    try:
        tasks = read_augmented(settings.augmented, settings.ks)
        done = {r["id"]: r for r in read_existing(settings.output) if "id" in r}
        plan = ProtocolRunner(
            None,
            tasks,
            protocols=settings.protocols,  # type: ignore[arg-type]
            ks=settings.ks,
            samples=settings.samples,
            done=done,
            model_name=settings.model_name or stage.label,
            framing=settings.framing,
            system_prompt=settings.system_prompt,
        )
    except (StageError, ValidationError, ValueError, KeyError, TypeError, RecursionError, OSError):
        return None  # the stage itself says what is wrong with its files (when it runs)
    per_task = len(set(settings.protocols)) * len(set(settings.ks)) * settings.samples
    pending = stage.records // per_task - len(tasks) - _lines(rejected_path(settings.augmented))
    return plan.total_generations + max(pending, 0) * per_task


def _lines(path: Path) -> int:
    """Records in a JSONL output: its complete non-blank lines (0 when it is not there)."""
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.endswith(b"\n") and line.strip())
    except OSError:  # not there yet (or unreadable: the stage says so when it runs)
        return 0


__all__ = ["Left", "requests_left"]
