"""The tables ``prefjudge run`` shows: its plan, its failures, the leaderboard and its judges.

Each is a :class:`~prefjudge.reporting.TextTable` made from what the run counted
(:func:`prefjudge.experiment.progress.requests_left`, the manifest's ``failures``, the
leaderboard's rows); none reads a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefjudge.experiment.plan import Stage
from prefjudge.experiment.progress import requests_left
from prefjudge.reporting import TextTable


def plan_table(
    stages: list[Stage], root: Path, *, result: bool = True, retry_errors: bool = False
) -> TextTable:
    """The plan as a table: stage, output, the model requests left, done and failed.

    What is left is what a run would still ask (:func:`requests_left`: the records already
    in a stage's output are not made again), so a finished experiment plans 0. Failed
    requests (records kept as errors) are shown apart from the done ones: a plain run
    keeps them, ``retry_errors`` counts them as left.

    Args:
        stages: The stages.
        root: The results folder (outputs are shown relative to it).
        result: Whether the table is the command's result (stdout) or progress.
        retry_errors: Plan for ``run --retry-errors``.

    Returns:
        The table; its last row is the total.
    """
    rows, total, done, failed, bounds = [], 0, 0, 0, set()
    for index, stage in enumerate(stages, start=1):
        left = requests_left(stage, retry_errors=retry_errors)
        shown = (
            "—"
            if not stage.requests
            else f"{stage.bound if left.requests else ''} {left.requests}".strip()
        )
        total, done, failed = total + left.requests, done + left.done, failed + left.failed
        if left.requests:
            bounds.add(stage.bound)
        rows.append(
            [
                str(index),
                stage.label,
                str(stage.output.relative_to(root)),
                shown,
                str(left.done) if left.done else "—",
                str(left.failed) if left.failed else "—",
            ]
        )
    bound = "" if bounds <= {""} else ("≥" if bounds <= {"", "≥"} else "about")
    rows.append(["", "total", "", f"{bound} {total}".strip(), str(done), str(failed)])
    columns = ["#", "stage", "output", "model requests left", "done", "failed"]
    kept = f", {failed} failed: --retry-errors makes them again" if failed else ""
    return TextTable(
        f"prefjudge run — plan ({root}): {bound + ' ' if bound else ''}{total} "
        f"model requests left ({done} already done{kept})",
        columns,
        rows,
        right=frozenset({"#", columns[3], "done", "failed"}),
        result=result,
    )


def failure_table(found: dict[str, Any]) -> TextTable:
    """The failures of a run (:func:`failures`) as a table: what failed in each stage."""
    rows = [[row["stage"], _count(row["failed"], row["kind"]),
             str(row["pairs_waiting"]) if row["pairs_waiting"] else "—"]
            for row in found["stages"]]
    columns = ["stage", "failed model requests", "pairs waiting on a failed generation"]
    return TextTable("prefjudge run — failures (kept as errors, never scored or ranked)",
                     columns, rows, right=frozenset(columns[1:]))


def _count(n: int, plural: str) -> str:
    """``1 generation``, ``3 generations``."""
    return f"{n} {plural[:-1] if n == 1 else plural}"


def failure_line(found: dict[str, Any], rerun: str) -> str | None:
    """The run's closing line when something failed (None when nothing did).

    For example ``8 generations and 5 verdicts failed; prefjudge run exp.toml
    --retry-errors retries them``.
    """
    parts = [_count(found[kind], kind) for kind in ("generations", "verdicts") if found.get(kind)]
    if not parts:
        return None
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    waiting = found["pairs_waiting"]
    wait = f" ({waiting} pair{'s' if waiting != 1 else ''} wait on them)" if waiting else ""
    return f"{said} failed{wait}; {rerun} --retry-errors retries them"


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def judge_table(rows: list[dict[str, Any]]) -> TextTable:
    """The judges of the leaderboard (:func:`prefjudge.experiment.leaderboard.judges`)."""
    columns = ["judge", "verdicts", "errors", "position consistency", "tie rate"]
    shown = [[row["judge"], str(row["verdicts"]), str(row["errors"]),
              _fmt(row["position_consistency"]), _fmt(row["tie_rate"])] for row in rows]
    return TextTable("prefjudge run — judges", columns, shown, right=frozenset(columns[1:]))


def leaderboard_table(rows: list[dict[str, Any]], alpha: float) -> TextTable:
    """The merged leaderboard as a table (base and plus pass@1 where a model has them)."""
    plus = any(row.get("plus_pass1") is not None for row in rows)
    columns = [
        "model",
        "Elo [95% CI]",
        "rank range",
        "pass@1",
        *(["base pass@1", "plus pass@1"] if plus else []),
        "IF instr.",
        "IF task",
        f"composite (α={alpha:g})",
        "battles",
        "errors",
    ]
    shown = []
    for row in rows:
        elo = (
            "—"
            if row["elo"] is None
            else (f"{row['elo']:.0f} [{_fmt(row['elo_lower'], 0)}, {_fmt(row['elo_upper'], 0)}]")
        )
        ranks = "—" if row["rank_lower"] is None else f"{row['rank_lower']}–{row['rank_upper']}"
        errors = f"{row['judge_errors']} judge, {row['generation_errors']} gen"
        shown.append(
            [
                row["model"],
                elo,
                ranks,
                _fmt(row["pass1"]),
                *([_fmt(row.get("base_pass1")), _fmt(row.get("plus_pass1"))] if plus else []),
                _fmt(row["if_instruction"]),
                _fmt(row["if_task"]),
                _fmt(row["composite"]),
                str(row["battles"]),
                errors,
            ]
        )
    return TextTable("prefjudge run — leaderboard", columns, shown, right=frozenset(columns[1:]))


__all__ = ["failure_line", "failure_table", "judge_table", "leaderboard_table", "plan_table"]
