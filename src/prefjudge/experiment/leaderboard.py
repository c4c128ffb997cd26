"""The merged leaderboard of an experiment: judge Elo beside the deterministic scores.

Per model: the judge's Bradley–Terry Elo with its interval and rank range (from
``ratings.json``), pass@1, IF (instruction- and task-level) from its score summary, the
IF/Func composite ``alpha * IF + (1 - alpha) * pass@1`` (IF instruction-level), and how
many battles it fought and how many of its judgments and generations were errors.
Written as ``leaderboard.csv`` and ``.json``, printed as a table, and plotted.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from prefjudge.io import read_existing
from prefjudge.records import battle_of

COLUMNS = (
    "model", "elo", "elo_lower", "elo_upper", "rank", "rank_lower", "rank_upper",
    "pass1", "if_instruction", "if_task", "composite", "battles", "judge_errors",
    "generation_errors", "n",
)


def _ratings(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("ratings") if isinstance(data, dict) else data
    return {str(row["model"]): row for row in rows or [] if isinstance(row, dict)}


def _summary(scores: Path) -> dict[str, Any]:
    path = scores.with_name(scores.stem + ".summary.json")
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
        gen_errors = sum(1 for record in read_existing(gens) if record.get("error")) \
            if gens.exists() else 0
        pass1, if_instruction = summary.get("pass1"), summary.get("if_instruction")
        composite = None
        if pass1 is not None and if_instruction is not None:
            composite = alpha * if_instruction + (1 - alpha) * pass1
        rows.append({
            "model": name,
            "elo": rating.get("rating"), "elo_lower": rating.get("lower"),
            "elo_upper": rating.get("upper"), "rank": rating.get("rank"),
            "rank_lower": rating.get("rank_lower"), "rank_upper": rating.get("rank_upper"),
            "pass1": pass1, "if_instruction": if_instruction, "if_task": summary.get("if_task"),
            "composite": composite, "battles": battles[name],
            "judge_errors": judge_errors[name], "generation_errors": gen_errors,
            "n": summary.get("n"),
        })
    rows.sort(key=lambda row: (row["elo"] is None, -(row["elo"] or 0.0),
                               -(row["composite"] or 0.0)))
    return rows


def write(rows: list[dict[str, Any]], root: Path, alpha: float) -> list[Path]:
    """Write ``leaderboard.csv``, ``.json`` and ``.png`` into ``root``; return the paths."""
    csv_path, json_path, png_path = (root / f"leaderboard.{ext}" for ext in ("csv", "json", "png"))
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    json_path.write_text(json.dumps({"composite_alpha": alpha, "models": rows}, indent=2) + "\n",
                         encoding="utf-8")
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
