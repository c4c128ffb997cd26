"""Fitting Bradley–Terry log-strengths on pair counts, and the multinomial bootstrap of the fit.

:func:`fit_strengths` uses choix's I-LSR for the ``half`` and ``drop`` tie policies and
Newton's method for Davidson's tie model; :func:`bootstrap_strengths` refits resampled
counts warm-started from the point estimate, with :data:`FALLBACK_ALPHA` where a resample
has no finite maximum-likelihood fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import choix
import numpy as np

from prefjudge.ranking.comparison_graph import REGULARISE, RankError, _has_finite_mle
from prefjudge.ranking.pair_counts import (
    FIRST_WINS,
    SECOND_WINS,
    TIE,
    PairCounts,
    TiePolicy,
    _scatter,
)
from prefjudge.ranking.ties import check_ties

#: Regularisation used for bootstrap resamples that have no finite maximum-likelihood fit.
FALLBACK_ALPHA = 0.01


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
    check_ties(ties)
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
