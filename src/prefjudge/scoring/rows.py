"""What each scored sample contributes: its summary row and, while scoring, its line.

``prefjudge score`` keeps small row tuples, one per record, while it writes the records,
and builds its summary from them at the end (:func:`prefjudge.scoring.metrics.rows_frame`);
this module stays free of pandas so that the command starts without it.

:class:`Scored` is a generation just scored, before it is a record: scoring makes one per
generation, and the command takes its JSONL line and its row from it directly, without
building, validating and dumping a :class:`~prefjudge.records.ScoredSample` (which
:meth:`Scored.sample` still gives, equal to the record the line holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prefjudge.journal import JSON_LINE, record_line
from prefjudge.records import (
    CheckResult,
    FuncResult,
    Generation,
    ScoredSample,
    generation_failed,
)

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
    errors = sum(r.status == "error" for r in rec.instruction_results)
    return _row(rec, rec.status == "error", rec.if_instruction, rec.if_task, rec.func, errors)


def _row(
    rec: Generation, failed: bool, if_instruction: float | None, if_task: bool | None,
    func: FuncResult | None, check_errors: int,
) -> tuple[Any, ...]:
    """:func:`sample_row` from a record's parts (``rec``: its generation fields)."""
    if failed:
        return (rec.model, rec.task_id, sample_k(rec), np.nan, np.nan, None, np.nan, 0,
                protocol_of(rec), np.nan, np.nan, True)
    func_status = func.status if func else None
    func_pass = _passed(func_status)
    base_pass = plus_pass = np.nan
    if func is not None and func.sets is not None and func_status != "error":
        base = func.sets.get("base")
        base_pass = _passed(base.status if base is not None else None)
        plus_pass = func_pass
    return (
        rec.model,
        rec.task_id,
        sample_k(rec),
        np.nan if if_instruction is None else if_instruction,
        np.nan if if_task is None else float(if_task),
        func_status,
        func_pass,
        check_errors,
        protocol_of(rec),
        base_pass,
        plus_pass,
        False,
    )


PackedCheck = tuple[str, dict[str, Any], str, str]
"""A check result as the verification process returns it: ``(id, params, status, reason)``."""

_HEAD = ("id", "task_id", "model", "response", "instructions")
"""The generation fields a scored record writes first, before what scoring adds."""
_SCORED_FIELDS = frozenset(ScoredSample.model_fields) - frozenset(Generation.model_fields)
"""What scoring adds to a generation (an input's own keys of these names are dropped)."""
_DROPPED = _SCORED_FIELDS | frozenset(_HEAD)


def _packed(checks: Sequence[CheckResult | PackedCheck]) -> list[PackedCheck]:
    """Check results as ``(id, params, status, reason)`` tuples, whichever way they came."""
    if checks and isinstance(checks[0], CheckResult):
        return [(c.id, c.params, c.status, c.reason) for c in checks]  # type: ignore[union-attr]
    return checks  # type: ignore[return-value]


def _models(checks: Sequence[CheckResult | PackedCheck]) -> list[CheckResult]:
    """Check results as models (packed ones constructed, as they were verified already)."""
    if not checks or isinstance(checks[0], CheckResult):
        return list(checks)  # type: ignore[arg-type]
    construct = CheckResult.model_construct
    return [construct(id=ident, params=params, status=status, reason=reason)
            for ident, params, status, reason in checks]  # type: ignore[misc]


def _checks_json(checks: Sequence[CheckResult | PackedCheck]) -> list[dict[str, Any]]:
    return [{"id": ident, "params": params, "status": status, "reason": reason}
            for ident, params, status, reason in _packed(checks)]


def summarise_checks(results: Sequence[CheckResult]) -> tuple[float | None, bool | None]:
    """Instruction-level and task-level IF of one sample.

    Errored checks are undetermined: they leave the fraction's denominator, and make
    task-level IF undetermined unless another check already failed.

    Args:
        results: The sample's check results.

    Returns:
        ``(if_instruction, if_task)``; None where undetermined or with no instructions.
    """
    return summarise_statuses([r.status for r in results])


def summarise_statuses(statuses: Sequence[str]) -> tuple[float | None, bool | None]:
    """:func:`summarise_checks` of the checks' statuses.

    Args:
        statuses: Each check's status (``pass``, ``fail``, ``error``).

    Returns:
        ``(if_instruction, if_task)``, as :func:`summarise_checks`.
    """
    passed = statuses.count("pass")
    failed = statuses.count("fail")
    errored = statuses.count("error")
    if_instruction = passed / (passed + failed) if passed + failed else None
    if failed:
        if_task: bool | None = False
    elif errored or not statuses:
        if_task = None
    else:
        if_task = True
    return if_instruction, if_task


def checks_statuses(results: Sequence[CheckResult | PackedCheck]) -> list[str]:
    """The checks' statuses, from models or packed tuples.

    Args:
        results: One check's result per instruction, either way.

    Returns:
        Their statuses, in order.
    """
    if results and isinstance(results[0], CheckResult):
        return [check.status for check in results]  # type: ignore[union-attr]
    return [check[2] for check in results]  # type: ignore[index]


class Scored:
    """A generation just scored, before it is a record: its line, row and record from here.

    Attributes:
        key: The generation's journal key.
        gen: The generation (its instructions with resolved parameters).
        checks: One check result per instruction: models, or packed tuples as the
            verification process sends them.
        if_instruction: Instruction-level IF (None: undetermined).
        if_task: Task-level IF (None: undetermined).
        func: The unit tests' result (None: none ran).
        turns: Each turn's check results (multi-turn generations), else None.
        meta: The provenance every record carries (without its key).
    """

    __slots__ = ("_line", "_row", "checks", "func", "gen", "if_instruction", "if_task", "key",
                 "meta", "turns")

    def __init__(
        self, key: str, gen: Generation, checks: Sequence[CheckResult | PackedCheck],
        if_instruction: float | None, if_task: bool | None, func: FuncResult | None,
        turns: list[Sequence[CheckResult | PackedCheck]] | None, meta: dict[str, str],
    ) -> None:
        self.key, self.gen, self.checks = key, gen, checks
        self.if_instruction, self.if_task, self.func = if_instruction, if_task, func
        self.turns, self.meta = turns, meta
        self._line: str | None = None
        self._row: tuple[Any, ...] | None = None

    def prepare(self) -> None:
        """Make the line and the row now (in a thread ahead of the caller), kept for later."""
        self._line, self._row = self.line(), self.row()

    def sample(self) -> ScoredSample:
        """The scored record, validated (what :func:`score_batches` yields)."""
        gen = self.gen
        fields = {k: v for k, v in gen.model_dump().items() if k not in _SCORED_FIELDS}
        if "instructions" in fields:  # the validated refs, not dicts to validate again
            fields["instructions"] = gen.instructions
        meta = {**self.meta, "key": self.key}
        if generation_failed(gen):  # an error of its own: no checks, no tests, no rate
            return ScoredSample(**fields, status="error", meta=meta)
        turns = self.turns
        return ScoredSample(
            **fields,
            instruction_results=_models(self.checks),
            if_instruction=self.if_instruction,
            if_task=self.if_task,
            func=self.func,
            turn_results=[_models(turn) for turn in turns] if turns else None,
            meta=meta,
        )

    def line(self) -> str:
        """The record's JSONL line: ``record_line(self.sample())``, byte for byte, faster.

        The generation's fields come first, then what scoring adds, then the generation's
        protocol fields and unknown keys in their input order, as the record is written.
        Anything the fast way cannot write as the record would (a non-finite number,
        a value JSON has no type for) is written through the record instead.
        """
        if self._line is not None:
            return self._line
        gen = self.gen
        given = _generation_json(gen)
        data = {key: given[key] for key in _HEAD}
        failed = generation_failed(gen)
        if failed:
            data["status"] = "error"
        turns = None if failed else self.turns
        data.update({
            "instruction_results": [] if failed else _checks_json(self.checks),
            "if_instruction": None if failed else self.if_instruction,
            "if_task": None if failed else self.if_task,
            "func": None if failed or self.func is None else self.func.model_dump(mode="json"),
            "turn_results": [_checks_json(turn) for turn in turns] if turns else None,
            "meta": {**self.meta, "key": self.key},
        })
        for key, value in given.items():
            if key not in _DROPPED:
                data[key] = value
        try:
            return JSON_LINE.encode(data)
        except (TypeError, ValueError):  # written as the record writes it
            return record_line(self.sample())

    def row(self) -> tuple[Any, ...]:
        """The record's summary row: :func:`sample_row` of :meth:`sample`, faster."""
        if self._row is not None:
            return self._row
        failed = generation_failed(self.gen)
        errors = 0 if failed else sum(check[2] == "error" for check in _packed(self.checks))
        return _row(self.gen, failed, self.if_instruction, self.if_task, self.func, errors)


def _generation_json(gen: Generation) -> dict[str, Any]:
    """The generation as its JSON object (``model_dump(mode="json")``; plain ones directly)."""
    if type(gen) is not Generation or gen.__pydantic_extra__ or not _PLAIN.issuperset(
            gen.model_fields_set):
        return gen.model_dump(mode="json")
    return {"id": gen.id, "task_id": gen.task_id, "model": gen.model, "response": gen.response,
            "instructions": [{"id": ref.id, "params": ref.params} for ref in gen.instructions]}


_PLAIN = frozenset(_HEAD)
"""A generation given only these fields is written as them alone, in this order."""
