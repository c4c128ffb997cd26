"""Bradley–Terry leaderboards from pairwise battles: fit, Elo scale, bootstrap intervals.

Pure functions over arrays and data frames; nothing here prints or touches the disk.
This module makes the leaderboard (steps 4 and 5); the counts (:mod:`.pair_counts`), the
identifiability checks and errors (:mod:`.comparison_graph`) and the fit and bootstrap
(:mod:`.bt_fit`) have their own modules, re-exported here.

How a leaderboard is made:

1. :func:`aggregate` turns battles into weighted counts per unordered model pair and
   outcome (first wins, second wins, tie). Nothing downstream looks at single battles.
2. :func:`fit_strengths` fits log-strengths θ (one per model, mean 0) on those counts.
   Ties follow one of three policies:

   * ``half`` (default): a tie is half a win for each side; choix's I-LSR on the dense
     win matrix gives the maximum-likelihood Bradley–Terry estimate,
     ``P(i beats j) = 1 / (1 + exp(θ_j − θ_i))``.
   * ``drop``: ties are ignored; the same fit on decisive battles only.
   * ``davidson``: Davidson's (1970) tie model, ``P(i beats j) = π_i / D``,
     ``P(tie) = ν √(π_i π_j) / D`` with ``D = π_i + π_j + ν √(π_i π_j)`` and
     ``π = exp(θ)``. choix has no tie model, so θ and ν are fitted by maximum
     likelihood: Newton's method on the (convex) aggregated likelihood with analytic
     gradient and Hessian, started from the ``half`` fit.

3. Whether a fit is meaningful is checked before fitting:

   * Disconnected comparison graph (no chain of battles links two groups of models):
     the groups' relative strength is not estimable, so :class:`DisconnectedGraphError`
     lists the components. ``allow_disconnected=True`` with ``alpha > 0`` opts into a
     regularised joint fit, in which only the regulariser places the components
     relative to each other (their cross-component gaps carry no evidence).
   * Connected, but some group of models never lost to (or never beat) anyone outside
     it: the maximum-likelihood strengths are infinite. :class:`UnboundedStrengthError`
     lists the groups, from the top, unless ``alpha > 0`` regularises the fit.

   ``alpha`` is choix's I-LSR regulariser (a constant added to every transition rate of
   the spectral Markov chain; it pulls strengths together and makes every fit unique).
   For ``davidson`` the same name sets the Gaussian penalty ``alpha·n/2·Σ(θ − θ̄)²``,
   which matches I-LSR's pull to first order for small strength differences.

4. Elo scale: ``rating = base + 400/ln 10 · (θ − mean θ)`` (``base`` = 1000 by default),
   or, anchored on a model M, ``rating = R + 400/ln 10 · (θ − θ_M)``. A 400-point gap
   means 10:1 odds of winning. ``scale="bt"`` reports ``exp(θ) / Σ exp(θ)`` instead.
5. Uncertainty: a multinomial bootstrap of the aggregated counts (the number of
   battles in each pair × outcome cell is redrawn from Multinomial(N, cell counts / N),
   each cell keeping its mean weight), refitted warm-started from the point estimate.
   A resample in which some model never won or never lost has no finite
   maximum-likelihood fit when ``alpha = 0``; it is refitted with
   :data:`FALLBACK_ALPHA` and counted in ``degenerate_resamples``. Rating intervals are
   percentile intervals; rank intervals are the central quantiles of each model's
   bootstrap rank, taken outward to observed ranks ("could be ranked from 2 to 5"); both
   are read off the resamples by :mod:`prefjudge.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from prefjudge.ranking.bt_fit import (
    FALLBACK_ALPHA,
    BootstrapFits,
    StrengthFit,
    bootstrap_strengths,
    fit_strengths,
)
from prefjudge.ranking.comparison_graph import (
    REGULARISE,
    DisconnectedGraphError,
    RankError,
    TooFewModelsError,
    UnboundedStrengthError,
    check_fit_possible,
    comparison_components,
    strength_groups,
)
from prefjudge.ranking.pair_counts import (
    FIRST_WINS,
    SECOND_WINS,
    TIE,
    PairCounts,
    Scale,
    aggregate,
    winner_codes,
)
from prefjudge.ranking.ties import TIE_POLICIES, TiePolicy
from prefjudge.stats import percentile_bands

__all__ = [
    "DEFAULT_BASE",
    "ELO_PER_LOGIT",
    "FALLBACK_ALPHA",
    "FIRST_WINS",
    "REGULARISE",
    "SECOND_WINS",
    "TIE",
    "TIE_POLICIES",
    "BootstrapFits",
    "DisconnectedGraphError",
    "Leaderboard",
    "PairCounts",
    "RankError",
    "Scale",
    "StrengthFit",
    "TiePolicy",
    "TooFewModelsError",
    "UnboundedStrengthError",
    "aggregate",
    "bootstrap_strengths",
    "check_fit_possible",
    "comparison_components",
    "competition_ranks",
    "fit_strengths",
    "leaderboard",
    "leaderboards_by_group",
    "rating_table",
    "strength_groups",
    "to_scale",
    "winner_codes",
]

#: Elo points per unit of Bradley–Terry log-strength: 400 / ln 10 ≈ 173.72.
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: Mean rating of a leaderboard that has no anchor.
DEFAULT_BASE = 1000.0

_COLUMNS = ["model", "rating", "lower", "upper", "rank", "rank_lower", "rank_upper",
            "battles", "win_rate"]


def to_scale(
    theta: np.ndarray,
    models: Sequence[str],
    scale: Scale = "elo",
    *,
    anchor: tuple[str, float] | None = None,
    base: float = DEFAULT_BASE,
) -> np.ndarray:
    """Put log-strengths on the reported scale.

    ``elo``: ``base + 400/ln 10 · (θ − mean θ)``, or ``R + 400/ln 10 · (θ − θ_M)`` with
    ``anchor=(M, R)``. ``bt``: ``exp(θ) / Σ exp(θ)``.

    Args:
        theta: Log-strengths, shape ``(models,)`` or ``(resamples, models)``.
        models: Model names (for the anchor).
        scale: ``elo`` or ``bt``.
        anchor: ``(model, rating)`` pinning one model's Elo rating.
        base: Mean Elo rating when there is no anchor.

    Returns:
        Ratings with the shape of ``theta``.

    Raises:
        ValueError: On an anchor model that is not in ``models``, or an anchor with ``bt``.
    """
    theta = np.asarray(theta, dtype=float)
    if scale == "bt":
        if anchor is not None:
            raise ValueError("an anchor applies to the Elo scale only, not to --scale bt")
        shifted = np.exp(theta - theta.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)
    if scale != "elo":
        raise ValueError(f"unknown scale {scale!r}; expected 'elo' or 'bt'")
    if anchor is None:
        return base + ELO_PER_LOGIT * (theta - theta.mean(axis=-1, keepdims=True))
    name, rating = anchor
    if name not in models:
        raise ValueError(f"anchor model {name!r} is not among the {len(models)} ranked models")
    position = list(models).index(name)
    return rating + ELO_PER_LOGIT * (theta - theta[..., position : position + 1])


def competition_ranks(ratings: np.ndarray) -> np.ndarray:
    """1 + the number of strictly higher ratings, along the last axis."""
    return rankdata(-np.asarray(ratings), method="min", axis=-1).astype(np.int64)


@dataclass
class Leaderboard:
    """A fitted leaderboard.

    Attributes:
        table: One row per model, best first, columns ``model, rating, lower, upper,
            rank, rank_lower, rank_upper, battles, win_rate``.
        theta: Point log-strengths in ``models`` order.
        models: Model names (sorted).
        tie_strength: Davidson's ν (None otherwise).
        n_battles: Battles used (unweighted).
        degenerate_resamples: Bootstrap resamples refitted with :data:`FALLBACK_ALPHA`.
        components: Connected components of the comparison graph.
        settings: The options the leaderboard was made with.
    """

    table: pd.DataFrame
    theta: np.ndarray
    models: tuple[str, ...]
    tie_strength: float | None
    n_battles: int
    degenerate_resamples: int
    components: list[list[str]]
    settings: dict[str, object] = field(default_factory=dict)


def _bootstrap_bands(
    counts: PairCounts,
    point: StrengthFit,
    ranks: np.ndarray,
    *,
    ties: TiePolicy,
    alpha: float,
    scale: Scale,
    anchor: tuple[str, float] | None,
    base: float,
    n_resamples: int,
    seed: int,
    level: float,
    progress: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """``(lower, upper, rank_lower, rank_upper, degenerate resamples)`` of the ratings."""
    if n_resamples <= 0:
        nan = np.full(counts.n_models, np.nan)
        return nan, nan, ranks, ranks, 0
    boot = bootstrap_strengths(
        counts, point, ties, alpha, n_resamples=n_resamples, seed=seed, progress=progress
    )
    boot_ratings = to_scale(boot.theta, counts.models, scale, anchor=anchor, base=base)
    lower, upper = percentile_bands(boot_ratings, level)
    rank_lower, rank_upper = percentile_bands(
        competition_ranks(boot_ratings), level, outward=True
    )
    return lower, upper, rank_lower, rank_upper, boot.degenerate


def rating_table(
    models: Sequence[str],
    counts: PairCounts,
    ratings: np.ndarray,
    ranks: np.ndarray,
    bands: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> pd.DataFrame:
    """A leaderboard's rows, best first (ties in rank by name).

    Args:
        models: Model names, in the order of ``ratings``.
        counts: The battles (each model's battle count and win rate).
        ratings: Rating per model.
        ranks: Competition rank per model.
        bands: ``(lower, upper, rank_lower, rank_upper)`` per model.

    Returns:
        Columns ``model, rating, lower, upper, rank, rank_lower, rank_upper, battles,
        win_rate``.
    """
    lower, upper, rank_lower, rank_upper = bands
    table = pd.DataFrame(
        {
            "model": list(models),
            "rating": ratings,
            "lower": lower,
            "upper": upper,
            "rank": ranks,
            "rank_lower": np.asarray(rank_lower, dtype=np.int64),
            "rank_upper": np.asarray(rank_upper, dtype=np.int64),
            "battles": counts.model_battles(),
            "win_rate": counts.model_win_rate(),
        },
        columns=_COLUMNS,
    )
    return table.sort_values(["rank", "model"], kind="stable").reset_index(drop=True)


def leaderboard(
    counts: PairCounts,
    *,
    ties: TiePolicy = "half",
    alpha: float = 0.0,
    allow_disconnected: bool = False,
    scale: Scale = "elo",
    anchor: tuple[str, float] | None = None,
    base: float = DEFAULT_BASE,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    progress: Callable[[int], None] | None = None,
) -> Leaderboard:
    """Fit, scale and bootstrap a leaderboard from aggregated battles.

    Args:
        counts: Aggregated battles.
        ties: Tie policy.
        alpha: Regularisation strength (0 = maximum likelihood).
        allow_disconnected: Opt into a regularised fit of a disconnected graph.
        scale: ``elo`` or ``bt``.
        anchor: ``(model, rating)`` pinning one model's Elo rating.
        base: Mean Elo rating without an anchor.
        n_resamples: Bootstrap resamples (0: no intervals; bounds are NaN and rank
            intervals collapse to the rank).
        seed: Bootstrap seed.
        level: Interval coverage.
        progress: Called with 1 after each resample.

    Returns:
        The leaderboard.

    Raises:
        RankError: When the battles cannot identify the strengths (see
            :func:`check_fit_possible`) or the anchor model is not in them.
        ValueError: On a bad scale or level, or an anchor with ``scale="bt"``.
    """
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    if anchor is not None and anchor[0] not in counts.models:
        raise RankError(f"anchor model {anchor[0]!r} does not appear in the battles")
    components = check_fit_possible(counts, ties, alpha, allow_disconnected=allow_disconnected)
    point = fit_strengths(counts, ties, alpha)
    ratings = to_scale(point.theta, counts.models, scale, anchor=anchor, base=base)
    ranks = competition_ranks(ratings)
    lower, upper, rank_lower, rank_upper, degenerate = _bootstrap_bands(
        counts, point, ranks, ties=ties, alpha=alpha, scale=scale, anchor=anchor, base=base,
        n_resamples=n_resamples, seed=seed, level=level, progress=progress)
    table = rating_table(counts.models, counts, ratings, ranks,
                         (lower, upper, rank_lower, rank_upper))
    settings: dict[str, object] = {
        "ties": ties,
        "alpha": alpha,
        "scale": scale,
        "anchor": list(anchor) if anchor else None,
        "base": base if anchor is None else None,
        "bootstrap": n_resamples,
        "seed": seed,
        "level": level,
    }
    return Leaderboard(
        table=table,
        theta=point.theta,
        models=counts.models,
        tie_strength=point.tie_strength,
        n_battles=counts.n_battles,
        degenerate_resamples=degenerate,
        components=components,
        settings=settings,
    )


def leaderboards_by_group(
    battles: pd.DataFrame,
    by: str,
    **options: object,
) -> dict[str, Leaderboard | RankError]:
    """One leaderboard per value of a column (e.g. ``category``).

    Battles whose group is missing form the group ``"(none)"``; a group that cannot be
    ranked maps to its :class:`RankError` instead of being dropped.

    Args:
        battles: Columns ``model_a``, ``model_b``, ``winner`` and optionally ``weight``,
            plus the ``by`` column.
        by: Column to split on.
        **options: Passed to :func:`leaderboard`.

    Returns:
        Group label → leaderboard or the reason it could not be made, in label order.

    Raises:
        KeyError: When ``by`` is not a column.
    """
    if by not in battles.columns:
        raise KeyError(f"no column {by!r} to split the battles by")
    labels = battles[by].astype(object).where(battles[by].notna(), "(none)").astype(str)
    out: dict[str, Leaderboard | RankError] = {}
    for label in sorted(labels.unique()):
        part = battles[labels == label]
        weight = part["weight"] if "weight" in part.columns else None
        counts = aggregate(part["model_a"], part["model_b"], part["winner"], weight)
        try:
            out[label] = leaderboard(counts, **options)  # type: ignore[arg-type]
        except RankError as exc:
            out[label] = exc
    return out
