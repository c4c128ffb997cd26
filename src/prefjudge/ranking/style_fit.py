"""Fitting a style-controlled Bradley–Terry model (logistic regression), and its bootstrap.

:func:`fit_style` minimises the weighted logistic loss of a
:class:`~prefjudge.ranking.style_design.StyleDesign` (with arena-hard-auto's L2 penalty
by default, or none); :func:`bootstrap_style` refits resampled battles for intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.style_design import LOG10 as LOG10
from prefjudge.ranking.style_design import StyleDesign

Penalty = Literal["l2", "none"]


PENALTIES: tuple[str, ...] = ("l2", "none")


DEFAULT_PENALTY: Penalty = "l2"
"""arena-hard-auto's (scikit-learn's default) objective; ``none`` is plain maximum likelihood."""


L2_C = 1.0
"""scikit-learn's default inverse regularisation strength ``C``."""


_MAX_LOGIT = 25.0
"""A fitted log-odds beyond this (odds of 7e10:1) on a battle means that the unpenalised fit
is running off to infinity: the battles are separated, and the optimiser merely stopped."""


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
