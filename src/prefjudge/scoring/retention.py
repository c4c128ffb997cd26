"""Multi-turn retention: instructions satisfied when introduced, still satisfied later."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from prefjudge.records import ScoredSample
from prefjudge.scoring.rows import protocol_of
from prefjudge.scoring.task_ci import mean_with_ci
from prefjudge.scoring.task_ci import task_means as _task_means
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED


def turns_frame(records: Iterable[ScoredSample | dict[str, Any]]) -> pd.DataFrame:
    """One row per instruction check at each turn of multi-turn samples.

    ``turn_results[t]`` holds the checks of turn t+1's response against the instructions
    introduced up to that turn, in order; an instruction's introduction turn is the first
    turn that checks it. Records without ``turn_results`` are skipped.

    Args:
        records: Scored samples.

    Returns:
        Columns: model, protocol, task_id, sample (record index), instruction, position
        (1-based), intro_turn, turn (1-based), since (turn - intro_turn), last_turn,
        status.
    """
    rows = []
    for index, record in enumerate(records):
        rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
        if not rec.turn_results:
            continue
        intro: dict[int, int] = {}
        last = len(rec.turn_results)
        for turn, results in enumerate(rec.turn_results, start=1):
            for position, result in enumerate(results, start=1):
                intro.setdefault(position, turn)
                rows.append({"model": rec.model, "protocol": protocol_of(rec),
                             "task_id": rec.task_id, "sample": index, "instruction": result.id,
                             "position": position, "intro_turn": intro[position],
                             "turn": turn, "since": turn - intro[position], "last_turn": last,
                             "status": result.status})
    return pd.DataFrame(rows, columns=["model", "protocol", "task_id", "sample", "instruction",
                                       "position", "intro_turn", "turn", "since", "last_turn",
                                       "status"])


def _retention_rows(turns: pd.DataFrame) -> pd.DataFrame:
    """Later-turn rows of instructions satisfied at their introduction (errors left out)."""
    at_intro = turns[turns["since"] == 0]
    kept = at_intro[at_intro["status"] == "pass"][["sample", "position"]]
    later = turns[(turns["since"] > 0) & (turns["status"] != "error")]
    later = later.merge(kept, on=["sample", "position"], how="inner")
    return later.assign(retained=(later["status"] == "pass").astype(float))


def retention_curve(
    turns: pd.DataFrame, *, key: str = "turn", n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Share of instructions, satisfied when introduced, still satisfied at a later turn.

    Args:
        turns: Output of :func:`turns_frame`.
        key: ``turn`` (the turn of the response) or ``since`` (turns since introduction).
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, protocol, <key>, value, lower, upper, n_tasks, n (instruction
        checks counted).
    """
    later = _retention_rows(turns)
    rows = []
    for (model, protocol, value), group in later.groupby(["model", "protocol", key], sort=True):
        stats = mean_with_ci(_task_means(group, "retained"), n_resamples=n_resamples, seed=seed)
        rows.append({"model": model, "protocol": protocol, key: int(value), **stats,
                     "n": len(group)})
    return pd.DataFrame(rows, columns=["model", "protocol", key, "value", "lower", "upper",
                                       "n_tasks", "n"])


def final_retention(
    turns: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """Retention at the final turn (the response that is scored), per model and protocol.

    Counts every instruction introduced before the final turn and satisfied at its
    introduction; ``ever_broken`` is the share of those that fail at some later turn
    (even if restored by the end).

    Args:
        turns: Output of :func:`turns_frame`.
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, protocol, value (final retention), lower, upper, n_tasks, n,
        ever_broken.
    """
    later = _retention_rows(turns)
    broken = (later.assign(broken=1.0 - later["retained"])
              .groupby(["sample", "position"])["broken"].max())
    final = later[later["turn"] == later["last_turn"]]
    rows = []
    for (model, protocol), group in final.groupby(["model", "protocol"], sort=True):
        stats = mean_with_ci(_task_means(group, "retained"), n_resamples=n_resamples, seed=seed)
        ever = broken.loc[list(zip(group["sample"], group["position"], strict=True))]
        rows.append({"model": model, "protocol": protocol, **stats, "n": len(group),
                     "ever_broken": float(ever.mean())})
    return pd.DataFrame(rows, columns=["model", "protocol", "value", "lower", "upper",
                                       "n_tasks", "n", "ever_broken"])
