"""``[judge] strategy = "suggest"``: spend the judging budget in rounds on the pairs worth it.

Round 0 is the ordinary judge stages with ``--limit seed_judgments`` (every model pair
compared a little). Each later round reads the verdicts so far, fits Bradley–Terry, asks
:func:`prefjudge.ranking.suggest.plan_round` how to spend the round's judgments over the
model pairs, and for each chosen pair judges it again with a higher ``limit``
(:func:`prefjudge.judge.run.judge_file`): the judge resumes, so only the new pairs are
judged.

Nothing is remembered between runs but the verdict files: a round's target is a number
of judgments in all (round 0 included), and a rerun compares it with the verdicts on
disk, so a killed run resumes inside the round it was in and a finished run judges
nothing. Which pairs of a model pair are judged is the judge's order (``--limit`` takes
the first N); the rounds choose how many per model pair. The verdicts on disk are read
as the judge's journal resumes them (:func:`prefjudge.experiment.resume.journal_records`,
the count the plan's progress makes too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from prefjudge.experiment.plan import JudgePair, JudgeRounds
from prefjudge.experiment.resume import journal_records
from prefjudge.ranking.suggest import belief_from_counts, counts_from_battles, plan_round
from prefjudge.records import battle_of
from prefjudge.reporting import Reporter


def _key(pair: JudgePair) -> tuple[str, str]:
    return (pair.model_a, pair.model_b) if pair.model_a < pair.model_b else (
        pair.model_b, pair.model_a)


def verdict_battles(verdicts: dict[JudgePair, list[dict[str, Any]]]) -> pd.DataFrame:
    """The battles of the verdicts: :func:`prefjudge.records.battle_of` of each.

    An error and a verdict decided by no evidence are not battles (as in ``rank``); they
    still count as judgments spent.

    Args:
        verdicts: Each model pair's verdict records, as read from its file.

    Returns:
        Columns ``model_a, model_b, winner, task_id``.

    Raises:
        pydantic.ValidationError: When a record is not a valid verdict.
    """
    rows = []
    for records in verdicts.values():
        for record in records:
            battle = battle_of(record)
            if battle is not None:
                rows.append((battle.model_a, battle.model_b, battle.winner,
                             record.get("task_id")))
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "task_id"])


def judge_in_rounds(plan: JudgeRounds, judge: Callable[[JudgePair, int], None],
                    reporter: Reporter) -> list[dict[str, Any]]:
    """Run the rounds after round 0 until the budget is spent.

    Args:
        plan: The rounds (budget, model pairs and their judging settings).
        judge: Judges one model pair up to a number of judgments in all (resuming its
            verdict file), raising when it fails.
        reporter: Where progress goes.

    Returns:
        One entry per round: ``round``, ``target`` (judgments in all once done),
        ``planned`` (judgments chosen this run), ``judged`` (new verdicts) and
        ``model_pairs`` (how many were judged further).
    """
    models = sorted({p.model_a for p in plan.pairs} | {p.model_b for p in plan.pairs})
    exhausted: set[tuple[str, str]] = set()
    log: list[dict[str, Any]] = []
    for number in range(1, plan.rounds + 1):
        verdicts = {pair: journal_records(pair.output) for pair in plan.pairs}
        spent = sum(len(records) for records in verdicts.values())
        target = plan.target(number)
        entry: dict[str, Any] = {"round": number, "target": target, "planned": 0, "judged": 0,
                                 "model_pairs": 0}
        log.append(entry)
        if spent >= target:
            continue
        counts = counts_from_battles(verdict_battles(verdicts), models)
        belief = belief_from_counts(counts, ties=plan.ties, alpha=plan.alpha)
        capacity = {_key(pair): 0 if _key(pair) in exhausted
                    else plan.per_pair - len(verdicts[pair]) for pair in plan.pairs}
        chosen = plan_round(counts, belief, target - spent, ties=plan.ties,
                            capacity=capacity)
        entry["planned"] = sum(chosen.values())
        entry["model_pairs"] = len(chosen)
        reporter.note(f"round {number}/{plan.rounds}: {entry['planned']} judgments over "
                      f"{len(chosen)} model pairs (to {target} of {plan.budget} in all)")
        for pair in plan.pairs:
            more = chosen.get(_key(pair), 0)
            if not more:
                continue
            before = len(verdicts[pair])
            reporter.note(f"  {pair.model_a} vs {pair.model_b}: {before} → {before + more}")
            judge(pair, before + more)
            after = len(journal_records(pair.output))
            entry["judged"] += after - before
            if after < before + more:  # fewer pairs to judge than the plan thought
                exhausted.add(_key(pair))
    return log


__all__ = ["judge_in_rounds", "verdict_battles"]
