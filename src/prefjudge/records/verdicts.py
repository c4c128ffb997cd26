"""Verdict records: the judgement of one pair, and the one rule of the battle it counts as."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.records.battles import Battle
from prefjudge.records.names import (
    CriterionOutcome,
    EvidenceKind,
    FactOutcome,
    JudgeMethodName,
    ModelName,
    Side,
    Winner,
)
from prefjudge.records.usage import ItemCost, Usage

NO_EVIDENCE = "evidence:none"
"""``decided_by`` of an evidence verdict for which no kind of evidence could be had: a tie
by default, but not a battle (nothing was compared)."""

VERDICT_KEYS = frozenset({"pair_id", "method", "model_a"})
"""Keys that tell a :class:`Verdict` among the records of a file (:func:`is_verdict_row`)."""

BATTLE_FIELDS = frozenset({"pair_id", "task_id", "model_a", "model_b", "method", "status",
                           "winner", "category", "error", "decided_by"})
"""The fields of a verdict that decide its battle (read by :meth:`Verdict.from_row`)."""


def is_verdict_row(row: Mapping[str, Any]) -> bool:
    """Whether a record read from a file is a ``prefjudge`` verdict.

    A verdict carries ``pair_id``, ``method`` and ``model_a`` (a pair has no ``method``, a
    plain battle row no ``pair_id``).

    Args:
        row: One record as read (column or key → value).

    Returns:
        True when the record holds every key of :data:`VERDICT_KEYS`.
    """
    return VERDICT_KEYS <= row.keys()


class Fact(BaseModel):
    """One kind of evidence weighed by the evidence judge, and what it showed.

    Attributes:
        kind: ``correctness``, ``efficiency``, ``security`` or ``instructions``.
        outcome: ``A`` or ``B`` (that side is better on this kind), ``tie`` (the facts do
            not separate them), ``insufficient`` (the facts cannot be had for this pair,
            e.g. no tests for its task, or a side that does not run) or ``error`` (the
            analysis itself failed: never counted as a tie).
        fact: What was found, in words (the sentence a user reads).
        detail: Measurements behind it (statuses, timings, findings), as plain values.
        source: Where it came from: ``""`` (judged here; not written) or the results it
            was built on, side by side (``A: scores m1.jsonl; B: judged here``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: EvidenceKind
    outcome: FactOutcome
    fact: str
    detail: dict[str, Any] = Field(default_factory=dict)
    source: str = Field(default="", exclude_if=lambda value: not value)


class Criterion(BaseModel):
    """One atomic, judgeable criterion on which two responses may differ.

    Attributes:
        id: Short key, unique within a pair (``c1``, ``c2``, ...; ``c3.1`` for a refinement).
        text: The criterion, phrased so that a reader can decide which response meets it better.
        parent: The tied criterion this one refines, if any.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    parent: str | None = None


class CriterionVerdict(BaseModel):
    """A criterion's verdict in both presentation orders, mapped back to the pair's A and B.

    Attributes:
        criterion: The criterion.
        forward: Verdict with A shown first (``None`` when the judge gave none).
        swapped: Verdict with B shown first, already mapped back to the pair's labels.
        outcome: The verdict that survives the swap, or ``None`` when the two orders disagree
            or either is missing (then the criterion is dropped).
        reason_forward: The judge's reason in the forward order.
        reason_swapped: The judge's reason in the swapped order.
    """

    model_config = ConfigDict(extra="forbid")

    criterion: Criterion
    forward: CriterionOutcome | None = None
    swapped: CriterionOutcome | None = None
    outcome: CriterionOutcome | None = None
    reason_forward: str = ""
    reason_swapped: str = ""

    @property
    def consistent(self) -> bool:
        """Whether both orders gave the same verdict."""
        return self.forward is not None and self.forward == self.swapped


class Verdict(BaseModel):
    """The judgement of one pair; :meth:`battle` is what ``prefjudge rank`` counts.

    Attributes:
        pair_id: The pair's key.
        task_id: The pair's task.
        model_a: Who wrote response A.
        model_b: Who wrote response B.
        method: ``criteralign``, ``monolithic``, ``pointwise``, ``evidence`` or ``hybrid``.
        status: ``ok``, or ``error`` when a stage failed for this pair (then ``winner`` is
            None and ``error`` says which stage and why; the pair is never counted as a tie).
        winner: ``model_a``, ``model_b`` or ``tie`` (the battle outcome), None on error.
        preferred: The same as ``A``/``B``/``tie``.
        orders: Per-order raw final verdicts, already mapped back to A/B: ``forward`` and
            ``swapped``.
        position_consistent: Whether both orders agreed on the final verdict.
        reasons: The judge's reasons per order.
        criteria: Criterion verdicts (criteralign and pointwise); empty for monolithic.
        decisive: Ids of the criteria the synthesis named as decisive.
        inconsistency_rate: Share of criteria whose verdict flipped under the swap.
        refined: Number of tied criteria that were split into sub-criteria.
        scores: Pointwise totals per side (pointwise only).
        label: The human label, copied from the pair when it has one.
        category: The pair's category.
        error: What went wrong (stage and reason), when ``status`` is ``error``.
        warnings: Non-fatal problems (e.g. a failed tie refinement: the verdict stands
            without it).
        judge_model: The backend's model identity.
        guidance: Name and content hash of the guidance used, if any.
        evidence: Whether deterministic evidence was given to the judge.
        cost: Requests, model calls, cache hits, tokens and errors spent on this pair.
        facts: What each evidence kind showed (``evidence`` and ``hybrid``), in the order
            they were weighed.
        decided_by: Which path decided the verdict: ``evidence:<kind>`` (a fact) or
            ``llm`` (the judge model, for ``hybrid`` when the facts did not separate the
            two); None for the purely model-based methods.
        features_a: Style features of response A (``token_len``, ``header_count``,
            ``list_count``, ``bold_count``), carried into battles for ``rank --control``.
        features_b: The same for response B.
        features_by: How the features were counted (the tokenizer used for ``token_len``).
    """

    model_config = ConfigDict(extra="forbid")

    pair_id: str
    task_id: str
    model_a: ModelName
    model_b: ModelName
    method: JudgeMethodName
    status: Literal["ok", "error"] = "ok"
    winner: Winner | None = None
    preferred: Side | None = None
    orders: dict[str, Side | None] = Field(default_factory=dict)
    position_consistent: bool | None = None
    reasons: dict[str, str] = Field(default_factory=dict)
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    decisive: list[str] = Field(default_factory=list)
    inconsistency_rate: float | None = None
    refined: int = 0
    scores: dict[str, float] = Field(default_factory=dict)
    label: Side | None = None
    category: str | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    judge_model: str = ""
    guidance: str | None = None
    evidence: bool = False
    cost: ItemCost = Field(default_factory=Usage)
    facts: list[Fact] = Field(default_factory=list)
    decided_by: str | None = None
    features_a: dict[str, float] | None = None
    features_b: dict[str, float] | None = None
    features_by: str | None = None

    def battle(self) -> Battle | None:
        """Return this verdict as the battle ``prefjudge rank`` counts.

        Returns:
            The battle (the pair's models, the winner and the category, weight 1, and the
            responses' style features when known), or None when judging failed (an error is
            never counted, not even as a tie) or when no evidence could be had
            (:data:`NO_EVIDENCE`).

        Raises:
            pydantic.ValidationError: When both sides are the same model (no battle to count).
        """
        if self.winner is None or self.decided_by == NO_EVIDENCE:
            return None
        features = {}
        if self.features_a is not None and self.features_b is not None:
            features = {"features_a": self.features_a, "features_b": self.features_b}
        return Battle(model_a=self.model_a, model_b=self.model_b, winner=self.winner,
                      category=self.category, **features)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Verdict:
        """Read a verdict row of a file for its battle: the fields that decide it, validated.

        Only :data:`BATTLE_FIELDS` are read, so a verdict's other fields (criteria, facts,
        reasons, style features) and any column a user added never stop it from being
        counted; the result is a verdict holding those fields alone, whose :meth:`battle`
        is the row's battle (without style features: readers that need them read them).

        Args:
            row: One verdict as read from a file (key → value).

        Returns:
            The verdict, with the defaults for every field not read.

        Raises:
            pydantic.ValidationError: When a field read is not a verdict's (a required one
                missing, an unknown method or status, a winner other than ``model_a``,
                ``model_b``, ``tie``).
        """
        return cls.model_validate({key: row[key] for key in BATTLE_FIELDS if key in row})


def battle_of(row: Mapping[str, Any]) -> Battle | None:
    """The battle a verdict row of a file counts as: ``Verdict.from_row(row).battle()``.

    Every reader that turns verdict records into battles (``rank``, ``rank --suggest`` and
    ``--control``, the experiment's judge rounds and leaderboard) goes through here, so the
    rule of :meth:`Verdict.battle` holds everywhere: an error is not a battle, nor is a
    verdict decided by no evidence (:data:`NO_EVIDENCE`).

    Args:
        row: One verdict as read from a file (key → value).

    Returns:
        The battle (without style features), or None when the verdict is not one.

    Raises:
        pydantic.ValidationError: When the row is not a valid verdict, or names one model twice.
    """
    return Verdict.from_row(row).battle()
