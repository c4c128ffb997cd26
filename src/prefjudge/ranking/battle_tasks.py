"""Which task each judged battle was on, and the task ids of a task, generation or verdict file.

Used by ``prefjudge rank --suggest`` to know which tasks a model pair was already judged on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pandas as pd
from pydantic import ValidationError

from prefjudge.io import InputError, InputIssue
from prefjudge.ranking.battle_rows import BattleColumns, verdict_battle
from prefjudge.ranking.table_rows import _MAX_ISSUES, Row, _missing, iter_rows
from prefjudge.records import is_verdict_row, normalize_model_name


def _judged_task(data: Mapping[str, Any], cols: BattleColumns) -> tuple[str, str, str] | None:
    """``(model_a, model_b, task_id)`` of a row that is a battle on a task, else None.

    A verdict row is a battle when :func:`verdict_battle` says so (a failed verdict, or one
    decided by no evidence, judged nothing that ``rank`` counts).
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
    is a battle (:func:`verdict_battle`: a failed verdict, or one decided by no evidence,
    is not, so its task is still untried).

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
        InputError: When the file cannot be read, a record of it cannot (not valid JSON,
            not UTF-8 ...) or has no ``task_id`` (or one that is not text), or the file
            holds no record.
    """
    seen: dict[str, None] = {}
    issues: list[InputIssue] = []
    for row in iter_rows(path):
        if not isinstance(row, InputIssue):
            task_id = row.data.get("task_id")
            if isinstance(task_id, str | int) and not isinstance(task_id, bool) \
                    and not _missing(task_id):
                seen.setdefault(str(task_id), None)
                continue
            problem = "missing" if _missing(task_id) else f"must be text, got {task_id!r:.60}"
            row = InputIssue(str(path), row.line, row.where + "task_id", problem)
        if len(issues) < _MAX_ISSUES:
            issues.append(row)
    if issues:
        raise InputError(issues)
    if not seen:
        raise InputError([InputIssue(str(path), 0, "task_id", "no record has a task_id")])
    return list(seen)
