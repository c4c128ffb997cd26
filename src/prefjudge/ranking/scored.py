"""Telling and reading ``prefjudge score`` records: the input of ``prefjudge correlate --scores``.

:func:`prefjudge.records.is_scored_record` (in records, so ``prefjudge view`` uses it too) is
the one rule of what a scored record is (it has a scored field); this module reads them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefjudge.io import InputError, InputIssue
from prefjudge.ranking.table_rows import Row, _format, _iter_jsonl

# SCORED_FIELDS and is_scored_record are re-exported: the rule lives in records.
from prefjudge.records import SCORED_FIELDS as SCORED_FIELDS
from prefjudge.records import is_scored_record, normalize_model_name


def is_scored_records(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like ``prefjudge score`` output (JSONL with scored samples).

    Args:
        path: Input file.

    Returns:
        True when it is JSONL whose first record is a scored record
        (:func:`is_scored_record`).
    """
    path = Path(path)
    if _format(path) != "jsonl":
        return False
    for row in _iter_jsonl(path):
        if isinstance(row, Row):
            return is_scored_record(row.data)
    return False


def read_scored_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the fields of scored records that the correlation needs.

    Args:
        path: JSONL written by ``prefjudge score``.

    Returns:
        Dicts with ``model``, ``if_instruction`` (float or None), ``func_pass`` (bool or
        None when the record has no functional result) and ``n_instructions``.

    Raises:
        InputError: On a record without a model name, a non-numeric
            ``if_instruction``, or a ``func`` without a ``status``.
    """
    spath = str(path)
    issues: list[InputIssue] = []
    out: list[dict[str, Any]] = []
    for row in _iter_jsonl(Path(path)):
        if isinstance(row, InputIssue):
            issues.append(row)
            continue
        data = row.data
        model = data.get("model")
        if not isinstance(model, str) or not model.strip():
            issues.append(InputIssue(spath, row.line, "model", "missing model name"))
            continue
        model = normalize_model_name(model)
        if_value = data.get("if_instruction")
        if if_value is not None and (isinstance(if_value, bool)
                                     or not isinstance(if_value, int | float)):
            issues.append(InputIssue(spath, row.line, "if_instruction",
                                     f"must be a number or null, got {if_value!r}"))
            continue
        func = data.get("func")
        func_pass = None
        if func is not None:
            if not isinstance(func, dict) or not isinstance(func.get("status"), str):
                issues.append(InputIssue(spath, row.line, "func",
                                         'must be null or an object with a "status"'))
                continue
            func_pass = func["status"] == "pass"
        instructions = data.get("instructions")
        out.append({
            "model": model,
            "if_instruction": None if if_value is None else float(if_value),
            "func_pass": func_pass,
            "n_instructions": len(instructions) if isinstance(instructions, list) else None,
        })
    if issues:
        raise InputError(issues)
    if not out:
        raise InputError([InputIssue(spath, 0, "", "no scored records in the file (it is empty)")])
    return out
