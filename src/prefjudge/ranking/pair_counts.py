"""Battles aggregated into weighted counts per unordered model pair and outcome.

:func:`aggregate` turns battles into a :class:`PairCounts` (first wins, second wins, tie,
each with its summed weight); nothing downstream of it looks at single battles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from prefjudge.ranking.ties import TIE_POLICIES, TiePolicy, tie_share

__all__ = [
    "FIRST_WINS",
    "SECOND_WINS",
    "TIE",
    "TIE_POLICIES",
    "PairCounts",
    "Scale",
    "TiePolicy",
    "aggregate",
    "winner_codes",
]

Scale = Literal["elo", "bt"]


FIRST_WINS, SECOND_WINS, TIE = 0, 1, 2


_WINNER_CODES = {"model_a": 0, "model_b": 1, "tie": 2}


@dataclass(frozen=True)
class PairCounts:
    """Battles aggregated per unordered model pair and outcome.

    Attributes:
        models: Model names; positions are the model indices used everywhere else.
        first: Index of the first model of each pair (``first < second``).
        second: Index of the second model of each pair.
        counts: Number of battles per pair and outcome, shape ``(pairs, 3)``, columns
            first wins, second wins, tie.
        weights: Summed battle weights per pair and outcome, same shape.
    """

    models: tuple[str, ...]
    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray
    weights: np.ndarray

    @property
    def n_models(self) -> int:
        """Number of models."""
        return len(self.models)

    @property
    def n_battles(self) -> int:
        """Number of battles (unweighted)."""
        return int(self.counts.sum())

    def model_battles(self) -> np.ndarray:
        """Battles (summed weights, ties included) per model."""
        per_pair = self.weights.sum(axis=1)
        return _scatter(self.first, per_pair, self.n_models) + _scatter(
            self.second, per_pair, self.n_models
        )

    def model_win_rate(self) -> np.ndarray:
        """``(wins + ties/2) / battles`` per model (NaN for a model without battles)."""
        w = self.weights
        points = _scatter(self.first, w[:, FIRST_WINS] + w[:, TIE] / 2, self.n_models)
        points += _scatter(self.second, w[:, SECOND_WINS] + w[:, TIE] / 2, self.n_models)
        battles = self.model_battles()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(battles > 0, points / battles, np.nan)

    def resample(self, rng: np.random.Generator) -> PairCounts:
        """Draw one multinomial bootstrap resample of the cell counts.

        Args:
            rng: Random generator.

        Returns:
            Counts with the same pairs; each cell keeps its mean battle weight.
        """
        flat = self.counts.ravel()
        total = int(flat.sum())
        drawn = rng.multinomial(total, flat / total).reshape(self.counts.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_weight = np.where(self.counts > 0, self.weights / self.counts, 0.0)
        return PairCounts(self.models, self.first, self.second, drawn, drawn * mean_weight)

    def win_matrix(self, ties: TiePolicy) -> np.ndarray:
        """Dense matrix ``M[i, j]`` = weighted wins of i over j under a tie policy.

        Args:
            ties: ``half`` adds half of each tie to both sides; ``drop`` and ``davidson``
                leave ties out.

        Returns:
            An ``(n, n)`` float matrix.
        """
        n = self.n_models
        share = tie_share(ties)
        matrix = np.zeros((n, n))
        matrix[self.first, self.second] = self.weights[:, FIRST_WINS] + share * self.weights[:, TIE]
        matrix[self.second, self.first] = (
            self.weights[:, SECOND_WINS] + share * self.weights[:, TIE]
        )
        return matrix


def _scatter(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(index, weights=values, minlength=size).astype(float)


def winner_codes(winner: Sequence[str] | np.ndarray) -> np.ndarray:
    """Map winner labels ``model_a``/``model_b``/``tie`` to codes 0/1/2.

    Args:
        winner: Labels, or codes already.

    Returns:
        Integer codes.

    Raises:
        ValueError: On any other label.
    """
    array = np.asarray(winner)
    if np.issubdtype(array.dtype, np.integer):
        if array.size and (array.min() < 0 or array.max() > 2):
            raise ValueError("winner codes must be 0 (model_a), 1 (model_b) or 2 (tie)")
        return array.astype(np.int64)
    codes = pd.Series(array, dtype=object).map(_WINNER_CODES)
    if codes.isna().any():
        bad = sorted({str(v) for v in array[codes.isna().to_numpy()]})[:5]
        raise ValueError(f"unknown winner label(s) {bad}; expected model_a, model_b or tie")
    return codes.to_numpy(dtype=np.int64)


def aggregate(
    model_a: Sequence[str] | np.ndarray,
    model_b: Sequence[str] | np.ndarray,
    winner: Sequence[str] | np.ndarray,
    weight: Sequence[float] | np.ndarray | None = None,
) -> PairCounts:
    """Aggregate battles into counts per unordered pair and outcome.

    Args:
        model_a: First model of each battle.
        model_b: Second model of each battle.
        winner: ``model_a``, ``model_b`` or ``tie`` per battle (or codes 0/1/2).
        weight: Optional non-negative weight per battle (default 1).

    Returns:
        The aggregated counts; models are sorted by name.

    Raises:
        ValueError: On mismatched lengths, a battle of a model against itself, or a
            negative or non-finite weight.
    """
    a = np.asarray(model_a, dtype=object)
    b = np.asarray(model_b, dtype=object)
    outcome = winner_codes(winner)
    size = len(a)
    if not (len(b) == size == len(outcome)):
        raise ValueError("model_a, model_b and winner must have the same length")
    weights = np.ones(size) if weight is None else np.asarray(weight, dtype=float)
    if len(weights) != size:
        raise ValueError("weight must have one value per battle")
    if size and (not np.all(np.isfinite(weights)) or weights.min() < 0):
        raise ValueError("battle weights must be finite and non-negative")
    codes, names = pd.factorize(np.concatenate([a, b]), sort=True)
    ia, ib = codes[:size], codes[size:]
    if np.any(ia == ib):
        raise ValueError("a battle of a model against itself carries no information")
    n = len(names)
    swapped = ia > ib
    first = np.where(swapped, ib, ia).astype(np.int64)
    second = np.where(swapped, ia, ib).astype(np.int64)
    oriented = np.where(swapped & (outcome < TIE), 1 - outcome, outcome)
    pair_key = first * n + second
    pairs, pair_index = np.unique(pair_key, return_inverse=True)
    counts = np.zeros((len(pairs), 3), dtype=np.int64)
    summed = np.zeros((len(pairs), 3))
    np.add.at(counts, (pair_index, oriented), 1)
    np.add.at(summed, (pair_index, oriented), weights)
    return PairCounts(
        models=tuple(str(name) for name in names),
        first=(pairs // n).astype(np.int64),
        second=(pairs % n).astype(np.int64),
        counts=counts,
        weights=summed,
    )
