"""Style-controlled Bradley–Terry: ratings with the pull of length and markdown taken out.

``prefjudge rank --control length|markdown|style`` fits, as arena-hard-auto's style
control does, one logistic regression over battles whose predictors are the two models
and the style differences of their responses::

    P(a beats b) = σ( ln10 · (w_a − w_b) + Σ_k γ_k · z_k )

* ``w`` is one coefficient per model on arena-hard's base-10 scale (the model columns
  of the design hold ``+ln 10`` for ``model_a`` and ``−ln 10`` for ``model_b``), so the
  Bradley–Terry log-strength is ``θ = ln 10 · w`` and the Elo rating
  ``400 · w + const`` is exactly ``base + 400/ln 10 · (θ − mean θ)`` of
  :mod:`prefjudge.ranking.bradley_terry` (arena-hard's ``400 · coef + 1000``, up to
  the anchoring shift; ``--anchor M=R`` pins M at R in both).
* ``z_k`` is, for feature ``k`` of :data:`CONTROLS` (``token_len``, ``header_count``,
  ``list_count``, ``bold_count``; see :mod:`prefjudge.features`), the normalised
  difference ``(f_a − f_b) / (f_a + f_b + 1)``, standardised over the battles (mean 0,
  population standard deviation 1). ``γ_k`` is its effect in log-odds per standard
  deviation (``400/ln 10 · γ_k`` Elo points).
* Ties follow arena-hard's duplication trick: every battle appears twice, a win for a
  twice as ``y = 1``, a win for b twice as ``y = 0``, a tie once as each, so a tie is
  half a win for both sides (``--ties half``); ``--ties drop`` leaves ties out. Battle
  weights multiply both copies.

Two objectives (``penalty``):

* ``l2`` (the default): ``½‖x‖² + C · Σ logloss`` over the duplicated battles with
  ``C = 1`` and ``x`` = all coefficients, models and style — exactly the objective of
  scikit-learn's default ``LogisticRegression(fit_intercept=False)``, which
  arena-hard-auto fits. It is strictly convex, so its optimum is unique and equals
  scikit-learn's. It is the default so that ``--control`` reproduces arena-hard's
  numbers; its shrinkage is mild with many battles (the penalty is fixed while the
  log-likelihood grows with the battles) and it keeps every fit finite. Since the
  likelihood does not change when every ``w`` moves together, the penalty also centres
  the model coefficients on 0.
* ``none``: plain maximum likelihood; the model coefficients are identified by fixing
  their mean at 0 (an anchor then only shifts them). It needs the same conditions as an
  unregularised Bradley–Terry fit (connected battles, every group of models beaten at
  least once by the rest and beating it at least once), checked first, and fails when
  the style features separate wins from losses.

The optimiser is scipy's L-BFGS-B with the analytic gradient and tight tolerances (the
objective is divided by the total battle weight, which does not move the optimum).
scikit-learn is not needed.

Uncertainty: a bootstrap over battles (rows), as arena-hard does, drawn from
``numpy.random.default_rng(seed)`` exactly as :func:`prefjudge.stats.resample_indices`
(one resample at a time, the same indices for the same seed); each resample is refitted
warm-started from the point estimate, with the standardisation of the full data.
Percentile intervals of the ratings and of each ``γ`` and outward rank ranges are read off
the resamples by :mod:`prefjudge.stats`, as for the plain leaderboard. A resample in
which some model has no battle is left out (counted in ``incomplete_resamples``); under
``none``, a resample without a finite maximum-likelihood fit is refitted with ``l2``
(counted in ``degenerate_resamples``).

Deliberate differences from arena-hard-auto: features come from
:mod:`prefjudge.features` (markdown parsed with markdown-it-py, not regular
expressions; the model's own tokenizer or a words-and-punctuation count instead of
tiktoken); a feature with the same normalised difference in every battle (e.g. no
response has a header) is left out of the fit and reported as not estimable (arena-hard
divides by its zero standard deviation); a resample missing a model is left out instead
of being fitted without it; models are ordered by name (the optimum does not depend on
the order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.inputs import TOKENIZER_COLUMNS
from prefjudge.ranking.style_design import (
    CONTROLS,
    LOG10,
    STYLE_TIES,
    StyleDesign,
    build_design,
    design_matrix,
    feature_issues,
    missing_features,
)
from prefjudge.ranking.style_fit import (
    DEFAULT_PENALTY,
    L2_C,
    PENALTIES,
    Penalty,
    StyleBootstrap,
    StyleFit,
    bootstrap_style,
    fit_style,
)
from prefjudge.stats import percentile_bands

__all__ = [
    "CONTROLS",
    "DEFAULT_PENALTY",
    "L2_C",
    "LOG10",
    "PENALTIES",
    "STYLE_FORMULA",
    "STYLE_TIES",
    "Penalty",
    "StyleBootstrap",
    "StyleDesign",
    "StyleFit",
    "StyleLeaderboard",
    "bootstrap_style",
    "build_design",
    "design_matrix",
    "feature_issues",
    "fit_style",
    "missing_features",
    "style_leaderboard",
    "style_leaderboards_by_group",
    "style_records",
]

STYLE_FORMULA = (
    "P(a beats b) = 1 / (1 + exp(-(ln(10) * (w_a - w_b) + sum_k gamma_k * z_k))), "
    "z_k = standardised (f_a - f_b) / (f_a + f_b + 1); theta = ln(10) * w"
)
_STYLE_COLUMNS = ["feature", "coef", "lower", "upper", "elo_per_sd", "mean", "std",
                  "estimable"]


@dataclass
class StyleLeaderboard(bt.Leaderboard):
    """A style-controlled leaderboard: the plain leaderboard's fields plus the style fit.

    Attributes:
        style: One row per feature: ``feature, coef, lower, upper, elo_per_sd, mean,
            std, estimable`` (``coef`` in log-odds per standard deviation of ``z``,
            ``elo_per_sd`` the same in Elo points; ``mean``/``std`` of the normalised
            difference before standardising).
        control: The ``--control`` used.
        penalty: ``l2`` or ``none``.
        incomplete_resamples: Bootstrap resamples left out because a model had no battle.
        tokenizers: Tokenizer names recorded with the features.
        coef: Model coefficients ``w`` (arena-hard's ``coef_``), ``models`` order.
    """

    style: pd.DataFrame = field(default_factory=pd.DataFrame)
    control: str = ""
    penalty: str = DEFAULT_PENALTY
    incomplete_resamples: int = 0
    tokenizers: list[str] = field(default_factory=list)
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _check_fit_possible(
    counts: bt.PairCounts, ties: str, penalty: str, allow_disconnected: bool
) -> list[list[str]]:
    if penalty == "l2":
        if counts.n_models < 2:
            raise bt.TooFewModelsError(
                f"a leaderboard needs at least two models; the battles name {counts.n_models}"
            )
        components = bt.comparison_components(counts, ties)  # type: ignore[arg-type]
        if len(components) > 1 and not allow_disconnected:
            raise bt.DisconnectedGraphError(components)
        return components
    try:
        return bt.check_fit_possible(counts, ties)  # type: ignore[arg-type]
    except bt.UnboundedStrengthError as exc:
        raise bt.RankError(f"{exc} With --control, use --control-penalty l2 instead "
                           "(--alpha does not apply).") from None


def _tokenizers(frame: pd.DataFrame) -> list[str]:
    names: set[str] = set()
    for column in TOKENIZER_COLUMNS.values():
        if column in frame.columns:
            names.update(str(v) for v in frame[column].dropna().unique())
    return sorted(names)


class _Bands(NamedTuple):
    """The bootstrap intervals of a style fit (NaN, and the ranks themselves, without one)."""

    lower: np.ndarray
    upper: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    gamma_lower: np.ndarray
    gamma_upper: np.ndarray
    boot: StyleBootstrap | None


def _style_bands(
    design: StyleDesign,
    point: StyleFit,
    ranks: np.ndarray,
    *,
    scale: bt.Scale,
    anchor: tuple[str, float] | None,
    base: float,
    n_resamples: int,
    seed: int,
    level: float,
    progress: Callable[[int], None] | None,
) -> _Bands:
    """Rating, rank and coefficient intervals from ``n_resamples`` bootstrap refits."""
    gamma_lower = gamma_upper = np.full(len(design.features), np.nan)
    if n_resamples <= 0:
        nan = np.full(design.n_models, np.nan)
        return _Bands(nan, nan, ranks, ranks, gamma_lower, gamma_upper, None)
    boot = bootstrap_style(design, point, n_resamples=n_resamples, seed=seed,
                           progress=progress)
    boot_ratings = bt.to_scale(LOG10 * boot.coef, design.models, scale, anchor=anchor,
                               base=base)
    lower, upper = percentile_bands(boot_ratings, level)
    complete = np.isfinite(boot_ratings).all(axis=1)
    if complete.any():
        rank_lower, rank_upper = percentile_bands(
            bt.competition_ranks(boot_ratings[complete]), level, outward=True
        )
    else:
        rank_lower = rank_upper = ranks
    estimable = design.estimable
    if estimable.any():
        low, high = percentile_bands(boot.gamma[:, estimable], level)
        gamma_lower, gamma_upper = gamma_lower.copy(), gamma_upper.copy()
        gamma_lower[estimable], gamma_upper[estimable] = low, high
    return _Bands(lower, upper, rank_lower, rank_upper, gamma_lower, gamma_upper, boot)


def _style_table(design: StyleDesign, point: StyleFit, bands: _Bands) -> pd.DataFrame:
    """One row per style feature: its coefficient, interval and standardisation."""
    return pd.DataFrame({
        "feature": list(design.features),
        "coef": point.gamma,
        "lower": bands.gamma_lower,
        "upper": bands.gamma_upper,
        "elo_per_sd": bt.ELO_PER_LOGIT * point.gamma,
        "mean": design.mean,
        "std": design.std,
        "estimable": design.estimable,
    }, columns=_STYLE_COLUMNS)


def _settings(*, ties: str, scale: bt.Scale, anchor: tuple[str, float] | None, base: float,
              n_resamples: int, seed: int, level: float, control: str,
              penalty: str) -> dict[str, object]:
    """The fit's settings as the leaderboard records them."""
    return {
        "ties": ties,
        "alpha": None,
        "scale": scale,
        "anchor": list(anchor) if anchor else None,
        "base": base if anchor is None else None,
        "bootstrap": n_resamples,
        "bootstrap_unit": "battles",
        "seed": seed,
        "level": level,
        "control": control,
        "control_penalty": penalty,
        "C": L2_C if penalty == "l2" else None,
    }


def style_leaderboard(
    frame: pd.DataFrame,
    control: str,
    *,
    penalty: str = DEFAULT_PENALTY,
    ties: str = "half",
    allow_disconnected: bool = False,
    scale: bt.Scale = "elo",
    anchor: tuple[str, float] | None = None,
    base: float = bt.DEFAULT_BASE,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    progress: Callable[[int], None] | None = None,
) -> StyleLeaderboard:
    """Fit, scale and bootstrap a style-controlled leaderboard.

    Args:
        frame: Battles with the features of ``control`` (every battle).
        control: ``length``, ``markdown`` or ``style`` (:data:`CONTROLS`).
        penalty: ``l2`` (default, arena-hard's objective) or ``none``.
        ties: ``half`` or ``drop``.
        allow_disconnected: Fit a disconnected comparison graph (``l2`` only; the gaps
            between components then come from the penalty alone).
        scale: ``elo`` or ``bt`` (as :func:`~prefjudge.ranking.bradley_terry.to_scale`).
        anchor: ``(model, rating)`` pinning one model's Elo rating.
        base: Mean Elo rating without an anchor.
        n_resamples: Bootstrap resamples of the battles (0: no intervals).
        seed: Bootstrap seed.
        level: Interval coverage.
        progress: Called with 1 after each resample.

    Returns:
        The leaderboard, models best first, with the style coefficients.

    Raises:
        RankError: When the battles cannot identify the fit or the anchor is unknown.
        ValueError: On a bad option or battles without the features.
    """
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    if penalty not in PENALTIES:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")
    weight = frame["weight"] if "weight" in frame.columns else None
    counts = bt.aggregate(frame["model_a"], frame["model_b"], frame["winner"], weight)
    if anchor is not None and anchor[0] not in counts.models:
        raise bt.RankError(f"anchor model {anchor[0]!r} does not appear in the battles")
    if penalty == "none" and allow_disconnected:
        raise ValueError("a disconnected graph can only be fitted with the l2 penalty")
    design = build_design(frame, control, ties=ties)
    components = _check_fit_possible(counts, ties, penalty, allow_disconnected)
    point = fit_style(design, penalty)
    ratings = bt.to_scale(point.theta, design.models, scale, anchor=anchor, base=base)
    ranks = bt.competition_ranks(ratings)
    bands = _style_bands(design, point, ranks, scale=scale, anchor=anchor, base=base,
                         n_resamples=n_resamples, seed=seed, level=level, progress=progress)
    boot = bands.boot
    table = bt.rating_table(design.models, counts, ratings, ranks, bands[:4])
    style = _style_table(design, point, bands)
    settings = _settings(ties=ties, scale=scale, anchor=anchor, base=base,
                         n_resamples=n_resamples, seed=seed, level=level, control=control,
                         penalty=penalty)
    return StyleLeaderboard(
        table=table,
        theta=point.theta,
        models=design.models,
        tie_strength=None,
        n_battles=len(frame),
        degenerate_resamples=boot.degenerate if boot else 0,
        components=components,
        settings=settings,
        style=style,
        control=control,
        penalty=penalty,
        incomplete_resamples=boot.incomplete if boot else 0,
        tokenizers=_tokenizers(frame),
        coef=point.coef,
    )


def style_leaderboards_by_group(
    frame: pd.DataFrame, by: str, control: str, **options: object
) -> dict[str, StyleLeaderboard | bt.RankError]:
    """One style-controlled leaderboard per value of a column (standardised per group).

    Args:
        frame: Battles with features and the ``by`` column.
        by: Column to split on (missing values form the group ``"(none)"``).
        control: A key of :data:`CONTROLS`.
        **options: Passed to :func:`style_leaderboard`.

    Returns:
        Group label → leaderboard or the reason it could not be made, in label order.
    """
    labels = frame[by].astype(object).where(frame[by].notna(), "(none)").astype(str)
    out: dict[str, StyleLeaderboard | bt.RankError] = {}
    for label in sorted(labels.unique()):
        try:
            out[label] = style_leaderboard(frame[labels == label], control,
                                           **options)  # type: ignore[arg-type]
        except bt.RankError as exc:
            out[label] = exc
    return out


def style_records(board: StyleLeaderboard) -> list[dict[str, object]]:
    """The style coefficients as JSON-ready rows (NaN stays NaN; see ``json_safe``)."""
    return [
        {**row, "estimable": bool(row["estimable"])}
        for row in board.style.to_dict(orient="records")
    ]
