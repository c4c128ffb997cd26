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

What an output holds is read once per count, as its journal resumes it
(:func:`output_held`, :mod:`prefjudge.experiment.resume`), and the failed records among them are
those the stage itself makes again with ``retry_errors``: the plan, the run's progress and
its failures table all count through here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prefjudge.experiment.plan import Stage
from prefjudge.experiment.resume import journal_records, verdict_failed
from prefjudge.persona.run import rejected_path
from prefjudge.records import generation_failed
from prefjudge.reporting import StageError


@dataclass(frozen=True)
class Left:
    """The model requests of a stage: left to make, already made, and failed.

    Attributes:
        requests: Requests a run still makes (with ``retry_errors``, the failed ones too).
        done: Requests whose records are already in the output (failed ones apart).
        failed: Requests whose records are in the output as errors (a failed generation,
            a verdict in error), and those of pairs waiting on a failed generation: a plain
            run keeps them, ``run --retry-errors`` makes them again.
    """

    requests: int
    done: int
    failed: int = 0


def requests_left(stage: Stage, *, retry_errors: bool = False) -> Left:
    """The model requests ``stage`` still makes, from the records in its output.

    Args:
        stage: A stage of the plan.
        retry_errors: Count the failed records as left (``run --retry-errors``).

    Returns:
        The requests left, done and failed (all 0 for a stage that asks no model).
    """
    if not stage.requests or not stage.records:
        return Left(0, 0)
    held = output_held(stage)
    missing = min(max(_missing(stage, held.records), 0), stage.records)
    # pairs waiting on a failed generation are not judged until it is made again
    waiting = min(waiting_pairs(stage), missing)
    missing -= waiting
    failed = min(held.failed + waiting, stage.records - missing)
    left = math.ceil(stage.requests * missing / stage.records)
    failed_requests = math.ceil(stage.requests * failed / stage.records) if failed else 0
    failed_requests = min(failed_requests, stage.requests - left)
    done = stage.requests - left - failed_requests
    if retry_errors:
        return Left(left + failed_requests, done, 0)
    return Left(left, done, failed_requests)


@dataclass(frozen=True)
class Resumable:
    """What a stage's outputs hold now, as its journal resumes them.

    Attributes:
        records: The records a rerun keeps (made again: none of them).
        failed: Those of them that are failed model requests (``--retry-errors`` makes
            them again).
    """

    records: int
    failed: int


def output_held(stage: Stage) -> Resumable:
    """The records of a stage's output(s) and the failed ones among them: one read each.

    The records are those a journal resumes from
    (:func:`~prefjudge.experiment.resume.journal_records`); a failed one
    is a generation whose model call failed (:func:`prefjudge.records.generation_failed`)
    or a verdict in error (:func:`~prefjudge.experiment.resume.verdict_failed`): the
    records ``generate`` and ``judge`` discard and make again with ``retry_errors``.
    Other stages hold no failed request.

    Args:
        stage: A stage of the plan.

    Returns:
        The counts (0 for an output that is not there).
    """
    if stage.kind == "generate":
        return _held([stage.output], generation_failed)
    if stage.kind == "judge":
        return _held([stage.output], verdict_failed)
    if stage.kind == "judge-rounds" and stage.rounds is not None:
        return _held([pair.output for pair in stage.rounds.pairs], verdict_failed)
    return Resumable(_lines(stage.output), 0)


def failed_records(stage: Stage) -> int:
    """Records of the stage's output that are failed model requests (0 for other stages).

    A generation whose model call failed (:func:`prefjudge.records.generation_failed`) or
    a verdict with status ``error``: what ``--retry-errors`` makes again
    (:func:`output_held`).

    Args:
        stage: A stage of the plan.

    Returns:
        How many there are now.
    """
    if stage.kind not in ("generate", "judge", "judge-rounds"):
        return 0
    return output_held(stage).failed


def waiting_pairs(stage: Stage) -> int:
    """Pairs of a ``judge`` stage not judged because a side's generation failed.

    The join's own rule (:func:`prefjudge.judge.pairs.join.join_generations`), on the two
    generation files as they are now (0 before they exist, and for other stages).

    Args:
        stage: A stage of the plan.

    Returns:
        How many of its pairs wait for a failed generation to be made again.
    """
    if stage.kind != "judge" or len(stage.settings.inputs) != 2:
        return 0
    from prefjudge.judge.pairs.join import join_generations
    from prefjudge.scoring.formats import read_generations

    paths = [Path(path) for path in stage.settings.inputs]
    if not all(path.exists() for path in paths):
        return 0
    sides = [(path, read_generations(path)[0]) for path in paths]
    return len(join_generations(*sides).waiting)


def _held(paths: list[Path], failed: Callable[[dict[str, Any]], bool]) -> Resumable:
    records = failures = 0
    for path in paths:
        for record in journal_records(path):
            records += 1
            failures += bool(failed(record))
    return Resumable(records, failures)


def _missing(stage: Stage, held: int) -> int:
    """Records the stage's output still lacks, given the records it holds."""
    if stage.kind == "generate":
        found = _generations_missing(stage)
        if found is not None:
            return found
    if stage.kind == "judge-rounds" and stage.rounds is not None:
        return stage.rounds.budget - max(held, stage.rounds.seeded)
    if stage.kind == "persona-rewrite":
        return stage.records - held - _lines(rejected_path(stage.output))
    if stage.kind == "persona-compare":  # two comparisons per task whose rewrite is kept
        rejected = sum(_lines(rejected_path(tasks)) for tasks in stage.settings.tasks)
        return stage.records - 2 * rejected - held
    return stage.records - held


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
        done = {r["id"]: r for r in journal_records(settings.output) if "id" in r}
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


__all__ = ["Left", "Resumable", "failed_records", "output_held", "requests_left",
           "waiting_pairs"]
