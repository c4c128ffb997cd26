"""Bradley–Terry leaderboards from pairwise battles: fit, Elo scale, bootstrap intervals.

Pure functions over arrays and data frames; nothing here prints or touches the disk.

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
from graphlib import TopologicalSorter
from typing import Literal

import choix
import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.stats import rankdata

from prefjudge.stats import percentile_bands

TiePolicy = Literal["half", "drop", "davidson"]
Scale = Literal["elo", "bt"]
TIE_POLICIES: tuple[str, ...] = ("half", "drop", "davidson")

#: Elo points per unit of Bradley–Terry log-strength: 400 / ln 10 ≈ 173.72.
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: Mean rating of a leaderboard that has no anchor.
DEFAULT_BASE = 1000.0
#: Regularisation used for bootstrap resamples that have no finite maximum-likelihood fit.
FALLBACK_ALPHA = 0.01

FIRST_WINS, SECOND_WINS, TIE = 0, 1, 2
_WINNER_CODES = {"model_a": 0, "model_b": 1, "tie": 2}
_COLUMNS = ["model", "rating", "lower", "upper", "rank", "rank_lower", "rank_upper",
            "battles", "win_rate"]


REGULARISE = ("regularise the fit with --alpha > 0 (e.g. --alpha 0.01; in an experiment, "
              "alpha in its [rank] table)")
"""How a message tells a person to regularise the fit: by the option's name."""


class RankError(ValueError):
    """The battles cannot give the leaderboard asked for."""


class TooFewModelsError(RankError):
    """Fewer than two models appear in the battles."""


class DisconnectedGraphError(RankError):
    """The comparison graph falls apart into groups never compared with each other.

    Attributes:
        components: Model names per connected component, largest first.
    """

    def __init__(self, components: list[list[str]]):
        self.components = components
        shown = "; ".join(_preview(group) for group in components[:10])
        super().__init__(
            f"the comparison graph has {len(components)} disconnected components, so their "
            f"relative strengths cannot be estimated: {shown}. Add battles between the "
            "components, rank each component separately, or opt into a regularised joint "
            "fit (--allow-disconnected with --alpha > 0; the gaps between components then "
            "come from the regulariser, not from evidence)."
        )


class UnboundedStrengthError(RankError):
    """Some group of models never lost (or never won) against the rest: no finite MLE.

    Attributes:
        groups: Model names per strongly connected group, from the top group (never
            lost to anyone outside it) to the bottom group (never beat anyone outside).
    """

    def __init__(self, groups: list[list[str]]):
        self.groups = groups
        top, bottom = groups[0], groups[-1]
        super().__init__(
            f"no finite Bradley–Terry fit: the models split into {len(groups)} groups where "
            "every battle between groups was won by the higher group "
            f"(top: {_preview(top)} never lost to anyone outside it; bottom: "
            f"{_preview(bottom)} never beat anyone outside it). Add battles, or "
            f"{REGULARISE}."
        )


def _preview(models: Sequence[str], limit: int = 6) -> str:
    names = ", ".join(models[:limit])
    more = f", … (+{len(models) - limit})" if len(models) > limit else ""
    return f"[{names}{more}]"


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
        share = 0.5 if ties == "half" else 0.0
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


def _edge_mask(counts: PairCounts, ties: TiePolicy) -> tuple[np.ndarray, np.ndarray]:
    """Whether first beat second / second beat first in each pair (ties: both, unless drop)."""
    w = counts.weights
    tie = w[:, TIE] > 0 if ties != "drop" else np.zeros(len(w), dtype=bool)
    return (w[:, FIRST_WINS] > 0) | tie, (w[:, SECOND_WINS] > 0) | tie


def _beats_graph(counts: PairCounts, ties: TiePolicy) -> sparse.csr_matrix:
    forward, backward = _edge_mask(counts, ties)
    rows = np.concatenate([counts.first[forward], counts.second[backward]])
    cols = np.concatenate([counts.second[forward], counts.first[backward]])
    data = np.ones(len(rows))
    n = counts.n_models
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, n))


def comparison_components(counts: PairCounts, ties: TiePolicy = "half") -> list[list[str]]:
    """Connected components of the comparison graph (models linked by any battle).

    Args:
        counts: Aggregated battles.
        ties: Under ``drop`` a tie links nobody.

    Returns:
        Model names per component, largest first (one component when connected).
    """
    n_comp, labels = connected_components(_beats_graph(counts, ties), connection="weak")
    groups = [sorted(counts.models[i] for i in np.flatnonzero(labels == c)) for c in range(n_comp)]
    return sorted(groups, key=lambda g: (-len(g), g))


def strength_groups(counts: PairCounts, ties: TiePolicy = "half") -> list[list[str]]:
    """Strongly connected groups of the "beat or tied" graph, from the top down.

    The maximum-likelihood fit is finite exactly when there is one group (on a
    connected graph). With several, every battle between two groups was won by the
    higher one.

    Args:
        counts: Aggregated battles.
        ties: Tie policy (a tie links both ways unless ``drop``).

    Returns:
        Model names per group in topological order (top first).
    """
    n_comp, labels = connected_components(_beats_graph(counts, ties), connection="strong")
    if n_comp == 1:
        return [sorted(counts.models)]
    forward, backward = _edge_mask(counts, ties)
    above: dict[int, set[int]] = {c: set() for c in range(n_comp)}
    for winners, losers, mask in (
        (counts.first, counts.second, forward),
        (counts.second, counts.first, backward),
    ):
        for win, lose in zip(labels[winners[mask]], labels[losers[mask]], strict=True):
            if win != lose:
                above[int(lose)].add(int(win))
    order = list(TopologicalSorter(above).static_order())
    return [sorted(counts.models[i] for i in np.flatnonzero(labels == c)) for c in order]


def _has_finite_mle(counts: PairCounts, ties: TiePolicy) -> bool:
    n_comp, _ = connected_components(_beats_graph(counts, ties), connection="strong")
    return n_comp == 1


@dataclass(frozen=True)
class StrengthFit:
    """Fitted log-strengths.

    Attributes:
        theta: Log-strength per model, mean 0.
        tie_strength: Davidson's ν (None for the other tie policies).
    """

    theta: np.ndarray
    tie_strength: float | None = None


def fit_strengths(
    counts: PairCounts,
    ties: TiePolicy = "half",
    alpha: float = 0.0,
    *,
    initial: StrengthFit | None = None,
    tol: float = 1e-10,
) -> StrengthFit:
    """Fit Bradley–Terry (or Davidson) log-strengths on aggregated counts.

    Does not check identifiability first; :func:`check_fit_possible` does.

    Args:
        counts: Aggregated battles.
        ties: ``half``, ``drop`` or ``davidson`` (see the module docstring).
        alpha: Regularisation strength (0 = plain maximum likelihood).
        initial: Warm start (e.g. the point estimate, for bootstrap resamples).
        tol: Convergence tolerance (L1 change of θ between I-LSR iterations).

    Returns:
        The fit, θ centred on 0.

    Raises:
        ValueError: On an unknown tie policy.
        RankError: When the optimiser fails (typically: no finite MLE and alpha = 0).
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {ties!r}; expected one of {TIE_POLICIES}")
    if ties == "davidson":
        return _fit_davidson(counts, alpha, initial, tol=max(tol, 1e-10))
    start = None if initial is None else initial.theta
    try:
        theta = choix.ilsr_pairwise_dense(
            counts.win_matrix(ties), alpha=alpha, initial_params=start, max_iter=1000, tol=tol
        )
    except (RuntimeError, ValueError) as exc:  # no convergence, or no stationary distribution
        raise RankError(
            f"the Bradley–Terry fit failed ({exc}); {REGULARISE}"
        ) from exc
    if not np.all(np.isfinite(theta)):
        raise RankError(f"the Bradley–Terry fit diverged; {REGULARISE}")
    return StrengthFit(theta - theta.mean())


def _davidson_terms(
    x: np.ndarray, counts: PairCounts, penalty: float, total: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Davidson negative log-likelihood per battle, its gradient and Hessian.

    With ``d = θ_first − θ_second``, ``λ = log ν`` and ``L = log(e^{d/2} + e^{−d/2} + e^λ)``,
    a pair contributes ``−[(w_first − w_second)·d/2 + ties·λ − battles·L]``; ``L`` is a
    log-sum-exp of linear functions, so the objective is convex and Newton's method
    with a backtracking line search converges from the ``half`` fit in a few steps.
    """
    n = counts.n_models
    theta, lam = x[:n], x[n]
    w = counts.weights
    decisive = w[:, FIRST_WINS] - w[:, SECOND_WINS]
    ties = w[:, TIE]
    battles = w.sum(axis=1)
    half = (theta[counts.first] - theta[counts.second]) / 2
    log_norm = np.logaddexp(np.logaddexp(half, -half), lam)
    p_first, p_second = np.exp(half - log_norm), np.exp(-half - log_norm)
    p_tie = np.exp(lam - log_norm)
    centred = theta - theta.mean()
    value = -(decisive @ half + lam * ties.sum() - battles @ log_norm)
    value += penalty * centred @ centred
    g_diff = -(decisive - battles * (p_first - p_second)) / 2
    grad = np.empty(n + 1)
    grad[:n] = _scatter(counts.first, g_diff, n) - _scatter(counts.second, g_diff, n)
    grad[:n] += 2 * penalty * centred
    grad[n] = -(ties.sum() - battles @ p_tie)
    skew = (p_first - p_second) / 2
    h_dd = battles * ((p_first + p_second) / 4 - skew**2)
    h_dl = -battles * skew * p_tie
    hess = np.zeros((n + 1, n + 1))
    hess[counts.first, counts.second] = -h_dd
    hess[counts.second, counts.first] = -h_dd
    diagonal = _scatter(counts.first, h_dd, n) + _scatter(counts.second, h_dd, n)
    hess[np.arange(n), np.arange(n)] = diagonal + 2 * penalty
    hess[:n, :n] -= 2 * penalty / n
    cross = _scatter(counts.first, h_dl, n) - _scatter(counts.second, h_dl, n)
    hess[:n, n] = hess[n, :n] = cross
    hess[n, n] = battles @ (p_tie - p_tie**2)
    return value / total, grad / total, hess / total


def _fit_davidson(
    counts: PairCounts, alpha: float, initial: StrengthFit | None, tol: float
) -> StrengthFit:
    n = counts.n_models
    if counts.weights[:, TIE].sum() == 0:
        # No tie at all: ν → 0 and the model is Bradley–Terry on the decisive battles.
        return StrengthFit(fit_strengths(counts, "drop", alpha, initial=initial).theta, 0.0)
    if initial is not None and initial.tie_strength:
        x = np.append(initial.theta, math.log(initial.tie_strength))
    else:
        try:
            theta0 = fit_strengths(counts, "half", alpha).theta
        except RankError:
            theta0 = np.zeros(n)
        tie_share = counts.weights[:, TIE].sum() / counts.weights.sum()
        x = np.append(theta0, math.log(2 * tie_share / max(1 - tie_share, 1e-6)))
    total = float(counts.weights.sum())
    penalty = alpha * n / 2
    gauge = np.zeros((n + 1, n + 1))
    gauge[:n, :n] = 1.0 / n  # pins the mean of θ; the gradient never moves it
    for _ in range(100):
        value, grad, hess = _davidson_terms(x, counts, penalty, total)
        if np.abs(grad).max() < tol:
            break
        step = np.linalg.solve(hess + gauge * max(hess[:n, :n].diagonal().mean(), 1e-12), -grad)
        slope = grad @ step
        scale = 1.0
        while scale > 1e-10:
            trial = x + scale * step
            if _davidson_terms(trial, counts, penalty, total)[0] <= value + 1e-4 * scale * slope:
                break
            scale /= 2
        x = x + scale * step
    else:
        raise RankError(f"the Davidson fit did not converge; {REGULARISE}")
    if not np.all(np.isfinite(x)):
        raise RankError(f"the Davidson fit diverged; {REGULARISE}")
    theta = x[:n]
    return StrengthFit(theta - theta.mean(), float(math.exp(x[n])))


def check_fit_possible(
    counts: PairCounts,
    ties: TiePolicy = "half",
    alpha: float = 0.0,
    *,
    allow_disconnected: bool = False,
) -> list[list[str]]:
    """Check that the battles identify the strengths (see the module docstring).

    Args:
        counts: Aggregated battles.
        ties: Tie policy.
        alpha: Regularisation strength.
        allow_disconnected: Opt into a regularised fit across disconnected components.

    Returns:
        The connected components (one when the graph is connected).

    Raises:
        TooFewModelsError: Fewer than two models.
        DisconnectedGraphError: Disconnected and not opted in.
        UnboundedStrengthError: No finite maximum-likelihood fit and ``alpha == 0``.
        ValueError: ``allow_disconnected`` with ``alpha <= 0``, or a negative alpha.
    """
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    if counts.n_models < 2:
        only = f" ({counts.models[0]})" if counts.models else ""
        raise TooFewModelsError(
            f"a leaderboard needs at least two models; the battles name {counts.n_models}{only}"
        )
    components = comparison_components(counts, ties)
    if len(components) > 1:
        if not allow_disconnected:
            raise DisconnectedGraphError(components)
        if alpha <= 0:
            raise ValueError(
                "a joint fit of a disconnected graph (--allow-disconnected) needs --alpha > 0"
            )
    if alpha == 0:
        groups = strength_groups(counts, ties)
        if len(groups) > 1:
            raise UnboundedStrengthError(groups)
    return components


@dataclass(frozen=True)
class BootstrapFits:
    """Log-strengths refitted on bootstrap resamples.

    Attributes:
        theta: Shape ``(resamples, models)``, each row centred on 0.
        degenerate: Resamples without a finite MLE (or whose fit failed), refitted with
            :data:`FALLBACK_ALPHA`.
    """

    theta: np.ndarray
    degenerate: int


def bootstrap_strengths(
    counts: PairCounts,
    point: StrengthFit,
    ties: TiePolicy = "half",
    alpha: float = 0.0,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> BootstrapFits:
    """Refit on multinomial resamples of the aggregated counts.

    Args:
        counts: Aggregated battles.
        point: Point estimate, used as the warm start.
        ties: Tie policy.
        alpha: Regularisation strength (as for the point estimate).
        n_resamples: Number of resamples.
        seed: Seed of the random generator (same seed, same intervals).
        progress: Called with 1 after each resample (e.g. to advance a progress bar).

    Returns:
        The resampled fits.
    """
    # The draw is a multinomial over the aggregated pair x outcome cells, not the shared
    # unit-index resampling of prefjudge.stats.resample_indices: the counts do not keep
    # battles one by one, and redrawing cells is the same distribution as resampling
    # battles at O(cells) cost. Switching would change every interval for the same seed.
    rng = np.random.default_rng(seed)
    thetas = np.empty((n_resamples, counts.n_models))
    degenerate = 0
    for k in range(n_resamples):
        sample = counts.resample(rng)
        if alpha == 0 and not _has_finite_mle(sample, ties):
            degenerate += 1
            thetas[k] = fit_strengths(sample, ties, FALLBACK_ALPHA, initial=point, tol=1e-7).theta
        else:
            try:
                thetas[k] = fit_strengths(sample, ties, alpha, initial=point, tol=1e-7).theta
            except RankError:
                degenerate += 1
                thetas[k] = fit_strengths(
                    sample, ties, max(alpha, FALLBACK_ALPHA), initial=point, tol=1e-7
                ).theta
        if progress is not None:
            progress(1)
    return BootstrapFits(thetas, degenerate)


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
    degenerate = 0
    if n_resamples > 0:
        boot = bootstrap_strengths(
            counts, point, ties, alpha, n_resamples=n_resamples, seed=seed, progress=progress
        )
        degenerate = boot.degenerate
        boot_ratings = to_scale(boot.theta, counts.models, scale, anchor=anchor, base=base)
        lower, upper = percentile_bands(boot_ratings, level)
        rank_lower, rank_upper = percentile_bands(
            competition_ranks(boot_ratings), level, outward=True
        )
    else:
        lower = upper = np.full(counts.n_models, np.nan)
        rank_lower = rank_upper = ranks
    table = pd.DataFrame(
        {
            "model": list(counts.models),
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
    table = table.sort_values(["rank", "model"], kind="stable").reset_index(drop=True)
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
