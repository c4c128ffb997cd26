"""Battles and ratings: what ``judge`` hands ``rank``, and what ``rank`` writes.

:class:`Battle` builds its validator on first use (``defer_build``): ``judge``, which
imports it with the verdicts, builds it only when a verdict is made a battle.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from prefjudge.records.names import ModelName, Winner


class Battle(BaseModel):
    """One pairwise comparison between two models: what ``judge`` writes, ``rank`` reads.

    A :class:`Verdict` gives its battle with :meth:`Verdict.battle`; ``prefjudge rank``
    reads battles from verdict files, arena CSV/JSONL and other tables into this record
    (:mod:`prefjudge.ranking.inputs`).

    Attributes:
        model_a: The first model (Unicode NFC, not blank).
        model_b: The second model, not the same as ``model_a``.
        winner: ``model_a``, ``model_b`` or ``tie``.
        weight: How much the battle counts (finite, >= 0).
        category: A grouping for per-category leaderboards (``rank --by``).
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    model_a: ModelName = Field(pattern=r"\S")
    model_b: ModelName = Field(pattern=r"\S")
    winner: Winner
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    category: str | None = None

    @model_validator(mode="after")
    def _two_models(self) -> Battle:
        if self.model_a == self.model_b:
            raise PydanticCustomError(
                "same_model", "model_a and model_b are the same model {name}",
                {"name": repr(self.model_a)},
            )
        return self


class Rating(BaseModel):
    """A model's place on a leaderboard (one row of ``prefjudge rank``'s output).

    Attributes:
        model: Model name as it appears in the battles.
        rating: Elo points (``400/ln 10 · θ`` plus an offset) or, with ``--scale bt``, the
            Bradley–Terry strength normalised so that all strengths sum to 1.
        lower: Lower end of the bootstrap 95 % interval of ``rating``.
        upper: Upper end of the bootstrap 95 % interval of ``rating``.
        rank: 1 + the number of models with a strictly higher rating.
        rank_lower: Best rank the model reaches in the central 95 % of bootstrap resamples.
        rank_upper: Worst rank the model reaches in the central 95 % of bootstrap resamples.
        battles: Battles the model took part in (sum of weights), ties included.
        win_rate: ``(wins + ties / 2) / battles``.
        category: Category of the leaderboard (``--by``); None for a single leaderboard.
    """

    model: str
    rating: float
    lower: float
    upper: float
    rank: int
    rank_lower: int
    rank_upper: int
    battles: float
    win_rate: float
    category: str | None = None
