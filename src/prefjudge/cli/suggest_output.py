"""``prefjudge rank --suggest N``: the model pairs worth judging next, printed and as JSON.

The command reads its battles and fits its leaderboard as usual; with ``--suggest`` it
also calls :func:`suggest_for_rank` (the pairs, valued by
:mod:`prefjudge.ranking.suggest`, with the tasks each pair was not judged on when the
battles carry ``task_id``) and prints them with :func:`print_and_write_suggestions`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pandas as pd
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.cli.streams import is_stdout, write_output
from prefjudge.io import InputError, InputIssue
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.inputs import BattleColumns, Row, iter_rows, verdict_battle
from prefjudge.ranking.reports import dumps
from prefjudge.ranking.suggest import (
    Suggestion,
    Uncertainty,
    suggest_from_battles,
    untried_tasks,
)
from prefjudge.records import is_verdict_row, normalize_model_name

#: Untried tasks shown per pair in the table (the JSON lists them all).
SHOWN_TASKS = 3


def suggestion_records(suggestions: Sequence[Suggestion]) -> list[dict[str, Any]]:
    """The suggestions as JSON-ready dicts, best first (what ``--json`` holds)."""
    return [s.as_dict() for s in suggestions]


def _tasks_cell(tasks: tuple[str, ...] | None) -> str:
    if tasks is None:
        return "–"
    if not tasks:
        return "none left"
    shown = ", ".join(tasks[:SHOWN_TASKS])
    more = f", … (+{len(tasks) - SHOWN_TASKS})" if len(tasks) > SHOWN_TASKS else ""
    return f"{len(tasks)}: {shown}{more}"


def suggestions_table(suggestions: Sequence[Suggestion], title: str) -> Table:
    """The suggestions as a rich table, best first."""
    table = Table(title=escape(title))
    for name in ("#", "model A", "model B", "battles", "P(A wins)", "P(order wrong)",
                 "value", "untried tasks", "why"):
        table.add_column(name, justify="right" if name in (
            "#", "battles", "P(A wins)", "P(order wrong)", "value") else "left",
            no_wrap=name not in ("why", "untried tasks", "model A", "model B"))
    for rank, s in enumerate(suggestions, start=1):
        value = "connect" if s.kind == "connect" else (
            f"{s.score:.3g}" if math.isfinite(s.score) else "–")
        table.add_row(str(rank), escape(s.model_a), escape(s.model_b), str(s.battles),
                      f"{s.p_model_a_wins:.2f}", f"{s.p_order_flip:.2f}", value,
                      escape(_tasks_cell(s.untried_tasks)), escape(s.reason))
    return table


def print_and_write_suggestions(
    console: Console,
    suggestions: Sequence[Suggestion],
    json_path: Path | None,
) -> None:
    """Print the suggestions as a table and optionally write them as JSON.

    Args:
        console: Where the table goes.
        suggestions: Best first (:func:`suggest_for_rank`).
        json_path: ``{"suggestions": [...]}`` is written there (``-``: stdout); None
            writes nothing. ``prefjudge rank --json`` instead adds the same list to its
            own payload under ``suggestions`` (:func:`suggestion_records`).

    Raises:
        click.ClickException: When the JSON file cannot be written.
    """
    title = (f"Pairs worth judging next ({len(suggestions)}; value = expected misordered "
             "pairs one more judgment removes)")
    console.print(suggestions_table(suggestions, title))
    if json_path is not None:
        write_output(Path(json_path), dumps({"suggestions": suggestion_records(suggestions)}),
                     "--json")
        if not is_stdout(json_path):
            Console(stderr=True).print(f"suggestions → {escape(str(json_path))}")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (
        isinstance(value, float) and math.isnan(value))


def _judged_task(data: dict[str, Any], cols: BattleColumns) -> tuple[str, str, str] | None:
    """``(model_a, model_b, task_id)`` of a row that is a battle on a task, else None.

    A verdict row is a battle when :func:`~prefjudge.ranking.inputs.verdict_battle` says so
    (a failed verdict, or one decided by no evidence, judged nothing that ``rank`` counts).
    """
    task = data.get("task_id")
    if _missing(task):
        return None
    if is_verdict_row(data):
        try:
            battle = verdict_battle(data)
        except ValidationError:  # not a valid verdict: rank reports it, it is no battle
            return None
        return None if battle is None else (battle.model_a, battle.model_b, str(task))
    a, b = data.get(cols.model_a), data.get(cols.model_b)
    if any(_missing(v) for v in (a, b, data.get(cols.winner))):
        return None
    if not (isinstance(a, str) and isinstance(b, str)):
        return None
    return normalize_model_name(a), normalize_model_name(b), str(task)


def read_battle_tasks(path: str | os.PathLike[str], columns: BattleColumns | None = None
                      ) -> pd.DataFrame:
    """The task each judged battle of a battles file was on, when the file says.

    Only rows with both models, a winner and a ``task_id`` count; a verdict counts when it
    is a battle (:func:`~prefjudge.ranking.inputs.verdict_battle`: a failed verdict, or one
    decided by no evidence, is not, so its task is still untried).

    Args:
        path: The battles file ``prefjudge rank`` reads (verdicts carry ``task_id``).
        columns: Its column names (defaults: ``model_a``, ``model_b``, ``winner``).

    Returns:
        Columns ``model_a, model_b, task_id``; empty when no row has a task id.

    Raises:
        InputError: When the file cannot be read.
    """
    cols = columns or BattleColumns()
    found: dict[str, list[str]] = {"model_a": [], "model_b": [], "task_id": []}
    for row in iter_rows(path):
        judged = _judged_task(row.data, cols) if isinstance(row, Row) else None
        if judged is not None:
            for name, value in zip(found, judged, strict=True):
                found[name].append(value)
    return pd.DataFrame(found, columns=["model_a", "model_b", "task_id"])


def read_task_ids(path: str | os.PathLike[str]) -> list[str]:
    """Task ids of a task, generation or verdict file (its ``task_id`` column), in order.

    Args:
        path: CSV/JSON/JSONL file whose records carry ``task_id``.

    Returns:
        The distinct task ids, first appearance first.

    Raises:
        InputError: When the file cannot be read or no record has a ``task_id``.
    """
    seen: dict[str, None] = {}
    for row in iter_rows(path):
        if isinstance(row, Row) and not _missing(row.data.get("task_id")):
            seen.setdefault(str(row.data["task_id"]), None)
    if not seen:
        raise InputError([InputIssue(str(path), 0, "task_id", "no record has a task_id")])
    return list(seen)


def suggest_for_rank(
    frame: pd.DataFrame,
    battles_path: Path,
    n: int,
    *,
    columns: BattleColumns | None = None,
    ties: bt.TiePolicy = "half",
    alpha: float = 0.0,
    tasks_path: Path | None = None,
    uncertainty: Uncertainty = "laplace",
    n_resamples: int = 200,
    seed: int = 0,
) -> list[Suggestion]:
    """What ``prefjudge rank --suggest N`` lists for the battles it read.

    The uncertainty is the Laplace approximation by default (see
    :mod:`prefjudge.ranking.suggest`): cheap, and it covers pairs never compared.

    Args:
        frame: The battles as ``rank`` read them (``model_a, model_b, winner, weight``).
        battles_path: Their file (read again for ``task_id``, which the frame drops).
        n: How many pairs.
        columns: The battle file's column names.
        ties: Tie policy of the fit.
        alpha: Regularisation asked for.
        tasks_path: A file whose ``task_id`` values are the tasks a judgment may use
            (default: every task id in the battles).
        uncertainty: ``laplace`` or ``bootstrap``.
        n_resamples: Bootstrap resamples (``bootstrap`` only).
        seed: Bootstrap seed.

    Returns:
        The suggestions, best first.

    Raises:
        click.ClickException: When the files cannot be read or the battles name fewer
            than two models.
    """
    try:
        judged = read_battle_tasks(battles_path, columns)
        available = read_task_ids(tasks_path) if tasks_path is not None else None
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    battles = frame[["model_a", "model_b", "winner", "weight"]]
    try:
        suggestions = suggest_from_battles(battles, n, ties=ties, alpha=alpha,
                                           uncertainty=uncertainty, n_resamples=n_resamples,
                                           seed=seed)
    except (bt.RankError, ValueError) as exc:
        raise click.ClickException(f"{battles_path}: {exc}") from None
    if judged.empty and available is None:
        return suggestions
    return _with_tasks(suggestions, judged, available)


def _with_tasks(suggestions: list[Suggestion], judged: pd.DataFrame,
                available: list[str] | None) -> list[Suggestion]:
    """The suggestions with the tasks each pair was not judged on yet."""
    pairs = [(s.model_a, s.model_b) for s in suggestions]
    tasks = untried_tasks(pairs, judged, available)
    return [replace(s, untried_tasks=t) for s, t in zip(suggestions, tasks, strict=True)]


__all__ = [
    "SHOWN_TASKS",
    "print_and_write_suggestions",
    "read_battle_tasks",
    "read_task_ids",
    "suggest_for_rank",
    "suggestion_records",
    "suggestions_table",
]
