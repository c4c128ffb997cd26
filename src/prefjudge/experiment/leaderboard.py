"""The merged leaderboard of an experiment: judge Elo beside the deterministic scores.

Per model: the judge's Bradley–Terry Elo with its interval and rank range (the ``rank``
stage's ratings), pass@1 (and EvalPlus's base and plus pass@1 for HumanEval+/MBPP+
tasks), IF (instruction- and task-level) from its score summary, the IF/Func composite
(:func:`prefjudge.ranking.composite.composite_score`, IF instruction-level), and how many
battles it fought and how many of its judgments and generations were errors (failed model
requests: in no rate). Per judge (method and model): its verdicts, errors, position
consistency (the share of decided pairs whose two orders agreed) and tie rate, as
arena-hard reports them. Written as ``leaderboard.csv`` and ``.json``, printed as tables,
and plotted.

The leaderboard is built from :class:`Facts`: what the earlier stages made. ``run`` hands
it the facts its stages returned (:mod:`prefjudge.experiment.outcomes`); a stage that did
not run in this process is read from its files, each through the one reader of that
stage's output here (:func:`read_summary`, :func:`read_verdicts`, :func:`read_ratings`,
:func:`read_generation_errors`). :func:`build` is the leaderboard of the files alone.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.experiment.resume import journal_records, verdict_failed
from prefjudge.io import summary_path, write_json
from prefjudge.ranking.composite import composite_score
from prefjudge.records import Verdict, battle_of, generation_failed

COLUMNS = (
    "model", "elo", "elo_lower", "elo_upper", "rank", "rank_lower", "rank_upper",
    "pass1", "base_pass1", "plus_pass1", "if_instruction", "if_task", "composite", "battles",
    "judge_errors", "generation_errors", "n",
)
JUDGE_COLUMNS = ("judge", "verdicts", "errors", "position_consistency", "tie_rate")
"""Columns of :func:`judges`."""

VerdictLike = Verdict | Mapping[str, Any]
"""A verdict: as the judge stage returned it, or its record as read from its file."""


@dataclass(frozen=True)
class Facts:
    """What the leaderboard is made of, per model and per verdict file.

    Attributes:
        summaries: Each model's score summary row (``models[0]`` of its
            ``.summary.json``; empty when there is none), in the experiment's order.
        generation_errors: Each model's failed generations.
        verdicts: Every current verdict file's verdicts, in file-name order.
        ratings: The ``rank`` stage's ratings by model (empty without a judge).
    """

    summaries: Sequence[Mapping[str, Any]]
    generation_errors: Sequence[int]
    verdicts: Sequence[Sequence[VerdictLike]]
    ratings: Mapping[str, Mapping[str, Any]]


# -- the one reader of each stage's output that the leaderboard uses -----------------------


def read_ratings(path: Path) -> dict[str, dict[str, Any]]:
    """The ratings of a ``rank --json`` file by model (empty when it is not there)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("ratings") if isinstance(data, dict) else data
    return {str(row["model"]): row for row in rows or [] if isinstance(row, dict)}


def read_summary(scores: Path) -> dict[str, Any]:
    """The score summary row of one model's ``score`` output (empty when there is none).

    The summary is beside the output (:func:`prefjudge.io.summary_path`).
    """
    path = summary_path(scores, ".json")
    if not path.exists():
        return {}
    models = json.loads(path.read_text(encoding="utf-8")).get("models") or []
    return models[0] if models else {}


def read_verdicts(path: Path) -> list[dict[str, Any]]:
    """The verdict records of a judge stage's output (empty when it is not there)."""
    return journal_records(path)


def read_generation_errors(path: Path) -> int:
    """Failed generations (:func:`prefjudge.records.generation_failed`) of a generation file."""
    return sum(1 for record in journal_records(path) if generation_failed(record))


def generation_errors(summary: Mapping[str, Any], generations: Path) -> int:
    """A model's failed generations: its score summary's ``gen_errors``, else its file's.

    The score stage counts every generation of the file it scored, the failed ones as
    ``gen_errors``; a summary without it (none, or an older one) leaves the count to the
    generation file.
    """
    counted = summary.get("gen_errors")
    return int(counted) if counted is not None else read_generation_errors(generations)


def facts_from_files(score_files: Sequence[Path], generation_files: Sequence[Path],
                     judgment_files: Iterable[Path], ratings_json: Path) -> Facts:
    """The leaderboard's facts read from the stages' files alone."""
    summaries = [read_summary(path) for path in score_files]
    return Facts(
        summaries=summaries,
        generation_errors=[generation_errors(summary, gens) for summary, gens
                           in zip(summaries, generation_files, strict=True)],
        verdicts=[read_verdicts(path) for path in judgment_files],
        ratings=read_ratings(ratings_json),
    )


# -- verdicts ------------------------------------------------------------------------------


def _field(verdict: VerdictLike, name: str) -> Any:
    return verdict.get(name) if isinstance(verdict, Mapping) else getattr(verdict, name)


def _battle(verdict: VerdictLike) -> Any:
    return battle_of(verdict) if isinstance(verdict, Mapping) else verdict.battle()


def _judgment_counts(models: list[str], verdict_files: Sequence[Sequence[VerdictLike]]
                     ) -> tuple[dict[str, int], dict[str, int]]:
    """Per model: its battles (:func:`prefjudge.records.battle_of`) and its failed judgments.

    A verdict decided by no evidence is neither: it is not a battle (as in ``rank``), and
    the judge did not fail.
    """
    battles = dict.fromkeys(models, 0)
    judge_errors = dict.fromkeys(models, 0)
    for verdicts in verdict_files:
        for verdict in verdicts:
            if verdict_failed(verdict):
                counts = judge_errors
                sides = (_field(verdict, "model_a"), _field(verdict, "model_b"))
            elif (battle := _battle(verdict)) is not None:
                counts, sides = battles, (battle.model_a, battle.model_b)
            else:
                continue
            for side in sides:
                if side in counts:
                    counts[side] += 1
    return battles, judge_errors


# -- the rows ------------------------------------------------------------------------------


def rows_of(models: list[str], facts: Facts, alpha: float) -> list[dict[str, Any]]:
    """One row per model, from the facts (sorted by Elo, then composite).

    Args:
        models: Model names, as the experiment lists them.
        facts: What the stages made (:class:`Facts`).
        alpha: Weight of IF in the composite.

    Returns:
        Rows with :data:`COLUMNS`.
    """
    battles, judge_errors = _judgment_counts(models, facts.verdicts)
    rows = []
    for name, summary, gen_errors in zip(models, facts.summaries, facts.generation_errors,
                                         strict=True):
        rating = facts.ratings.get(name, {})
        pass1, if_instruction = summary.get("pass1"), summary.get("if_instruction")
        composite = None
        if pass1 is not None and if_instruction is not None:
            composite = composite_score(pass1, if_instruction, alpha)
        rows.append({
            "model": name,
            "elo": rating.get("rating"), "elo_lower": rating.get("lower"),
            "elo_upper": rating.get("upper"), "rank": rating.get("rank"),
            "rank_lower": rating.get("rank_lower"), "rank_upper": rating.get("rank_upper"),
            "pass1": pass1, "base_pass1": summary.get("base_pass1"),
            "plus_pass1": summary.get("plus_pass1"),
            "if_instruction": if_instruction, "if_task": summary.get("if_task"),
            "composite": composite, "battles": battles[name],
            "judge_errors": judge_errors[name], "generation_errors": gen_errors,
            "n": summary.get("n"),
        })
    rows.sort(key=lambda row: (row["elo"] is None, -(row["elo"] or 0.0),
                               -(row["composite"] or 0.0)))
    return rows


def build(models: list[str], score_files: list[Path], generation_files: list[Path],
          judgment_files: list[Path], ratings_json: Path, alpha: float) -> list[dict[str, Any]]:
    """One row per model (in the experiment's order of models), from the files alone.

    Args:
        models: Model names, as the experiment lists them.
        score_files: Each model's ``score`` output (its ``.summary.json`` beside it).
        generation_files: Each model's generations (errors are counted when the summary
            does not count them).
        judgment_files: Every pair's verdicts (battles and errors are counted; a verdict
            decided by no evidence is neither).
        ratings_json: ``rank --json`` output (absent when there was no judge).
        alpha: Weight of IF in the composite.
    """
    facts = facts_from_files(score_files, generation_files, judgment_files, ratings_json)
    return rows_of(models, facts, alpha)


def judge_rows(verdict_files: Sequence[Sequence[VerdictLike]]) -> list[dict[str, Any]]:
    """One row per judge (method and judge model) of the verdicts, in order of appearance.

    ``position_consistency`` is the share of its verdicts judged in both orders whose two
    orders agreed (``position_consistent``); ``tie_rate`` the share of its battles that are
    ties; ``errors`` its verdicts in error (no battle). None where there is nothing to
    count.

    Args:
        verdict_files: Every pair's verdicts.

    Returns:
        Rows with :data:`JUDGE_COLUMNS`.
    """
    counts: dict[str, dict[str, int]] = {}
    for verdicts in verdict_files:
        for verdict in verdicts:
            name = " · ".join(str(part) for part in (_field(verdict, "method"),
                                                      _field(verdict, "judge_model")) if part)
            seen = counts.setdefault(name or "judge", dict.fromkeys(
                ("verdicts", "errors", "both_orders", "consistent", "battles", "ties"), 0))
            seen["verdicts"] += 1
            if verdict_failed(verdict):
                seen["errors"] += 1
                continue
            consistent = _field(verdict, "position_consistent")
            if consistent is not None:
                seen["both_orders"] += 1
                seen["consistent"] += bool(consistent)
            if (battle := _battle(verdict)) is not None:
                seen["battles"] += 1
                seen["ties"] += battle.winner == "tie"
    return [{"judge": name, "verdicts": seen["verdicts"], "errors": seen["errors"],
             "position_consistency": _share(seen["consistent"], seen["both_orders"]),
             "tie_rate": _share(seen["ties"], seen["battles"])}
            for name, seen in counts.items()]


def judges(judgment_files: list[Path]) -> list[dict[str, Any]]:
    """One row per judge of the verdict files (:func:`judge_rows` of the files read)."""
    return judge_rows([read_verdicts(path) for path in judgment_files])


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def write(rows: list[dict[str, Any]], root: Path, alpha: float,
          judge_rows: list[dict[str, Any]] | None = None) -> list[Path]:
    """Write ``leaderboard.csv``, ``.json`` and ``.png`` into ``root``; return the paths.

    The JSON holds the models' rows and, under ``judges``, the judges' (:func:`judges`).
    """
    csv_path, json_path, png_path = (root / f"leaderboard.{ext}" for ext in ("csv", "json", "png"))
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    write_json(json_path, {"composite_alpha": alpha, "models": rows,
                           "judges": judge_rows or []})
    _plot(rows, png_path, alpha)
    return [csv_path, json_path, png_path]


def _plot(rows: list[dict[str, Any]], path: Path, alpha: float) -> None:
    from prefjudge.plots import pyplot

    plt = pyplot()
    names = [row["model"] for row in rows][::-1]
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.5 * len(rows) + 1.5))
    elo = [row for row in rows if row["elo"] is not None][::-1]
    if elo:
        values = [row["elo"] for row in elo]
        low = [row["elo"] - row["elo_lower"] if row["elo_lower"] is not None else 0 for row in elo]
        high = [row["elo_upper"] - row["elo"] if row["elo_upper"] is not None else 0 for row in elo]
        axes[0].errorbar(values, range(len(elo)), xerr=[low, high], fmt="o", capsize=3)
        axes[0].set_yticks(range(len(elo)), [row["model"] for row in elo])
    axes[0].set_title("judge Elo (95 % interval)")
    composite = [row["composite"] if row["composite"] is not None else math.nan
                 for row in rows][::-1]
    axes[1].barh(range(len(names)), composite)
    axes[1].set_yticks(range(len(names)), names)
    axes[1].set_xlim(0, 1)
    axes[1].set_title(f"composite = {alpha:g}·IF + {1 - alpha:g}·pass@1")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
