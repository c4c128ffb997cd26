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

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from prefjudge.io import InputIssue
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.inputs import FEATURE_FIELDS, TOKENIZER_COLUMNS, feature_column
from prefjudge.stats import percentile_bands

Penalty = Literal["l2", "none"]
CONTROLS: dict[str, tuple[str, ...]] = {
    "length": ("token_len",),
    "markdown": ("header_count", "list_count", "bold_count"),
    "style": ("token_len", "header_count", "list_count", "bold_count"),
}
"""What each ``--control`` takes out: the features of :mod:`prefjudge.features`."""
PENALTIES: tuple[str, ...] = ("l2", "none")
DEFAULT_PENALTY: Penalty = "l2"
"""arena-hard-auto's (scikit-learn's default) objective; ``none`` is plain maximum likelihood."""
L2_C = 1.0
"""scikit-learn's default inverse regularisation strength ``C``."""
STYLE_TIES: tuple[str, ...] = ("half", "drop")
LOG10 = math.log(10.0)
STYLE_FORMULA = (
    "P(a beats b) = 1 / (1 + exp(-(ln(10) * (w_a - w_b) + sum_k gamma_k * z_k))), "
    "z_k = standardised (f_a - f_b) / (f_a + f_b + 1); theta = ln(10) * w"
)
_MAX_LOGIT = 25.0
"""A fitted log-odds beyond this (odds of 7e10:1) on a battle means that the unpenalised fit
is running off to infinity: the battles are separated, and the optimiser merely stopped."""
_MAX_ISSUES = 200
_STYLE_COLUMNS = ["feature", "coef", "lower", "upper", "elo_per_sd", "mean", "std",
                  "estimable"]


def _check_control(control: str) -> tuple[str, ...]:
    if control not in CONTROLS:
        raise ValueError(f"unknown control {control!r}; expected one of {', '.join(CONTROLS)}")
    return CONTROLS[control]


def missing_features(frame: pd.DataFrame, control: str) -> np.ndarray:
    """Which battles lack a feature that ``control`` needs, on either side.

    Args:
        frame: Battles from :func:`~prefjudge.ranking.inputs.read_battles`.
        control: A key of :data:`CONTROLS`.

    Returns:
        A boolean mask, one entry per battle.
    """
    missing = np.zeros(len(frame), dtype=bool)
    for name in _check_control(control):
        for side in ("a", "b"):
            column = feature_column(side, name)
            if column not in frame.columns:
                return np.ones(len(frame), dtype=bool)
            missing |= frame[column].isna().to_numpy()
    return missing


def feature_issues(frame: pd.DataFrame, control: str, source: str) -> list[InputIssue]:
    """One issue per battle that lacks a feature ``control`` needs (the first 200).

    Args:
        frame: Battles with their ``line`` column.
        control: A key of :data:`CONTROLS`.
        source: The input file, to name in the issues.

    Returns:
        Issues naming file, line and field, then one counting the battles not listed.
    """
    needed = _check_control(control)
    issues: list[InputIssue] = []
    rows = np.flatnonzero(missing_features(frame, control))
    for index in rows[:_MAX_ISSUES]:
        row = frame.iloc[index]
        for side in ("a", "b"):
            absent = [n for n in needed if pd.isna(row.get(feature_column(side, n)))]
            if absent:
                issues.append(InputIssue(
                    source, int(row["line"]), FEATURE_FIELDS[side],
                    f"no {', '.join(absent)} (needed by --control {control}; write them with "
                    "prefjudge.features.features_record)",
                ))
    if len(rows) > _MAX_ISSUES:
        issues.append(InputIssue(source, 0, "", f"{len(rows) - _MAX_ISSUES} more battles "
                                 "without the features, not listed"))
    return issues


@dataclass(frozen=True)
class StyleDesign:
    """Battles ready for the style-controlled fit (one row per battle, not duplicated).

    Attributes:
        models: Model names, sorted; positions are the model indices.
        a: Index of ``model_a`` per battle.
        b: Index of ``model_b`` per battle.
        target: 1 (a won), 0 (b won) or 0.5 (tie: one copy each way).
        weight: Battle weight.
        features: Feature names, in column order of ``style``.
        style: Standardised normalised differences ``z``, shape ``(battles, features)``;
            a column of zeros for a feature that is not estimable.
        mean: Mean of each normalised difference before standardising.
        std: Its population standard deviation (0: not estimable).
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    features: tuple[str, ...]
    style: np.ndarray
    mean: np.ndarray
    std: np.ndarray

    @property
    def n_models(self) -> int:
        """Number of models."""
        return len(self.models)

    @property
    def estimable(self) -> np.ndarray:
        """Whether each feature varies across battles (a constant one is left out)."""
        return self.std > 0


def build_design(frame: pd.DataFrame, control: str, *, ties: str = "half") -> StyleDesign:
    """Turn battles with features into the style-controlled design.

    Args:
        frame: Battles (``model_a``, ``model_b``, ``winner``, optional ``weight``) with
            the feature columns ``fa_<name>``/``fb_<name>`` of every feature of ``control``.
        control: A key of :data:`CONTROLS`.
        ties: ``half`` (arena-hard's duplication trick) or ``drop`` (ties left out).

    Returns:
        The design.

    Raises:
        ValueError: On an unknown control or tie policy, a battle without the features
            (drop them first: :func:`missing_features`), or no battle left.
    """
    names = _check_control(control)
    if ties not in STYLE_TIES:
        raise ValueError(f"style control handles ties as {' or '.join(STYLE_TIES)}, "
                         f"not {ties!r}")
    if missing_features(frame, control).any():
        raise ValueError(f"some battles lack the features of --control {control}")
    if ties == "drop":
        frame = frame[frame["winner"] != "tie"]
    if frame.empty:
        raise bt.RankError("no battle left to fit")
    codes = bt.winner_codes(frame["winner"].to_numpy())
    size = len(frame)
    index, models = pd.factorize(
        np.concatenate([frame["model_a"].to_numpy(object), frame["model_b"].to_numpy(object)]),
        sort=True,
    )
    fa = frame[[feature_column("a", n) for n in names]].to_numpy(float)
    fb = frame[[feature_column("b", n) for n in names]].to_numpy(float)
    ratio = (fa - fb) / (fa + fb + 1.0)
    mean, std = ratio.mean(axis=0), ratio.std(axis=0)
    # a feature whose ratio does not vary carries no information (and has no z-score)
    std = np.where(std > 1e-12 * np.maximum(np.abs(mean), 1.0), std, 0.0)
    style = np.where(std > 0, (ratio - mean) / np.where(std > 0, std, 1.0), 0.0)
    weight = frame["weight"].to_numpy(float) if "weight" in frame.columns else np.ones(size)
    return StyleDesign(
        models=tuple(str(m) for m in models),
        a=index[:size].astype(np.int64),
        b=index[size:].astype(np.int64),
        target=np.select([codes == bt.FIRST_WINS, codes == bt.SECOND_WINS], [1.0, 0.0], 0.5),
        weight=weight,
        features=names,
        style=style,
        mean=mean,
        std=std,
    )


def design_matrix(design: StyleDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """arena-hard-auto's duplicated design, for checking and for other solvers.

    Args:
        design: The design.

    Returns:
        ``(X, y, sample_weight)`` with ``2 · battles`` rows: X holds ``+ln 10`` in the
        column of ``model_a``, ``−ln 10`` in that of ``model_b`` and the ``z`` columns
        last; the first copy of a tie has ``y = 1``, the second ``y = 0``. Minimising
        ``½‖x‖² + Σ sample_weight · logloss(y, X x)`` is the ``l2`` fit.
    """
    n, p = len(design.a), design.n_models
    rows = np.arange(n)
    x = np.zeros((n, p + len(design.features)))
    x[rows, design.a] = LOG10
    x[rows, design.b] = -LOG10
    x[:, p:] = design.style
    first = np.where(design.target == 0.5, 1.0, design.target)
    second = np.where(design.target == 0.5, 0.0, design.target)
    return (np.vstack([x, x]), np.concatenate([first, second]),
            np.concatenate([design.weight, design.weight]))


@dataclass(frozen=True)
class StyleFit:
    """A fitted style-controlled model.

    Attributes:
        coef: Model coefficients ``w`` (base-10 scale, arena-hard's ``coef_``), in
            ``design.models`` order.
        gamma: Style coefficients (log-odds per standard deviation of ``z``); NaN for a
            feature that is not estimable.
        penalty: The objective fitted.
        iterations: L-BFGS iterations.
    """

    coef: np.ndarray
    gamma: np.ndarray
    penalty: str
    iterations: int = 0

    @property
    def theta(self) -> np.ndarray:
        """Bradley–Terry log-strengths ``ln 10 · w``."""
        return LOG10 * self.coef


def _objective(
    x: np.ndarray, design: StyleDesign, weight: np.ndarray, penalty: str, scale: float
) -> tuple[float, np.ndarray]:
    """The (scaled) objective of :func:`fit_style` and its gradient."""
    p = design.n_models
    w, gamma = x[:p], x[p:]
    logit = LOG10 * (w[design.a] - w[design.b]) + design.style @ gamma
    # each battle counts twice: 2 · [softplus(z) − y z] is the loss of its two copies
    loss = 2.0 * (weight @ (np.logaddexp(0.0, logit) - design.target * logit))
    residual = 2.0 * weight * (expit(logit) - design.target)
    grad = np.empty_like(x)
    grad[:p] = LOG10 * (np.bincount(design.a, residual, p) - np.bincount(design.b, residual, p))
    grad[p:] = design.style.T @ residual
    if penalty == "l2":
        value = L2_C * loss + 0.5 * (x @ x)
        grad = L2_C * grad + x
    else:
        total = w.sum()  # the likelihood is flat along this direction: pin it at 0
        value = loss + 0.5 * total * total
        grad[:p] += total
    return value / scale, grad / scale


def fit_style(
    design: StyleDesign,
    penalty: str = DEFAULT_PENALTY,
    *,
    weight: np.ndarray | None = None,
    initial: StyleFit | None = None,
    gtol: float = 1e-11,
) -> StyleFit:
    """Fit model and style coefficients by L-BFGS with the analytic gradient.

    Does not check identifiability first (:func:`style_leaderboard` does).

    Args:
        design: The design.
        penalty: ``l2`` (scikit-learn's default objective, C = 1) or ``none``.
        weight: Battle weights to use instead of ``design.weight`` (bootstrap counts).
        initial: Warm start.
        gtol: Largest gradient component at the optimum, per unit of battle weight.

    Returns:
        The fit.

    Raises:
        ValueError: On an unknown penalty.
        RankError: When the optimiser fails or (``none``) the coefficients run off to
            infinity.
    """
    if penalty not in PENALTIES:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")
    weight = design.weight if weight is None else weight
    scale = max(2.0 * float(weight.sum()) * (L2_C if penalty == "l2" else 1.0), 1e-300)
    p, k = design.n_models, len(design.features)
    x0 = np.zeros(p + k)
    if initial is not None:
        x0[:p] = initial.coef
        x0[p:] = np.nan_to_num(initial.gamma)
    result = minimize(
        _objective, x0, args=(design, weight, penalty, scale), jac=True, method="L-BFGS-B",
        options={"maxiter": 20000, "maxcor": 30, "ftol": 1e-16, "gtol": gtol},
    )
    x = result.x
    _, grad = _objective(x, design, weight, penalty, scale)
    if not np.all(np.isfinite(x)) or np.abs(grad).max() > max(1e3 * gtol, 1e-7):
        raise bt.RankError(f"the style-controlled fit did not converge ({result.message})")
    logit = LOG10 * (x[design.a] - x[design.b]) + design.style @ x[p:]
    if penalty == "none" and np.abs(logit[weight > 0]).max(initial=0.0) > _MAX_LOGIT:
        raise bt.RankError(
            "no finite maximum-likelihood fit: the style features (or models) separate "
            "wins from losses; use --control-penalty l2"
        )
    coef = x[:p] - x[:p].mean() if penalty == "none" else x[:p]
    gamma = np.where(design.estimable, x[p:], np.nan)
    return StyleFit(coef=coef, gamma=gamma, penalty=penalty, iterations=int(result.nit))


def _finite_mle(design: StyleDesign, weight: np.ndarray) -> bool:
    """Whether every model has a finite unpenalised fit: one strong component of "beat"."""
    used = weight > 0
    won = used & (design.target > 0)  # a beat b (a tie counts both ways)
    lost = used & (design.target < 1)
    rows = np.concatenate([design.a[won], design.b[lost]])
    cols = np.concatenate([design.b[won], design.a[lost]])
    p = design.n_models
    graph = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(p, p))
    return connected_components(graph, connection="strong")[0] == 1


@dataclass(frozen=True)
class StyleBootstrap:
    """Refits on bootstrap resamples of the battles.

    Attributes:
        coef: Shape ``(resamples, models)``; NaN rows for incomplete resamples.
        gamma: Shape ``(resamples, features)``; NaN rows likewise.
        degenerate: ``none`` resamples without a finite fit, refitted with ``l2``.
        incomplete: Resamples in which some model has no battle, left out.
    """

    coef: np.ndarray
    gamma: np.ndarray
    degenerate: int
    incomplete: int


def bootstrap_style(
    design: StyleDesign,
    point: StyleFit,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> StyleBootstrap:
    """Refit on resamples of the battles (rows), warm-started from the point estimate.

    Resample ``r`` holds the battles ``default_rng(seed).integers`` draws for row ``r``
    of :func:`prefjudge.stats.resample_indices` (drawn one row at a time: same numbers).

    Args:
        design: The design (standardised once, on all battles).
        point: The point estimate; its penalty is used.
        n_resamples: Number of resamples.
        seed: Seed of the random generator.
        progress: Called with 1 after each resample.

    Returns:
        The refits.
    """
    n, p = len(design.a), design.n_models
    rng = np.random.default_rng(seed)
    coef = np.full((n_resamples, p), np.nan)
    gamma = np.full((n_resamples, len(design.features)), np.nan)
    degenerate = incomplete = 0
    for r in range(n_resamples):
        drawn = np.bincount(rng.integers(0, n, size=n), minlength=n)
        weight = design.weight * drawn
        present = np.bincount(design.a, weight, p) + np.bincount(design.b, weight, p)
        if (present <= 0).any():
            incomplete += 1
        else:
            penalty = point.penalty
            if penalty == "none" and not _finite_mle(design, weight):
                degenerate, penalty = degenerate + 1, "l2"
            try:
                fit = fit_style(design, penalty, weight=weight, initial=point, gtol=1e-9)
            except bt.RankError:  # separation by the style features in this resample
                degenerate += 1
                fit = fit_style(design, "l2", weight=weight, initial=point, gtol=1e-9)
            coef[r], gamma[r] = fit.coef, fit.gamma
        if progress is not None:
            progress(1)
    return StyleBootstrap(coef, gamma, degenerate, incomplete)


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
    gamma_lower = gamma_upper = np.full(len(design.features), np.nan)
    boot = None
    if n_resamples > 0:
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
    else:
        lower = upper = np.full(design.n_models, np.nan)
        rank_lower = rank_upper = ranks
    table = pd.DataFrame({
        "model": list(design.models),
        "rating": ratings,
        "lower": lower,
        "upper": upper,
        "rank": ranks,
        "rank_lower": np.asarray(rank_lower, dtype=np.int64),
        "rank_upper": np.asarray(rank_upper, dtype=np.int64),
        "battles": counts.model_battles(),
        "win_rate": counts.model_win_rate(),
    }).sort_values(["rank", "model"], kind="stable").reset_index(drop=True)
    style = pd.DataFrame({
        "feature": list(design.features),
        "coef": point.gamma,
        "lower": gamma_lower,
        "upper": gamma_upper,
        "elo_per_sd": bt.ELO_PER_LOGIT * point.gamma,
        "mean": design.mean,
        "std": design.std,
        "estimable": design.estimable,
    }, columns=_STYLE_COLUMNS)
    settings: dict[str, object] = {
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
