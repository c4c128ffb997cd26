"""Which kinds of evidence the pairs can have, known before anything runs.

``correctness`` and ``efficiency`` run the task's tests, so a pair can have them only when
its task is among the ``--tests`` tasks with tests prefjudge can run; ``instructions``
needs the instructions the pair carries; ``security`` reads the code alone. A kind a
pair's criterion names but the pair cannot have is passed over (``insufficient``), and a
pair that can have none of its kinds is a tie that nothing decided (``evidence:none``).

:func:`check_coverage` says so before judging: when a kind that needs tests can be had
by no pair at all, or no pair can have any of its kinds, judging would only count ties
(numbers that mean nothing), so it refuses unless told to go on (``--allow-undecided``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prefjudge.judge.common import JudgeSettings
from prefjudge.judge.facts.correctness import runnable_task
from prefjudge.judge.facts.judge import CriterionError, pair_kinds
from prefjudge.records import Pair
from prefjudge.reporting import Reporter, StageError

TEST_KINDS = ("correctness", "efficiency")
"""The kinds that run the task's tests (given with ``--tests``)."""


@dataclass
class KindCoverage:
    """How many pairs name a kind of evidence, and which of them cannot have it.

    Attributes:
        kind: The kind.
        named: Pairs whose criterion names the kind.
        missing: Task ids of the pairs among them that cannot have it, in pair order.
    """

    kind: str
    named: int = 0
    missing: list[str] = field(default_factory=list)


def can_have(kind: str, pair: Pair, settings: JudgeSettings) -> bool:
    """Whether ``pair`` can have a fact of ``kind`` (see the module docstring).

    Args:
        kind: An evidence kind.
        pair: The pair.
        settings: The judge settings (their ``tests``).

    Returns:
        True when the fact can be had.
    """
    if kind in TEST_KINDS:
        return runnable_task(pair, settings.tests) is not None
    if kind == "instructions":
        return bool(pair.instructions)
    return True


def coverage(pairs: Sequence[Pair], settings: JudgeSettings) -> tuple[dict[str, KindCoverage], int]:
    """Per kind the pairs' criteria name, which pairs cannot have it; and the undecidable.

    Args:
        pairs: The pairs to judge.
        settings: The judge settings (criterion and tests).

    Returns:
        Kind → its coverage (in the order kinds are first named), and how many pairs can
        have none of their kinds.

    Raises:
        StageError: When a pair's own criterion names an unknown kind.
    """
    kinds: dict[str, KindCoverage] = {}
    undecidable = 0
    for pair in pairs:
        try:
            named = pair_kinds(pair, settings)
        except CriterionError as exc:
            raise StageError(
                f"pair {pair.pair_id!r} ({pair.source or 'its source'}): {exc}; name what "
                "decides every pair with --criterion"
            ) from None
        had = False
        for kind in named:
            found = kinds.setdefault(kind, KindCoverage(kind))
            found.named += 1
            if can_have(kind, pair, settings):
                had = True
            else:
                found.missing.append(pair.task_id)
        undecidable += not had
    return kinds, undecidable


def _examples(task_ids: Sequence[str]) -> str:
    shown = list(dict.fromkeys(task_ids))
    listed = ", ".join(repr(t) for t in shown[:3])
    return listed + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def _why(found: KindCoverage, settings: JudgeSettings) -> str:
    """Why a kind cannot be had, and what to add."""
    if found.kind in TEST_KINDS:
        if not settings.tests:
            return (
                f"{found.kind} (named by {found.named} pair(s)) runs the tasks' tests and no "
                "--tests was given"
            )
        return (
            f"{found.kind} runs the tasks' tests and {len(found.missing)} of {found.named} "
            f"pair(s) have a task with no runnable tests in --tests (task ids "
            f"{_examples(found.missing)})"
        )
    if found.kind == "instructions":
        return f"instructions: {len(found.missing)} of {found.named} pair(s) carry none to check"
    return f"{found.kind}: {len(found.missing)} of {found.named} pair(s) cannot have it"


def check_coverage(
    pairs: Sequence[Pair],
    settings: JudgeSettings,
    reporter: Reporter,
    *,
    allow_undecided: bool,
) -> None:
    """Refuse (or warn) when the evidence cannot decide the pairs, before judging them.

    Only for the methods that weigh evidence (``evidence``, ``hybrid``). It refuses when a
    kind that runs tests (``correctness``, ``efficiency``) can be had by none of the pairs
    that name it, or when no pair can have any of its kinds; with ``allow_undecided`` it
    warns instead, with the count of pairs the evidence leaves undecided. A kind some
    pairs cannot have is a warning.

    Args:
        pairs: The pairs to judge.
        settings: The judge settings.
        reporter: Where the warnings go.
        allow_undecided: Go on when the evidence cannot decide (``--allow-undecided``).

    Raises:
        StageError: When the evidence cannot decide and ``allow_undecided`` is False; the
            message names what to add (``--tests``) and ``--allow-undecided``.
    """
    if settings.method not in ("evidence", "hybrid") or not pairs:
        return
    kinds, undecidable = coverage(pairs, settings)
    blocked = [k for k in kinds.values() if k.kind in TEST_KINDS and len(k.missing) == k.named]
    if not blocked and undecidable == len(pairs):
        blocked = [k for k in kinds.values() if k.missing]
    if blocked:
        reasons = "; ".join(_why(k, settings) for k in blocked)
        then = (
            "the evidence leaves them to the fallback model (--fallback)"
            if settings.method == "hybrid"
            else "their verdicts are ties that nothing decided, counted half right in "
            "accuracy and wrong in strict accuracy"
        )
        if not allow_undecided:
            if any(k.kind in TEST_KINDS for k in blocked):
                add = (
                    "Add --tests with the tasks' benchmark (a task file, folder or hub "
                    "dataset, e.g. --tests humanevalplus)"
                )
            else:
                add = "Name kinds the pairs can have with --criterion"
            raise StageError(
                f"--method {settings.method} cannot decide these {len(pairs)} pair(s) from "
                f"evidence: {reasons}. {add}, or pass --allow-undecided to judge them anyway "
                f"({then})."
            )
        reporter.warn(
            f"warning: judging anyway (--allow-undecided): {reasons}; {undecidable} of "
            f"{len(pairs)} pair(s) have no evidence that can decide them ({then})"
        )
        return
    for found in kinds.values():
        if found.kind in TEST_KINDS and found.missing:
            reporter.warn(f"warning: {_why(found, settings)}: it cannot decide them")
