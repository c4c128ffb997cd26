"""The merged leaderboard of an experiment: judge Elo beside the deterministic scores.

Per model: the judge's Bradley–Terry Elo with its interval and rank range (from
``ratings.json``), pass@1 (and EvalPlus's base and plus pass@1 for HumanEval+/MBPP+
tasks), IF (instruction- and task-level) from its score summary, the IF/Func composite
``alpha * IF + (1 - alpha) * pass@1`` (IF instruction-level), and how many battles it
fought and how many of its judgments and generations were errors (failed model requests:
in no rate). Per judge (method and model): its verdicts, errors, position consistency
(the share of decided pairs whose two orders agreed) and tie rate, as arena-hard reports
them. Written as ``leaderboard.csv`` and ``.json``, printed as tables, and plotted.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from prefjudge.io import read_existing, summary_path, write_json
from prefjudge.records import battle_of, generation_failed

COLUMNS = (
    "model", "elo", "elo_lower", "elo_upper", "rank", "rank_lower", "rank_upper",
    "pass1", "base_pass1", "plus_pass1", "if_instruction", "if_task", "composite", "battles",
    "judge_errors", "generation_errors", "n",
)
JUDGE_COLUMNS = ("judge", "verdicts", "errors", "position_consistency", "tie_rate")
"""Columns of :func:`judges`."""


def _ratings(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("ratings") if isinstance(data, dict) else data
    return {str(row["model"]): row for row in rows or [] if isinstance(row, dict)}


def _summary(scores: Path) -> dict[str, Any]:
    path = summary_path(scores, ".json")
    if not path.exists():
        return {}
    models = json.loads(path.read_text(encoding="utf-8")).get("models") or []
    return models[0] if models else {}


def _judgment_counts(models: list[str], judgment_files: list[Path]
                     ) -> tuple[dict[str, int], dict[str, int]]:
    """Per model: its battles (:func:`prefjudge.records.battle_of`) and its failed judgments.

    A verdict decided by no evidence is neither: it is not a battle (as in ``rank``), and
    the judge did not fail.
    """
    battles = dict.fromkeys(models, 0)
    judge_errors = dict.fromkeys(models, 0)
    for path in judgment_files:
        for record in read_existing(path) if path.exists() else []:
            if record.get("status") == "error":
                counts, sides = judge_errors, (record.get("model_a"), record.get("model_b"))
            elif (battle := battle_of(record)) is not None:
                counts, sides = battles, (battle.model_a, battle.model_b)
            else:
                continue
            for side in sides:
                if side in counts:
                    counts[side] += 1
    return battles, judge_errors


def build(models: list[str], score_files: list[Path], generation_files: list[Path],
          judgment_files: list[Path], ratings_json: Path, alpha: float) -> list[dict[str, Any]]:
    """One row per model (in the experiment's order of models).

    Args:
        models: Model names, as the experiment lists them.
        score_files: Each model's ``score`` output (its ``.summary.json`` beside it).
        generation_files: Each model's generations (errors are counted).
        judgment_files: Every pair's verdicts (battles and errors are counted; a verdict
            decided by no evidence is neither).
        ratings_json: ``rank --json`` output (absent when there was no judge).
        alpha: Weight of IF in the composite.
    """
    ratings = _ratings(ratings_json)
    battles, judge_errors = _judgment_counts(models, judgment_files)
    rows = []
    for name, scores, gens in zip(models, score_files, generation_files, strict=True):
        summary = _summary(scores)
        rating = ratings.get(name, {})
        gen_errors = sum(1 for record in read_existing(gens) if generation_failed(record))
        pass1, if_instruction = summary.get("pass1"), summary.get("if_instruction")
        composite = None
        if pass1 is not None and if_instruction is not None:
            composite = alpha * if_instruction + (1 - alpha) * pass1
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


def judges(judgment_files: list[Path]) -> list[dict[str, Any]]:
    """One row per judge (method and judge model) of the verdict files.

    ``position_consistency`` is the share of its verdicts judged in both orders whose two
    orders agreed (``position_consistent``); ``tie_rate`` the share of its battles that are
    ties; ``errors`` its verdicts in error (no battle). None where there is nothing to
    count.

    Args:
        judgment_files: Every pair's verdicts.

    Returns:
        Rows with :data:`JUDGE_COLUMNS`, in order of first appearance.
    """
    counts: dict[str, dict[str, int]] = {}
    for path in judgment_files:
        for record in read_existing(path):
            name = " · ".join(str(part) for part in (record.get("method"),
                                                      record.get("judge_model")) if part)
            seen = counts.setdefault(name or "judge", dict.fromkeys(
                ("verdicts", "errors", "both_orders", "consistent", "battles", "ties"), 0))
            seen["verdicts"] += 1
            if record.get("status") == "error":
                seen["errors"] += 1
                continue
            if record.get("position_consistent") is not None:
                seen["both_orders"] += 1
                seen["consistent"] += bool(record["position_consistent"])
            if (battle := battle_of(record)) is not None:
                seen["battles"] += 1
                seen["ties"] += battle.winner == "tie"
    return [{"judge": name, "verdicts": seen["verdicts"], "errors": seen["errors"],
             "position_consistency": _share(seen["consistent"], seen["both_orders"]),
             "tie_rate": _share(seen["ties"], seen["battles"])}
            for name, seen in counts.items()]


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
