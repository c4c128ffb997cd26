"""Judge bias diagnostics: does the judge favour the first-shown, longer or more formatted answer?

Measured on labelled pairs, each against the humans' rate on the same pairs:

* **first shown**: the share of the judge's decisive verdicts *before the swap* (the
  ``forward`` order, in which response A is shown first) that pick A; the humans' rate is
  the share of their decisive labels that pick A (A is the side they were shown first, or
  listed first, in every pair format prefjudge reads). Methods without orders (pointwise,
  evidence) have no figure.
* **longer**: over pairs whose two responses differ in length (``token_len``), the share
  of decisive picks that go to the longer response.
* **more formatted**: the same over pairs that differ in markdown elements (headers +
  list items + bold spans).
* **style regression**: a logistic regression of "A preferred" (decisive outcomes only)
  on the pair's standardised style differences, each feature as
  ``(a − b) / (a + b + 1)`` (arena-hard-auto's construction) with an intercept (the
  position effect), fitted once on the judge's verdicts and once on the human labels of
  the same pairs. A judge more length-biased than the developers has a larger
  ``token_len`` coefficient.

Every rate and coefficient comes with a 95 % percentile bootstrap interval over pairs
(seeded). Features are counted by :mod:`prefjudge.features` (the tokenizer's name is in
the result).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from prefjudge.features import FEATURE_NAMES, TokenCounter, response_features, tokenizer_for
from prefjudge.records import Pair, Verdict
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval, resample_indices

REGRESSION_FEATURES = ("token_len", "markdown")
"""The style regression's features: length, and all markdown elements together."""


def _markdown(features: dict[str, int]) -> int:
    return features["header_count"] + features["list_count"] + features["bold_count"]


def _ratio_diff(a: float, b: float) -> float:
    """arena-hard-auto's per-feature difference: ``(a − b) / (a + b + 1)``."""
    return (a - b) / (a + b + 1)


def _interval(values: np.ndarray) -> list[float] | None:
    low, high = percentile_interval(values)
    return None if np.isnan(low) else [float(low), float(high)]


def _rate(picks: np.ndarray, n_resamples: int, seed: int) -> dict[str, Any]:
    """Share of 1s in a 0/1 array, with its bootstrap interval."""
    n = int(picks.size)
    if n == 0:
        return {"n": 0, "rate": None, "ci": None}
    ci = None
    if n_resamples > 0:
        idx = resample_indices(n, n_resamples, seed)
        ci = _interval(picks[idx].mean(axis=1))
    return {"n": n, "rate": float(picks.mean()), "ci": ci}


def fit_logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Unpenalised logistic regression with an intercept (column 0 of the result).

    Args:
        x: Features, shape ``(n, k)``.
        y: Outcomes 0/1, shape ``(n,)``.

    Returns:
        ``[intercept, coef_1, ..., coef_k]``; a separable sample has no finite optimum,
        so a tiny ridge (1e-6) keeps the answer finite.
    """
    design = np.column_stack([np.ones(len(y)), x])

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = design @ w
        value = -(y * log_expit(z) + (1 - y) * log_expit(-z)).sum() + 0.5e-6 * w @ w
        grad = design.T @ (expit(z) - y) + 1e-6 * w
        return float(value), grad

    found = minimize(loss, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B",
                     options={"gtol": 1e-10, "maxiter": 1000})
    return found.x


def _regression(x: np.ndarray, y: np.ndarray, n_resamples: int, seed: int) -> dict[str, Any]:
    names = ("intercept (first shown)", *REGRESSION_FEATURES)
    if len(y) < 5 or len(set(y.tolist())) < 2:
        return {"n": len(y), "coefficients": {}, "note": "too few decisive outcomes"}
    point = fit_logistic(x, y)
    boot = []
    if n_resamples > 0:
        for idx in resample_indices(len(y), n_resamples, seed):
            boot.append(fit_logistic(x[idx], y[idx]))
    boot_arr = np.array(boot) if boot else np.empty((0, len(names)))
    return {
        "n": len(y),
        "coefficients": {
            name: {"value": float(point[i]),
                   "ci": _interval(boot_arr[:, i]) if len(boot_arr) else None}
            for i, name in enumerate(names)
        },
    }


MAX_COUNT = 2**53
"""Largest count read back from a verdict (a float holds every whole number up to it)."""


def recorded_counts(features: dict[str, float] | None) -> dict[str, int] | None:
    """A verdict's recorded style features, when they are what prefjudge writes.

    Every name of :data:`FEATURE_NAMES` with a whole count from 0 to :data:`MAX_COUNT`. A
    verdict read back from a file may hold anything else (a field given twice in one
    line, where JSON keeps the last value; a count edited to ``NaN``, ``-1`` or ``1e400``): such
    features are not read.

    Args:
        features: ``features_a`` or ``features_b`` of a verdict.

    Returns:
        The counts by name, or None when the features are missing or not such counts.
    """
    if features is None:
        return None
    counts = {}
    for name in FEATURE_NAMES:
        value = features.get(name)
        if not (isinstance(value, int | float) and 0 <= value <= MAX_COUNT and value % 1 == 0):
            return None
        counts[name] = int(value)
    return counts


def _features(verdict: Verdict, pair: Pair, counter: TokenCounter
              ) -> tuple[dict[str, int], dict[str, int]]:
    """Both responses' features: the verdict's own when the same counter wrote them.

    Features a verdict holds that are not a whole set of counts (:func:`recorded_counts`)
    are counted again from the pair's responses, as a run that never wrote them would.
    """
    if verdict.features_by == counter.name:
        a, b = recorded_counts(verdict.features_a), recorded_counts(verdict.features_b)
        if a is not None and b is not None:
            return a, b
    return (response_features(pair.response_a, counter),
            response_features(pair.response_b, counter))


def bias_diagnostics(
    verdicts: Sequence[Verdict],
    pairs: Sequence[Pair],
    *,
    counter: TokenCounter | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    regression_n_resamples: int = 200,
) -> dict[str, Any]:
    """The judge's position, length and formatting biases beside the humans' (module docstring).

    Args:
        verdicts: One method's verdicts.
        pairs: The pairs they judge (responses and labels), matched on ``pair_id``.
        counter: Token counter for ``token_len`` (default: ``tokenizer_for(None)``, see
            :func:`tokenizer_for`); verdicts whose features this counter wrote
            (``features_by``) are not counted again.
        n_resamples: Bootstrap resamples of the rates.
        seed: RNG seed.
        regression_n_resamples: Bootstrap refits of each style regression.

    Returns:
        A JSON-serialisable dict: ``tokenizer``, ``n_pairs``, and ``first_shown``,
        ``longer``, ``more_formatted`` (each ``{"judge": rate, "human": rate}`` with
        ``n``, ``rate`` and ``ci``), and ``style_regression`` (``judge`` and ``human``,
        each with coefficients and intervals).
    """
    counter = counter or tokenizer_for(None)
    by_id = {p.pair_id: p for p in pairs}
    rows = []
    for verdict in verdicts:
        pair = by_id.get(verdict.pair_id)
        if pair is None or pair.label is None or verdict.status != "ok":
            continue
        rows.append((verdict, pair, *_features(verdict, pair, counter)))
    first_judge = np.array([v.orders.get("forward") == "A" for v, *_ in rows
                            if v.orders.get("forward") in ("A", "B")], dtype=float)
    first_human = np.array([p.label == "A" for _, p, *_ in rows if p.label in ("A", "B")],
                           dtype=float)

    def picks(size: Any, who: str) -> np.ndarray:
        out = []
        for v, p, fa, fb in rows:
            a, b = size(fa), size(fb)
            side = v.preferred if who == "judge" else p.label
            if a != b and side in ("A", "B"):
                out.append((side == "A") == (a > b))
        return np.array(out, dtype=float)

    def regression(who: str) -> dict[str, Any]:
        xs, ys = [], []
        for v, p, fa, fb in rows:
            side = v.preferred if who == "judge" else p.label
            if side not in ("A", "B"):
                continue
            xs.append([_ratio_diff(fa["token_len"], fb["token_len"]),
                       _ratio_diff(_markdown(fa), _markdown(fb))])
            ys.append(1.0 if side == "A" else 0.0)
        x = np.array(xs, dtype=float).reshape(-1, len(REGRESSION_FEATURES))
        if len(x):
            std = x.std(axis=0)
            x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
        return _regression(x, np.array(ys), regression_n_resamples, seed)

    def length(f: dict[str, int]) -> int:
        return f["token_len"]

    return {
        "tokenizer": counter.name,
        "features": list(FEATURE_NAMES),
        "n_pairs": len(rows),
        "first_shown": {"judge": _rate(first_judge, n_resamples, seed),
                        "human": _rate(first_human, n_resamples, seed)},
        "longer": {"judge": _rate(picks(length, "judge"), n_resamples, seed),
                   "human": _rate(picks(length, "human"), n_resamples, seed)},
        "more_formatted": {"judge": _rate(picks(_markdown, "judge"), n_resamples, seed),
                           "human": _rate(picks(_markdown, "human"), n_resamples, seed)},
        "style_regression": {"judge": regression("judge"), "human": regression("human")},
    }
