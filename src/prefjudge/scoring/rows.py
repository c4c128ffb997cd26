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
    "base_pass",
    "plus_pass",
    "gen_error",
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


def _passed(status: str | None) -> float:
    """1.0 for ``pass``, 0.0 for ``fail`` and ``timeout``, NaN for ``error`` or no verdict."""
    if status in ("pass", "fail", "timeout"):
        return 1.0 if status == "pass" else 0.0
    return np.nan


def sample_row(record: ScoredSample | dict[str, Any]) -> tuple[Any, ...]:
    """The row of one record in :func:`samples_frame` (values in :data:`SAMPLE_COLUMNS` order).

    A caller that scores many samples can keep these small rows instead of the records and
    build the frame with :func:`rows_frame`.

    ``func_pass`` is the verdict on the task's tests (1.0, 0.0; NaN when the run ended in
    ``error`` or there is none). ``base_pass`` and ``plus_pass`` are EvalPlus's two figures
    for HumanEval+/MBPP+ samples (``func.sets``): the base inputs alone, and base and plus
    inputs together (the sample's own verdict, as EvalPlus counts ``base_status ==
    plus_status == "pass"``); NaN for other tasks and for a sample whose run ended in
    ``error`` anywhere, so that an error is left out of every functional figure alike.
    ``gen_error`` is True for a failed model request (status ``error``): its figures are
    all NaN, so no rate counts it, and summaries count it apart.
    """
    rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
    if rec.status == "error":
        return (rec.model, rec.task_id, sample_k(rec), np.nan, np.nan, None, np.nan, 0,
                protocol_of(rec), np.nan, np.nan, True)
    func_status = rec.func.status if rec.func else None
    func_pass = _passed(func_status)
    base_pass = plus_pass = np.nan
    if rec.func is not None and rec.func.sets is not None and func_status != "error":
        base = rec.func.sets.get("base")
        base_pass = _passed(base.status if base is not None else None)
        plus_pass = func_pass
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
        base_pass,
        plus_pass,
        False,
    )
