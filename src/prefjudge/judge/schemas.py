"""Pydantic schemas of the judge's structured replies (sent as JSON schemas to the model).

Field order matters: reasons come before verdicts, so a model writes its reason first.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

Choice = Literal["A", "B", "tie"]
CriterionChoice = Literal["A", "B", "tie", "insufficient"]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class MonolithicReply(_Reply):
    """Baseline: one verdict for the whole pair in one order."""

    reason: str = Field(max_length=800)
    verdict: Choice


class RationaleReply(_Reply):
    """HPAG: why the humans preferred what they did, and what the judge missed."""

    rationale: str = Field(max_length=1200)
    overlooked: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=5
    )
    criteria_lesson: str = Field(default="", max_length=400)
    judging_lesson: str = Field(default="", max_length=400)
    final_lesson: str = Field(default="", max_length=400)


Lesson = Annotated[str, Field(min_length=3, max_length=300)]


class DistilReply(_Reply):
    """HPAG: guidance bullets per stage."""

    criteria: list[Lesson] = Field(default_factory=list, max_length=5)
    judging: list[Lesson] = Field(default_factory=list, max_length=5)
    final: list[Lesson] = Field(default_factory=list, max_length=5)


# -- schemas specialised to one pair's criteria ---------------------------------------------
# Per-criterion answers are objects keyed by criterion id, every id required: the grammar
# then makes the model answer each criterion exactly once (no invented, repeated or missing
# ids), and bounded reasons stop a small model from rambling until max_tokens.

REASON_MAX = 400
CRITERION_MAX = 300


def _ids(ids: tuple[str, ...]) -> Any:
    return Literal[ids]  # type: ignore[valid-type]


def keyed(name: str, ids: tuple[str, ...], value: Any) -> type[BaseModel]:
    """A model with one required field per id (the id is the JSON key), in order.

    Args:
        name: The model's name.
        ids: The keys (criterion or dimension ids; may contain dots).
        value: The type of every value.

    Returns:
        The model class; read it back with :func:`keyed_items`.
    """
    fields = {f"k{i}": (value, Field(alias=key)) for i, key in enumerate(ids)}
    return create_model(
        name,
        __config__=ConfigDict(extra="forbid", populate_by_name=True),
        **fields,  # type: ignore[call-overload]
    )


def keyed_items(obj: BaseModel) -> list[tuple[str, Any]]:
    """The ``(id, value)`` pairs of a :func:`keyed` model, in schema order."""
    return [
        (info.alias or name, getattr(obj, name)) for name, info in type(obj).model_fields.items()
    ]


@lru_cache(maxsize=512)
def criteria_schema(n_min: int, n_max: int) -> type[BaseModel]:
    """Stage 1 reply: between ``n_min`` and ``n_max`` criteria of bounded length."""
    text = Annotated[str, Field(min_length=3, max_length=CRITERION_MAX)]
    return create_model(
        "CriteriaReply",
        __base__=_Reply,
        criteria=(list[text], Field(min_length=n_min, max_length=n_max)),  # type: ignore[valid-type]
    )


def _judgement(choice: Any) -> type[BaseModel]:
    return create_model(
        "Judgement",
        __base__=_Reply,
        reason=(str, Field(max_length=REASON_MAX)),
        verdict=(choice, ...),
    )


@lru_cache(maxsize=512)
def criterion_judge_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stages 2–4 reply: ``verdicts`` keyed by criterion id, one reason and verdict each."""
    return create_model(
        "CriterionJudgeReply",
        __base__=_Reply,
        verdicts=(keyed("CriterionVerdicts", ids, _judgement(CriterionChoice)), ...),
    )


@lru_cache(maxsize=512)
def refine_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stage 4 reply: ``splits`` keyed by tied criterion id, at most two sub-criteria each."""
    text = Annotated[str, Field(min_length=3, max_length=CRITERION_MAX)]
    subs = Annotated[list[text], Field(max_length=2)]  # type: ignore[valid-type]
    return create_model("RefineReply", __base__=_Reply, splits=(keyed("Splits", ids, subs), ...))


@lru_cache(maxsize=512)
def final_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stage 5 reply: decisive criterion ids (from ``ids``), a reason and a verdict."""
    decisive: Any = list[_ids(ids)] if ids else list[str]
    return create_model(
        "FinalReply",
        __base__=_Reply,
        decisive=(decisive, Field(default_factory=list, max_length=min(5, len(ids)))),
        reason=(str, Field(max_length=2 * REASON_MAX)),
        verdict=(Choice, ...),
    )


@lru_cache(maxsize=512)
def pointwise_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Pointwise reply: ``scores`` keyed by criterion id, a reason and a 1–5 score each."""
    score = create_model(
        "Score",
        __base__=_Reply,
        reason=(str, Field(max_length=REASON_MAX)),
        score=(int, Field(ge=1, le=5)),
    )
    return create_model(
        "PointwiseReply", __base__=_Reply, scores=(keyed("Scores", ids, score), ...)
    )


@lru_cache(maxsize=64)
def dimension_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Persona comparison reply: ``verdicts`` keyed by dimension id (A, B or tie each)."""
    return create_model(
        "DimensionReply",
        __base__=_Reply,
        verdicts=(keyed("DimensionVerdicts", ids, _judgement(Choice)), ...),
    )
