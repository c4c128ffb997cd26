"""A Gaussian belief about Bradley–Terry log-strengths: the fitted θ and its covariance.

:func:`belief_from_counts` makes the :class:`RatingBelief` that
:mod:`prefjudge.ranking.suggest` values judgments with, either ``laplace`` (the inverse
Fisher information at the fit, with a weak N(0, PRIOR_SD²) prior that makes it
invertible) or ``bootstrap`` (the sample covariance of bootstrap refits, the prior
variance for models without battles). Also the battle counts it is made from
(:func:`counts_from_battles`, :func:`with_models`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit

from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.ties import counts_ties

Uncertainty = Literal["laplace", "bootstrap"]


UNCERTAINTIES: tuple[str, ...] = ("laplace", "bootstrap")


#: Prior standard deviation of a log-strength (≈ 347 Elo): what a model with no battles
#: is believed to spread by. Weak next to any real evidence.
PRIOR_SD = 2.0


@dataclass(frozen=True)
class RatingBelief:
    """A Gaussian belief about the log-strengths.

    Attributes:
        models: Model names; positions index ``theta`` and ``cov``.
        theta: Fitted log-strength per model.
        cov: Covariance of the log-strengths, shape ``(models, models)``.
        source: ``laplace`` or ``bootstrap``.
    """

    models: tuple[str, ...]
    theta: np.ndarray
    cov: np.ndarray
    source: str


def empty_counts(models: Iterable[str]) -> bt.PairCounts:
    """Counts with no battle among ``models`` (sorted, duplicates dropped)."""
    names = tuple(sorted({str(m) for m in models}))
    none = np.zeros(0, dtype=np.int64)
    return bt.PairCounts(names, none, none, np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3)))


def with_models(counts: bt.PairCounts, models: Iterable[str] | None) -> bt.PairCounts:
    """The same battles over the union of their models and ``models``.

    Args:
        counts: Aggregated battles.
        models: Models that must appear even without battles (e.g. every model of an
            experiment, judged or not); None keeps ``counts`` as it is.

    Returns:
        Counts whose ``models`` are the sorted union; pairs are re-indexed.
    """
    if models is None:
        return counts
    names = tuple(sorted(set(counts.models) | {str(m) for m in models}))
    if names == counts.models:
        return counts
    position = {name: k for k, name in enumerate(names)}
    remap = np.array([position[name] for name in counts.models], dtype=np.int64)
    first, second = remap[counts.first], remap[counts.second]
    # sorted names keep first < second after the remap (both sides move monotonically)
    return bt.PairCounts(names, first, second, counts.counts, counts.weights)


def counts_from_battles(battles: pd.DataFrame, models: Iterable[str] | None = None
                        ) -> bt.PairCounts:
    """Aggregate a battles frame (``model_a, model_b, winner`` [, ``weight``]).

    Args:
        battles: One row per battle; may be empty.
        models: Models to include even without battles.

    Returns:
        The aggregated counts over every model.
    """
    if len(battles) == 0:
        return empty_counts(models or [])
    weight = battles["weight"] if "weight" in battles.columns else None
    counts = bt.aggregate(battles["model_a"], battles["model_b"], battles["winner"], weight)
    return with_models(counts, models)


def point_fit(counts: bt.PairCounts, ties: bt.TiePolicy = "half", alpha: float = 0.0
              ) -> bt.StrengthFit:
    """Fit log-strengths for suggesting, regularised only where the fit needs it.

    Plain maximum likelihood when the comparison graph is connected and every model won
    and lost somewhere; otherwise ``max(alpha, FALLBACK_ALPHA)`` so that a fit exists (a
    model without battles then sits near the mean).

    Args:
        counts: Aggregated battles (models without battles allowed).
        ties: Tie policy of the fit.
        alpha: Regularisation asked for.

    Returns:
        The fit (all zeros when there is no battle at all).
    """
    if len(counts.first) == 0:
        return bt.StrengthFit(np.zeros(counts.n_models))
    identified = (len(bt.comparison_components(counts, ties)) == 1
                  and len(bt.strength_groups(counts, ties)) == 1)
    used = alpha if alpha > 0 or identified else bt.FALLBACK_ALPHA
    return bt.fit_strengths(counts, ties, used)


def _pair_weights(counts: bt.PairCounts, ties: bt.TiePolicy) -> np.ndarray:
    """Summed battle weight per pair that informs the gap (ties left out under ``drop``)."""
    w = counts.weights
    return w.sum(axis=1) if counts_ties(ties) else w[:, bt.FIRST_WINS] + w[:, bt.SECOND_WINS]


def laplace_belief(counts: bt.PairCounts, theta: np.ndarray, *, ties: bt.TiePolicy = "half",
                   prior_sd: float = PRIOR_SD) -> RatingBelief:
    """Gaussian belief from the Fisher information of the Bradley–Terry fit.

    Args:
        counts: Aggregated battles.
        theta: Fitted log-strengths in ``counts.models`` order.
        ties: Tie policy (``drop`` leaves ties out of the information).
        prior_sd: Standard deviation of the N(0, prior_sd²) prior on each log-strength.

    Returns:
        The belief; its covariance is ``H⁻¹`` (see the module docstring).
    """
    n = counts.n_models
    theta = np.asarray(theta, dtype=float)
    p = expit(theta[counts.first] - theta[counts.second])
    info = _pair_weights(counts, ties) * p * (1 - p)
    hess = np.eye(n) / prior_sd**2
    np.add.at(hess, (counts.first, counts.second), -info)
    np.add.at(hess, (counts.second, counts.first), -info)
    np.add.at(hess, (counts.first, counts.first), info)
    np.add.at(hess, (counts.second, counts.second), info)
    cov = np.linalg.inv(hess)
    return RatingBelief(counts.models, theta, (cov + cov.T) / 2, "laplace")


def bootstrap_belief(counts: bt.PairCounts, theta: np.ndarray, samples: np.ndarray, *,
                     prior_sd: float = PRIOR_SD) -> RatingBelief:
    """Gaussian belief from bootstrap refits of the log-strengths.

    Args:
        counts: Aggregated battles.
        theta: Point log-strengths in ``counts.models`` order.
        samples: Refitted log-strengths, shape ``(resamples, models)`` (e.g.
            :func:`~prefjudge.ranking.bradley_terry.bootstrap_strengths`), at least 2 rows.
        prior_sd: Prior standard deviation given to models without any battle (their
            resamples carry no information about them).

    Returns:
        The belief; its covariance is the sample covariance of the refits.

    Raises:
        ValueError: When ``samples`` does not have one column per model, or fewer than 2
            rows.
    """
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] != counts.n_models or samples.shape[0] < 2:
        raise ValueError(f"expected at least 2 resamples of {counts.n_models} log-strengths, "
                         f"got an array of shape {samples.shape}")
    cov = np.cov(samples, rowvar=False).reshape(counts.n_models, counts.n_models)
    unseen = counts.model_battles() == 0
    cov[unseen, :] = 0.0
    cov[:, unseen] = 0.0
    cov[unseen, unseen] = prior_sd**2
    return RatingBelief(counts.models, np.asarray(theta, dtype=float), cov, "bootstrap")


def belief_from_counts(
    counts: bt.PairCounts,
    *,
    ties: bt.TiePolicy = "half",
    alpha: float = 0.0,
    uncertainty: Uncertainty = "laplace",
    n_resamples: int = 200,
    seed: int = 0,
    prior_sd: float = PRIOR_SD,
) -> RatingBelief:
    """Fit and build the belief in one call.

    Args:
        counts: Aggregated battles (models without battles allowed).
        ties: Tie policy of the fit.
        alpha: Regularisation asked for (see :func:`point_fit`).
        uncertainty: ``laplace`` or ``bootstrap``.
        n_resamples: Bootstrap resamples (``bootstrap`` only; at least 2).
        seed: Bootstrap seed.
        prior_sd: Prior standard deviation of a log-strength.

    Returns:
        The belief.

    Raises:
        ValueError: On an unknown ``uncertainty``.
    """
    if uncertainty not in UNCERTAINTIES:
        raise ValueError(f"unknown uncertainty {uncertainty!r}; expected one of {UNCERTAINTIES}")
    point = point_fit(counts, ties, alpha)
    if uncertainty == "laplace" or len(counts.first) == 0:
        return laplace_belief(counts, point.theta, ties=ties, prior_sd=prior_sd)
    boot_alpha = alpha if alpha > 0 or len(bt.comparison_components(counts, ties)) == 1 \
        else bt.FALLBACK_ALPHA
    boot = bt.bootstrap_strengths(counts, point, ties, boot_alpha,
                                  n_resamples=max(n_resamples, 2), seed=seed)
    return bootstrap_belief(counts, point.theta, boot.theta, prior_sd=prior_sd)
