"""Scored records: a generation with its checks and tests (``score`` → ``report``).

:func:`is_scored_record` is the one rule of what a scored record is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from prefjudge.records.generations import _PROTOCOL_FIELDS, Generation
from prefjudge.records.names import CheckStatus, FuncStatus


class CheckResult(BaseModel):
    """The outcome of one instruction check on one response."""

    id: str
    params: dict[str, Any] = Field(default_factory=dict)
    status: CheckStatus
    reason: str = ""


class SetResult(BaseModel):
    """The outcome on one input set of a HumanEval+/MBPP+ task, judged on its own.

    EvalPlus runs a sample on the base inputs and, separately, on the plus inputs, and
    reports ``base_status`` and ``plus_status``; prefjudge keeps the same two outcomes.

    Attributes:
        status: ``pass`` when every input of the set matched the reference.
        detail: Why not, when it did not.
        failed: Indexes (in the set) of the inputs that did not match, as EvalPlus lists
            them in ``base_fail_tests`` / ``plus_fail_tests``.
    """

    status: FuncStatus
    detail: str = ""
    failed: list[int] = Field(default_factory=list)


class FuncResult(BaseModel):
    """The outcome of running one response against its task's tests.

    Attributes:
        status: The verdict on the whole task (for HumanEval+/MBPP+: base and plus).
        detail: Why, in a line or a few.
        sets: For HumanEval+/MBPP+ only: the outcome on each input set (``base``,
            ``plus``) on its own; ``status`` is ``pass`` only when both pass.
    """

    status: FuncStatus
    detail: str = ""
    sets: dict[str, SetResult] | None = Field(default=None, exclude_if=lambda value: value is None)


class ScoredSample(Generation):
    """A generation plus its instruction results and functional result.

    Attributes:
        status: ``error`` for a generation whose model call failed
            (:func:`generation_failed`): it was neither verified nor tested, ``error`` says
            why, and no rate counts it. Written only then (``ok`` is not written).
    """

    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = _PROTOCOL_FIELDS | {"status"}

    status: Literal["ok", "error"] = "ok"
    instruction_results: list[CheckResult] = Field(default_factory=list)
    if_instruction: float | None = None
    if_task: bool | None = None
    func: FuncResult | None = None
    turn_results: list[list[CheckResult]] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


SCORED_FIELDS = frozenset({"instruction_results", "func", "if_instruction", "if_task"})
"""Fields only a ``prefjudge score`` record has (a generation record has none of them)."""


def is_scored_record(record: Mapping[str, Any]) -> bool:
    """Whether a record is a ``prefjudge score`` record: it has one of :data:`SCORED_FIELDS`.

    The one rule of what a scored record is, for every reader that tells records apart
    (``prefjudge view``, ``prefjudge correlate --scores``).

    Args:
        record: One JSON object as read.

    Returns:
        True when any scored field is present (even null).
    """
    return not SCORED_FIELDS.isdisjoint(record.keys())
