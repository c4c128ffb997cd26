"""Reading per-model tables (scores, Elo ratings) and model-name alias files.

Both come as CSV, JSON or JSONL (``.gz`` too); every problem is reported with its file,
line and field, all at once.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from prefjudge.io import InputError, InputIssue
from prefjudge.ranking.table_rows import _format, _load_json, _missing, iter_rows
from prefjudge.records import normalize_model_name


def read_model_table(
    path: str | os.PathLike[str],
    model_col: str,
    value_cols: list[str],
) -> pd.DataFrame:
    """Read a per-model table of numbers (scores or Elo ratings).

    Empty cells become NaN (the caller lists such models); text that is not a number,
    a missing column, a missing model name or a model named twice is an error.

    Args:
        path: CSV/JSON/JSONL file.
        model_col: Column holding the model name.
        value_cols: Numeric columns to read.

    Returns:
        A frame with ``model`` and the value columns (in file order) plus ``line``.

    Raises:
        InputError: On any of the problems above, or an empty file.
    """
    path = Path(path)
    spath = str(path)
    issues: list[InputIssue] = []
    records: list[dict[str, Any]] = []
    first_line: dict[str, int | str] = {}
    header_checked = False
    for row in iter_rows(path):
        if isinstance(row, InputIssue):
            header_checked = True
            issues.append(row)
            continue
        if not header_checked:
            header_checked = True
            absent = [c for c in [model_col, *value_cols] if c not in row.data]
            if absent and row.where == "":
                shown = ", ".join(sorted(row.data))
                raise InputError([InputIssue(spath, row.line, c,
                                             f"no such column (columns: {shown})")
                                  for c in absent])
        name = row.data.get(model_col)
        if _missing(name):
            issues.append(InputIssue(spath, row.line, row.where + model_col, "missing model name"))
            continue
        name = normalize_model_name(str(name).strip())
        if name in first_line:
            issues.append(InputIssue(spath, row.line, row.where + model_col,
                                     f"model {name!r} appears twice "
                                     f"(first at {first_line[name]})"))
            continue
        first_line[name] = row.line or row.where.rstrip(".")
        record: dict[str, Any] = {"model": name, "line": row.line}
        for col in value_cols:
            value = row.data.get(col)
            if _missing(value):
                record[col] = math.nan
                continue
            try:
                record[col] = float(value)
            except (TypeError, ValueError):
                issues.append(InputIssue(spath, row.line, row.where + col,
                                         f"not a number: {value!r}"))
                record[col] = math.nan
        records.append(record)
    if not header_checked:
        raise InputError([InputIssue(spath, 0, "", "the file is empty")])
    if issues:
        raise InputError(issues)
    return pd.DataFrame(records, columns=["model", *value_cols, "line"])


def read_aliases(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a model-name alias file: score-table name → Elo-table name.

    Accepted forms: a JSON object ``{"name in scores": "name in Elo table"}``, or a
    CSV/JSONL table with columns ``score_model`` and ``elo_model``.

    Args:
        path: Alias file.

    Returns:
        The mapping.

    Raises:
        InputError: On a malformed file or a name mapped twice.
    """
    path = Path(path)
    spath = str(path)
    if _format(path) == "json":
        data = _load_json(path)
        if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
            return {normalize_model_name(str(k)): normalize_model_name(v)
                    for k, v in data.items()}
    aliases: dict[str, str] = {}
    issues: list[InputIssue] = []
    for row in iter_rows(path):
        if isinstance(row, InputIssue):
            issues.append(row)
            continue
        source, target = row.data.get("score_model"), row.data.get("elo_model")
        if _missing(source) or _missing(target):
            issues.append(InputIssue(spath, row.line, row.where + "score_model/elo_model",
                                     "expected columns score_model and elo_model"))
            continue
        source = normalize_model_name(str(source).strip())
        target = normalize_model_name(str(target).strip())
        if source in aliases and aliases[source] != target:
            issues.append(InputIssue(spath, row.line, row.where + "score_model",
                                     f"{source!r} is mapped twice"))
            continue
        aliases[source] = target
    if issues:
        raise InputError(issues)
    return aliases
