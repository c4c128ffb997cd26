"""Which blend of functional correctness and instruction following predicts human preference.

The Vibe Checker analysis (arXiv 2510.07315, §4.5): for each model,
``composite(α) = α·IF + (1 − α)·Func`` — α is the weight on instruction following — is
correlated (Pearson, Spearman, Kendall τ-b) with the model's Elo rating for every α on
a grid (step 0.1 by default); the best α per correlation type is reported with the
curves. Ties in the best correlation go to the largest α, as in the paper's script
(``np.argmax`` over the Func weight in ascending order).

Beyond the paper: a bootstrap over models (resampling models with replacement, the seeded
percentile bootstrap of :mod:`prefjudge.stats`) gives a percentile interval on the best α
(taken outward to grid values) and on each point of the curves. The interval
reported for the best correlation is the curve's interval at the best α.

Model names are matched explicitly (:func:`match_models`): exact match first, then a
user alias map; every model left unmatched on either side is listed, never dropped
silently. Pure functions; nothing here prints or touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from prefjudge.ranking.composite import composite_score as composite_score
from prefjudge.stats import percentile_bands, percentile_interval, resample_indices

CORRELATIONS: tuple[str, ...] = ("pearson", "spearman", "kendall")
_BATCH_CELLS = 4_000_000  # bounds the Kendall sign matrices of one bootstrap batch


class CorrelateError(ValueError):
    """The inputs cannot give the correlation analysis asked for."""


@dataclass(frozen=True)
class ModelMatch:
    """How the models of a score table were matched to an Elo table.

    Attributes:
        pairs: ``(score name, Elo name, how)`` with ``how`` ``exact`` or ``alias``.
        unmatched_scores: Score-table models with no Elo rating.
        unmatched_elo: Elo-table models with no scores.
    """

    pairs: list[tuple[str, str, str]]
    unmatched_scores: list[str]
    unmatched_elo: list[str]


def match_models(
    score_models: Sequence[str],
    elo_models: Sequence[str],
    aliases: Mapping[str, str] | None = None,
) -> ModelMatch:
    """Match score-table models to Elo-table models: exact name, then the alias map.

    Args:
        score_models: Models of the score table.
        elo_models: Models of the Elo table.
        aliases: Score-table name → Elo-table name, consulted when there is no exact match.

    Returns:
        The matching; an Elo model is used at most once.

    Raises:
        CorrelateError: When two score models map to the same Elo model.
    """
    aliases = dict(aliases or {})
    elo_set = set(elo_models)
    pairs: list[tuple[str, str, str]] = []
    used: dict[str, str] = {}
    unmatched: list[str] = []
    for name in score_models:
        if name in elo_set:
            target, how = name, "exact"
        elif aliases.get(name) in elo_set:
            target, how = aliases[name], "alias"
        else:
            unmatched.append(name)
            continue
        if target in used:
            raise CorrelateError(
                f"score models {used[target]!r} and {name!r} both match Elo model {target!r}"
            )
        used[target] = name
        pairs.append((name, target, how))
    unmatched_elo = [name for name in elo_models if name not in used]
    return ModelMatch(pairs, unmatched, unmatched_elo)


def alpha_grid(step: float = 0.1) -> np.ndarray:
    """α values from 0 to 1 inclusive.

    Args:
        step: Grid step; 1/step must be a whole number.

    Returns:
        The grid, rounded to 10 decimals so 0.3 is 0.3.

    Raises:
        ValueError: When 1/step is not a whole number or step is outside (0, 1].
    """
    if not 0 < step <= 1:
        raise ValueError("the α step must be in (0, 1]")
    count = round(1 / step)
    if abs(count * step - 1) > 1e-9:
        raise ValueError(f"the α step {step} does not divide 1 evenly")
    return np.round(np.linspace(0.0, 1.0, count + 1), 10)


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xc * yc).sum(-1) / np.sqrt((xc * xc).sum(-1) * (yc * yc).sum(-1))


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    m = x.shape[-1]
    upper = np.triu_indices(m, k=1)
    sx = np.sign(x[..., :, None] - x[..., None, :])[..., upper[0], upper[1]]
    sy = np.sign(y[..., :, None] - y[..., None, :])[..., upper[0], upper[1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(-1) / np.sqrt((sx * sx).sum(-1) * (sy * sy).sum(-1))


def _snap(values: np.ndarray) -> np.ndarray:
    """Round away floating-point noise (12 digits relative to the largest value).

    A composite of two-decimal scores can tie exactly (0.5·67.89 + 0.5·50.18 =
    0.5·73.68 + 0.5·44.39); computed in floating point the two differ in the last bit,
    which would turn a tie into an arbitrary order for the rank correlations.
    """
    scale = np.max(np.abs(values), axis=-1, keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    return np.round(values / scale, 12) * scale


def correlations(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Pearson, Spearman and Kendall τ-b along the last axis, broadcasting the rest.

    Equal to ``scipy.stats.pearsonr``/``spearmanr``/``kendalltau`` (τ-b, ties handled)
    on each 1-D slice, except that values equal up to floating-point noise count as
    ties for the two rank correlations; NaN where either side is constant.

    Args:
        x: Values, shape ``(..., m)``.
        y: Values, broadcastable to ``x``.

    Returns:
        Correlation type → array of shape ``x.shape[:-1]``.
    """
    x = np.asarray(x, dtype=float)
    y = np.broadcast_to(np.asarray(y, dtype=float), x.shape)
    xs, ys = _snap(x), _snap(y)
    return {
        "pearson": _pearson(x, y),
        "spearman": _pearson(rankdata(xs, axis=-1), rankdata(ys, axis=-1)),
        "kendall": _kendall_tau_b(xs, ys),
    }


def composite(func: np.ndarray, if_score: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """``α·IF + (1 − α)·Func`` for every α.

    Args:
        func: Functional score per model, shape ``(..., m)``.
        if_score: Instruction-following score per model, same shape.
        alphas: Weights on IF, shape ``(a,)``.

    Returns:
        Shape ``(..., a, m)``.
    """
    a = np.asarray(alphas, dtype=float)[:, None]
    return composite_score(np.asarray(func)[..., None, :], np.asarray(if_score)[..., None, :], a)


def sweep(
    func: np.ndarray, if_score: np.ndarray, elo: np.ndarray, alphas: np.ndarray
) -> pd.DataFrame:
    """Correlation of the composite with Elo for every α.

    Args:
        func: Functional score per model.
        if_score: Instruction-following score per model.
        elo: Elo rating per model.
        alphas: Weights on IF.

    Returns:
        Columns ``alpha, pearson, spearman, kendall``, one row per α.
    """
    values = correlations(composite(func, if_score, alphas), np.asarray(elo)[None, :])
    return pd.DataFrame({"alpha": np.asarray(alphas, dtype=float), **values})


def best_alpha_index(curves: np.ndarray) -> np.ndarray:
    """Index of the best α along the last axis; ties go to the largest α.

    Args:
        curves: Correlations, shape ``(..., a)`` (NaN ignored).

    Returns:
        Indices, shape ``curves.shape[:-1]``; -1 where a curve is all NaN.
    """
    reversed_curves = np.where(np.isnan(curves), -np.inf, curves)[..., ::-1]
    index = curves.shape[-1] - 1 - np.argmax(reversed_curves, axis=-1)
    return np.where(np.all(np.isnan(curves), axis=-1), -1, index)


@dataclass
class CorrelationResult:
    """The α sweep for one IF column.

    Attributes:
        curve: Columns ``alpha`` and, per correlation type, the value and its interval
            (``pearson, pearson_lower, pearson_upper, ...``).
        best: Type → ``{"alpha", "r", "ci", "alpha_ci"}``; ``ci`` is the interval of the
            correlation at the best α, ``alpha_ci`` the interval of the best α itself.
        models: Models used, in input order.
        n_resamples: Bootstrap resamples over models.
        undefined_resamples: Resamples where a correlation was undefined (a constant
            vector), per type; they are left out of that type's intervals.
        level: Interval coverage.
    """

    curve: pd.DataFrame
    best: dict[str, dict[str, object]]
    models: list[str]
    n_resamples: int
    undefined_resamples: dict[str, int] = field(default_factory=dict)
    level: float = 0.95


def correlate(
    models: Sequence[str],
    func: Sequence[float] | np.ndarray,
    if_score: Sequence[float] | np.ndarray,
    elo: Sequence[float] | np.ndarray,
    *,
    alphas: np.ndarray | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> CorrelationResult:
    """Sweep α, pick the best α per correlation type and bootstrap over models.

    Args:
        models: Model names (matched and complete: no NaN in any score).
        func: Functional score per model.
        if_score: Instruction-following score per model.
        elo: Elo rating per model.
        alphas: Weights on IF (default: :func:`alpha_grid` with step 0.1).
        n_resamples: Bootstrap resamples over models (0: no intervals).
        seed: Bootstrap seed.
        level: Interval coverage.

    Returns:
        The curves, the best α per type and their intervals.

    Raises:
        CorrelateError: Fewer than three models, NaN scores, or a constant Elo column.
    """
    func = np.asarray(func, dtype=float)
    if_score = np.asarray(if_score, dtype=float)
    elo = np.asarray(elo, dtype=float)
    alphas = alpha_grid() if alphas is None else np.asarray(alphas, dtype=float)
    m = len(models)
    if not (len(func) == len(if_score) == len(elo) == m):
        raise CorrelateError("models, func, if_score and elo must have the same length")
    if m < 3:
        raise CorrelateError(
            f"a correlation needs at least three models with scores and an Elo rating; got {m}"
        )
    if np.isnan(np.stack([func, if_score, elo])).any():
        raise CorrelateError("scores and Elo ratings must not be NaN (list incomplete models)")
    if np.ptp(elo) == 0:
        raise CorrelateError("every model has the same Elo rating; nothing to correlate with")
    curve = sweep(func, if_score, elo, alphas)
    lows = {t: np.full(len(alphas), np.nan) for t in CORRELATIONS}
    highs = {t: np.full(len(alphas), np.nan) for t in CORRELATIONS}
    best_boot: dict[str, np.ndarray] = {t: np.empty(0) for t in CORRELATIONS}
    undefined = dict.fromkeys(CORRELATIONS, 0)
    if n_resamples > 0:
        boot = _bootstrap_curves(func, if_score, elo, alphas, n_resamples, seed)
        for t in CORRELATIONS:
            values = boot[t]
            # a correlation is finite or NaN (constant vector): the rows percentile_bands keeps
            valid = np.isfinite(values).all(axis=1)
            undefined[t] = int((~valid).sum())
            lows[t], highs[t] = percentile_bands(values, level)
            if valid.any():
                best_boot[t] = alphas[best_alpha_index(values[valid])]
    for t in CORRELATIONS:
        curve[f"{t}_lower"] = lows[t]
        curve[f"{t}_upper"] = highs[t]
    curve = curve[["alpha", *[f"{t}{s}" for t in CORRELATIONS for s in ("", "_lower", "_upper")]]]
    best: dict[str, dict[str, object]] = {}
    for t in CORRELATIONS:
        index = int(best_alpha_index(curve[t].to_numpy())) if not curve[t].isna().all() else -1
        if index < 0:
            best[t] = {"alpha": None, "r": None, "ci": [None, None], "alpha_ci": [None, None]}
            continue
        alpha_ci: list[float | None] = [None, None]
        if best_boot[t].size:
            alpha_ci = list(percentile_interval(best_boot[t], level, outward=True))
        best[t] = {
            "alpha": float(alphas[index]),
            "r": float(curve[t].iloc[index]),
            "ci": [_maybe(lows[t][index]), _maybe(highs[t][index])],
            "alpha_ci": alpha_ci,
        }
    return CorrelationResult(curve, best, list(models), n_resamples, undefined, level)


def _maybe(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _bootstrap_curves(
    func: np.ndarray,
    if_score: np.ndarray,
    elo: np.ndarray,
    alphas: np.ndarray,
    n_resamples: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """Correlation curves on resamples of the models, shape ``(resamples, alphas)`` each."""
    m = len(func)
    picks = resample_indices(m, n_resamples, seed)
    out = {t: np.empty((n_resamples, len(alphas))) for t in CORRELATIONS}
    batch = max(1, _BATCH_CELLS // (len(alphas) * m * m))
    for start in range(0, n_resamples, batch):
        chunk = picks[start : start + batch]
        x = composite(func[chunk], if_score[chunk], alphas)
        values = correlations(x, elo[chunk][:, None, :])
        for t in CORRELATIONS:
            out[t][start : start + len(chunk)] = values[t]
    return out


def scores_from_records(records: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """Per-model Func and IF from scored records.

    ``func`` = share of records with a functional result whose status is ``pass``;
    ``if`` = mean ``if_instruction`` over records where it is not null; ``if_<k>`` the
    same over records carrying ``k`` instructions (IF at several instruction counts).

    Args:
        records: Dicts with ``model``, ``func_pass`` (bool or None), ``if_instruction``
            (float or None) and ``n_instructions`` (int or None), as returned by
            :func:`prefjudge.ranking.inputs.read_scored_records`.

    Returns:
        One row per model (input order): ``model, func, if, n_func, n_if, if_<k>...``;
        NaN where a model has no record to average.
    """
    frame = pd.DataFrame(list(records), columns=["model", "func_pass", "if_instruction",
                                                 "n_instructions"])
    frame["func_value"] = frame["func_pass"].map({True: 1.0, False: 0.0})
    frame["if_value"] = pd.to_numeric(frame["if_instruction"], errors="coerce")
    grouped = frame.groupby("model", sort=False)
    table = pd.DataFrame({
        "func": grouped["func_value"].mean(),
        "if": grouped["if_value"].mean(),
        "n_func": grouped["func_value"].count(),
        "n_if": grouped["if_value"].count(),
    })
    counts = frame["n_instructions"].dropna().astype(int)
    for k in sorted(counts.unique()):
        subset = frame[frame["n_instructions"] == k]
        table[f"if_{k}"] = subset.groupby("model", sort=False)["if_value"].mean()
    return table.reset_index()
