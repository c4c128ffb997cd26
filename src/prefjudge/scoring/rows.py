"""The row each scored sample contributes to every score summary (numpy only, no pandas).

``prefjudge score`` keeps these small tuples, one per record, while it writes the records,
and builds its summary from them at the end (:func:`prefjudge.scoring.metrics.rows_frame`);
this module stays free of pandas so that the command starts without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prefjudge.records import ScoredSample

SAMPLE_COLUMNS = [
    "model",
    "task_id",
    "k",
    "if_instruction",
    "if_task",
    "func_status",
    "func_pass",
    "check_errors",
    "protocol",
]
"""Columns of :func:`sample_row`, in order."""


def protocol_of(rec: ScoredSample) -> str:
    """The generation protocol of a record (field ``protocol``; default single)."""
    return str(getattr(rec, "protocol", None) or "single")


def sample_k(rec: ScoredSample) -> int:
    """The number of instructions a sample was asked to follow.

    Args:
        rec: A scored sample.

    Returns:
        Its field ``k`` (written by ``prefjudge generate``) when present, else the
        number of its instructions.

    Raises:
        ValueError: When ``k`` is present but not a non-negative integer.
    """
    value = getattr(rec, "k", None)
    if value is None:
        return len(rec.instructions)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"k must be a non-negative integer, got {value!r}")
    return value or len(rec.instructions)


def sample_row(record: ScoredSample | dict[str, Any]) -> tuple[Any, ...]:
    """The row of one record in :func:`samples_frame` (values in :data:`SAMPLE_COLUMNS` order).

    A caller that scores many samples can keep these small rows instead of the records and
    build the frame with :func:`rows_frame`.
    """
    rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
    func_status = rec.func.status if rec.func else None
    func_pass = np.nan
    if func_status in ("pass", "fail", "timeout"):
        func_pass = 1.0 if func_status == "pass" else 0.0
    return (
        rec.model,
        rec.task_id,
        sample_k(rec),
        np.nan if rec.if_instruction is None else rec.if_instruction,
        np.nan if rec.if_task is None else float(rec.if_task),
        func_status,
        func_pass,
        sum(r.status == "error" for r in rec.instruction_results),
        protocol_of(rec),
    )
