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

    reason: str = Field(default="", max_length=800)
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
# The grammar then admits only the pair's criterion ids, exactly one entry per criterion,
# and bounded reasons: a small model cannot invent criteria or ramble until max_tokens.

REASON_MAX = 400
CRITERION_MAX = 300


def _ids(ids: tuple[str, ...]) -> Any:
    return Literal[ids]  # type: ignore[valid-type]


@lru_cache(maxsize=512)
def criteria_schema(n_min: int, n_max: int) -> type[BaseModel]:
    """Stage 1 reply: between ``n_min`` and ``n_max`` criteria of bounded length."""
    text = Annotated[str, Field(min_length=3, max_length=CRITERION_MAX)]
    return create_model(
        "CriteriaReply",
        __base__=_Reply,
        criteria=(list[text], Field(min_length=n_min, max_length=n_max)),  # type: ignore[valid-type]
    )


@lru_cache(maxsize=512)
def criterion_judge_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stages 2–4 reply: one verdict per criterion id, ids restricted to ``ids``."""
    item = create_model(
        "CriterionJudgement",
        __base__=_Reply,
        id=(_ids(ids), ...),
        reason=(str, Field(default="", max_length=REASON_MAX)),
        verdict=(CriterionChoice, ...),
    )
    return create_model(
        "CriterionJudgeReply",
        __base__=_Reply,
        verdicts=(list[item], Field(min_length=len(ids), max_length=len(ids))),  # type: ignore[valid-type]
    )


@lru_cache(maxsize=512)
def refine_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stage 4 reply: at most one split of at most two sub-criteria per tied criterion."""
    text = Annotated[str, Field(min_length=3, max_length=CRITERION_MAX)]
    split = create_model(
        "Split",
        __base__=_Reply,
        id=(_ids(ids), ...),
        sub_criteria=(list[text], Field(default_factory=list, max_length=2)),  # type: ignore[valid-type]
    )
    return create_model(
        "RefineReply",
        __base__=_Reply,
        splits=(list[split], Field(default_factory=list, max_length=len(ids))),  # type: ignore[valid-type]
    )


@lru_cache(maxsize=512)
def final_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Stage 5 reply: decisive criterion ids (from ``ids``), a reason and a verdict."""
    decisive: Any = list[_ids(ids)] if ids else list[str]
    return create_model(
        "FinalReply",
        __base__=_Reply,
        decisive=(decisive, Field(default_factory=list, max_length=min(5, len(ids)))),
        reason=(str, Field(default="", max_length=2 * REASON_MAX)),
        verdict=(Choice, ...),
    )


@lru_cache(maxsize=512)
def pointwise_schema(ids: tuple[str, ...]) -> type[BaseModel]:
    """Pointwise reply: one 1–5 score per criterion id."""
    item = create_model(
        "CriterionScore",
        __base__=_Reply,
        id=(_ids(ids), ...),
        reason=(str, Field(default="", max_length=REASON_MAX)),
        score=(int, Field(ge=1, le=5)),
    )
    return create_model(
        "PointwiseReply",
        __base__=_Reply,
        scores=(list[item], Field(min_length=len(ids), max_length=len(ids))),  # type: ignore[valid-type]
    )
