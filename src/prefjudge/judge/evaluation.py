"""How closely judge verdicts agree with human labels, and what they cost.

Definitions, over the verdicts that carry a human ``label`` (the others are skipped and
counted as ``n_unlabelled``):

* a verdict is *judged* when its status is ``ok`` and it names a ``preferred`` side; any
  other verdict (status ``error``, or ``ok`` without a preference) is an *error*: it is
  never counted as right, wrong or a tie, and is reported apart (``n_error`` and the
  ``error`` column of the confusion matrix);
* accuracy: the share of judged verdicts whose ``preferred`` equals the ``label``;
* accuracy with ties as half (``accuracy_ties_half``): as accuracy, except that a predicted
  tie on a pair the humans labelled ``A`` or ``B`` scores 0.5 instead of 0 (a common
  convention in the judge literature: a tie is half right about either side). A predicted
  side on a human tie still scores 0;
* accuracy over all pairs (``accuracy_all_half``): as accuracy with ties as half, but over
  every labelled pair, an error scoring like a tie (the judge could not decide, so it is
  right half the time at best by guessing): the figure that does not improve by erring;
* macro-F1: the unweighted mean of the per-class F1 over the classes (of ``labels``) that
  occur among the gold labels or the predictions of the judged verdicts. Per class,
  precision = TP / (TP + FP) and recall = TP / (TP + FN), each 0 when its denominator is 0,
  and F1 = 2PR / (P + R), 0 when P + R is 0 (scikit-learn's ``zero_division=0``);
* position consistency: the share of judged verdicts whose final verdict survived the
  swap of presentation order (over those where it is known);
* tie rate: the share of judged verdicts that predict a tie;
* criterion inconsistency: the mean of ``inconsistency_rate`` over the labelled verdicts
  where it is known (an errored verdict may still have judged its criteria).

Confidence intervals are seeded percentile bootstraps (95 %, :mod:`prefjudge.stats`) that
resample judged pairs with replacement; the same resamples serve accuracy and macro-F1, so
a rerun with the same seed gives the same intervals. All results are plain JSON values:
ints, floats, strings, lists and dicts, with ``None`` where a value is undefined, never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.records import NO_EVIDENCE, Verdict
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval, resample_indices

LABELS = ("A", "B", "tie")
ERROR = "error"
COST_FIELDS = (
    "requests",
    "model_calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "errors",
)
COMPARE_COLUMNS = [
    "n",
    "errors",
    "undecided",
    "accuracy_all_half",
    "all_lo",
    "all_hi",
    "accuracy",
    "acc_lo",
    "acc_hi",
    "macro_f1",
    "f1_lo",
    "f1_hi",
    "position_consistency",
    "tie_rate",
    "criterion_inconsistency",
    "calls_per_pair",
    "tokens_per_pair",
    "cache_hits",
]


def _judged(verdict: Verdict) -> bool:
    """Whether a verdict counts as a judgement (status ok and a preferred side)."""
    return verdict.status == "ok" and verdict.preferred is not None


def _ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator`` as a float, None when the denominator is 0."""
    return float(numerator) / float(denominator) if denominator else None


def _percentile_ci(stats: np.ndarray) -> list[float] | None:
    """95 % percentile interval of bootstrap statistics, ignoring NaNs; None when none is finite."""
    low, high = percentile_interval(stats)
    return None if math.isnan(low) else [low, high]


def _class_counts(gold: np.ndarray, pred: np.ndarray, code: int) -> tuple[Any, Any, Any]:
    """TP, FP and FN of class ``code`` along the last axis of coded gold/pred arrays."""
    is_gold = gold == code
    is_pred = pred == code
    tp = (is_gold & is_pred).sum(axis=-1)
    fp = (~is_gold & is_pred).sum(axis=-1)
    fn = (is_gold & ~is_pred).sum(axis=-1)
    return tp, fp, fn


def _macro_f1_coded(gold: np.ndarray, pred: np.ndarray, codes: Sequence[int]) -> np.ndarray:
    """Macro-F1 along the last axis of coded arrays (NaN where no class occurs).

    Args:
        gold: Gold class codes, shape ``(..., n)``.
        pred: Predicted class codes, same shape.
        codes: Codes of the classes to average over; a class counts in a row only when it
            occurs among that row's gold labels or predictions.

    Returns:
        Macro-F1 per row, shape ``gold.shape[:-1]``.
    """
    total = np.zeros(gold.shape[:-1], dtype=float)
    present = np.zeros(gold.shape[:-1], dtype=float)
    for code in codes:
        tp, fp, fn = _class_counts(gold, pred, code)
        with np.errstate(divide="ignore", invalid="ignore"):
            f1 = np.where(tp > 0, 2.0 * tp / (2.0 * tp + fp + fn), 0.0)
        occurs = (tp + fp + fn) > 0
        total += np.where(occurs, f1, 0.0)
        present += occurs
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(present > 0, total / np.maximum(present, 1.0), np.nan)


def _per_class(gold: list[str], pred: list[str], classes: Sequence[str]) -> dict[str, Any]:
    """Precision, recall, F1, support and predicted count per class."""
    out: dict[str, Any] = {}
    for cls in classes:
        tp = sum(g == cls and p == cls for g, p in zip(gold, pred, strict=True))
        fp = sum(g != cls and p == cls for g, p in zip(gold, pred, strict=True))
        fn = sum(g == cls and p != cls for g, p in zip(gold, pred, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[cls] = {
            "precision": float(precision),
            "recall": float(recall),
            "f1": float(f1),
            "support": tp + fn,
            "predicted": tp + fp,
        }
    return out


def _cost(verdicts: Sequence[Verdict]) -> dict[str, dict[str, Any]]:
    """Cost totals and per-pair means over ``verdicts``."""
    total = {name: int(sum(getattr(v.cost, name) for v in verdicts)) for name in COST_FIELDS}
    per_pair = {name: _ratio(value, len(verdicts)) for name, value in total.items()}
    return {"total": total, "per_pair": per_pair}


def _confusion(
    gold: Iterable[str], outcome: Iterable[str], labels: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Nested counts gold → predicted (or ``error``) → count, zeros included."""
    gold = list(gold)
    outcome = list(outcome)
    rows = list(labels) + sorted(set(gold) - set(labels))
    columns = list(labels) + sorted(set(outcome) - set(labels) - {ERROR}) + [ERROR]
    counts = Counter(zip(gold, outcome, strict=True))
    return {g: {p: int(counts[(g, p)]) for p in columns} for g in rows}


def _half_credit(gold: str | None, pred: str | None) -> float:
    """1 for agreement, 0.5 for a tie against a preference, else 0."""
    return 1.0 if gold == pred else (0.5 if pred == "tie" and gold != "tie" else 0.0)


def _agreement(labelled: list[Verdict], gold: list[str], pred: list[str],
               labels: Sequence[str], n_resamples: int, seed: int) -> dict[str, Any]:
    """Accuracy (three ways) and macro-F1 of the judged verdicts, with bootstrap intervals."""
    n_ok = len(gold)
    correct = np.array([g == p for g, p in zip(gold, pred, strict=True)], dtype=float)
    half = np.array([_half_credit(g, p) for g, p in zip(gold, pred, strict=True)], dtype=float)
    classes = [c for c in labels if c in set(gold) | set(pred)]
    codes = {c: i for i, c in enumerate(dict.fromkeys([*labels, *gold, *pred]))}
    gold_coded = np.array([codes[g] for g in gold], dtype=int)
    pred_coded = np.array([codes[p] for p in pred], dtype=int)
    class_codes = [codes[c] for c in classes]

    accuracy = float(correct.mean()) if n_ok else None
    macro_f1 = float(_macro_f1_coded(gold_coded, pred_coded, class_codes)) if classes else None
    accuracy_ci = macro_f1_ci = half_ci = None
    if n_ok and n_resamples > 0:
        idx = resample_indices(n_ok, n_resamples, seed)
        accuracy_ci = _percentile_ci(correct[idx].mean(axis=1))
        half_ci = _percentile_ci(half[idx].mean(axis=1))
    # over every labelled pair: an error (the judge could not decide) scores like a tie
    every = np.array(
        [
            _half_credit(v.label, v.preferred) if _judged(v)
            else (0.5 if v.label != "tie" else 0.0)
            for v in labelled
        ],
        dtype=float,
    )
    every_ci = None
    if every.size and n_resamples > 0:
        every_idx = resample_indices(every.size, n_resamples, seed)
        every_ci = _percentile_ci(every[every_idx].mean(axis=1))
        if classes:
            macro_f1_ci = _percentile_ci(
                _macro_f1_coded(gold_coded[idx], pred_coded[idx], class_codes)
            )
    return {
        "accuracy": accuracy,
        "accuracy_ci": accuracy_ci,
        "accuracy_ties_half": float(half.mean()) if n_ok else None,
        "accuracy_ties_half_ci": half_ci,
        "accuracy_all_half": float(every.mean()) if every.size else None,
        "accuracy_all_half_ci": every_ci,
        "macro_f1": macro_f1,
        "macro_f1_ci": macro_f1_ci,
        "classes": classes,
    }


def _by_category(labelled: list[Verdict]) -> dict[str, dict[str, Any]]:
    """Category → ``{n, n_ok, accuracy}`` over the verdicts that have a category."""
    by_category: dict[str, dict[str, Any]] = {}
    categories = sorted({v.category for v in labelled if v.category is not None})
    for category in categories:
        members = [v for v in labelled if v.category == category]
        ok = [v for v in members if _judged(v)]
        right = sum(v.preferred == v.label for v in ok)
        by_category[category] = {
            "n": len(members),
            "n_ok": len(ok),
            "accuracy": _ratio(right, len(ok)),
        }
    return by_category


def evaluate_verdicts(
    verdicts: list[Verdict],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    labels: Sequence[str] = LABELS,
) -> dict[str, Any]:
    """Agreement of one judge's verdicts with the human labels (see the module docstring).

    Args:
        verdicts: Verdicts of one method; those without a ``label`` are skipped.
        n_resamples: Bootstrap resamples for the confidence intervals.
        seed: RNG seed of the bootstrap.
        labels: The classes macro-F1 may average over, in display order (a class counts
            only when it occurs among the gold labels or predictions).

    Returns:
        A JSON-serialisable dict with keys:

        * ``methods``: the distinct methods among the labelled verdicts (sorted);
        * ``n`` (labelled pairs), ``n_ok`` (judged), ``n_error``, ``n_unlabelled``,
          ``n_undecided`` (judged pairs that are ties nothing decided: the evidence had no
          fact for them, ``decided_by`` ``evidence:none``; they count as ties);
        * ``accuracy`` and ``accuracy_ci`` (``[lower, upper]``), ``accuracy_ties_half`` and
          ``accuracy_ties_half_ci``, ``accuracy_all_half`` and ``accuracy_all_half_ci``;
        * ``decided_by``: which path decided the verdicts (evidence and hybrid; see
          :func:`_decided_by`);
        * ``macro_f1`` and ``macro_f1_ci``; ``classes`` (those averaged over) and
          ``per_class`` (class → precision, recall, f1, support, predicted);
        * ``position_consistency`` (with ``n_position_known``), ``tie_rate``,
          ``criterion_inconsistency`` (with ``n_criterion_known``);
        * ``confusion``: gold → predicted → count, with an ``error`` column;
        * ``cost``: ``total`` and ``per_pair`` (means over the ``n`` labelled pairs) of
          requests, model_calls, cache_hits, prompt_tokens, completion_tokens, errors;
        * ``by_category``: category → ``{n, n_ok, accuracy}`` over the verdicts that have a
          category (empty when none has one);
        * ``n_boot`` (the ``n_resamples`` given) and ``seed``.

        Undefined values (e.g. accuracy with no judged verdict) are ``None``.
    """
    labelled = [v for v in verdicts if v.label is not None]
    judged = [v for v in labelled if _judged(v)]
    gold = [str(v.label) for v in judged]
    pred = [str(v.preferred) for v in judged]
    n_ok = len(judged)
    agreement = _agreement(labelled, gold, pred, labels, n_resamples, seed)
    classes = agreement["classes"]
    known_position = [v.position_consistent for v in judged if v.position_consistent is not None]
    known_rates = [
        float(v.inconsistency_rate) for v in labelled if v.inconsistency_rate is not None
    ]
    known_rates = [r for r in known_rates if math.isfinite(r)]
    return {
        "methods": sorted({v.method for v in labelled}),
        "n": len(labelled),
        "n_ok": n_ok,
        "n_error": len(labelled) - n_ok,
        "n_unlabelled": len(verdicts) - len(labelled),
        "n_undecided": sum(v.decided_by == NO_EVIDENCE for v in judged),
        **agreement,
        "per_class": _per_class(gold, pred, classes),
        "position_consistency": _ratio(sum(known_position), len(known_position)),
        "n_position_known": len(known_position),
        "tie_rate": _ratio(sum(p == "tie" for p in pred), n_ok),
        "criterion_inconsistency": _ratio(sum(known_rates), len(known_rates)),
        "n_criterion_known": len(known_rates),
        "confusion": _confusion(
            (str(v.label) for v in labelled),
            (str(v.preferred) if _judged(v) else ERROR for v in labelled),
            labels,
        ),
        "cost": _cost(labelled),
        "by_category": _by_category(labelled),
        "decided_by": _decided_by(labelled),
        "n_boot": int(n_resamples),
        "seed": int(seed),
    }


def _decided_by(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """Which path decided the verdicts (``evidence:<kind>``, ``llm``), with what the model cost.

    Returns:
        ``{}`` when no verdict names its path (the model-based methods); else ``counts``
        (path → verdicts), ``evidence_share`` (share decided by a fact), ``llm_calls_per_pair``
        (model calls per model-judged verdict) and ``calls_saved`` (evidence-decided
        verdicts × that mean: what judging them with the model would have cost).
    """
    paths = [v.decided_by for v in verdicts if v.decided_by is not None]
    if not paths:
        return {}
    counts = Counter(paths)
    by_llm = [v for v in verdicts if v.decided_by == "llm"]
    per_llm = _ratio(sum(v.cost.model_calls for v in by_llm), len(by_llm))
    decided = sum(
        1
        for v in verdicts
        if v.decided_by and v.decided_by.startswith("evidence:") and v.preferred in ("A", "B")
    )
    return {
        "counts": dict(sorted(counts.items())),
        "evidence_share": _ratio(decided, len(verdicts)),
        "llm_calls_per_pair": per_llm,
        "calls_saved": None if per_llm is None else decided * per_llm,
    }


def evaluate_by_split(
    verdicts: list[Verdict],
    split_of: dict[str, str],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, dict[str, Any]]:
    """:func:`evaluate_verdicts` per split (e.g. the four CodePrefBench files).

    Args:
        verdicts: Verdicts of one method over several splits.
        split_of: Pair id → split name; verdicts of other pairs are left out.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        Split → result, in the order splits first occur in ``split_of``.
    """
    groups: dict[str, list[Verdict]] = {name: [] for name in dict.fromkeys(split_of.values())}
    for verdict in verdicts:
        name = split_of.get(verdict.pair_id)
        if name is not None:
            groups[name].append(verdict)
    return {
        name: evaluate_verdicts(members, n_resamples=n_resamples, seed=seed)
        for name, members in groups.items()
        if members
    }


def _nan(value: float | None) -> float:
    """``value`` as a float, NaN for None (for DataFrame cells)."""
    return float("nan") if value is None else float(value)


def compare_methods(results: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The side-by-side table of several methods' :func:`evaluate_verdicts` results.

    Args:
        results: Method name → output of :func:`evaluate_verdicts`.

    Returns:
        One row per method (index ``method``, in the order given) with columns ``n``,
        ``errors``, ``undecided`` (ties nothing decided), ``accuracy_all_half``, ``all_lo``,
        ``all_hi`` (over every labelled pair, ties and errors half: the headline figure),
        ``accuracy``, ``acc_lo``, ``acc_hi`` (strict: over the judged pairs, a tie
        wrong), ``macro_f1``, ``f1_lo``, ``f1_hi``,
        ``position_consistency``, ``tie_rate``, ``criterion_inconsistency``,
        ``calls_per_pair`` (model calls per labelled pair), ``tokens_per_pair`` (prompt plus
        completion tokens per labelled pair) and ``cache_hits`` (total). Undefined values
        are NaN.
    """
    rows = []
    for result in results.values():
        acc_ci = result.get("accuracy_ci") or [None, None]
        f1_ci = result.get("macro_f1_ci") or [None, None]
        per_pair = result["cost"]["per_pair"]
        tokens = (
            None
            if per_pair["prompt_tokens"] is None
            else per_pair["prompt_tokens"] + per_pair["completion_tokens"]
        )
        all_ci = result.get("accuracy_all_half_ci") or [None, None]
        rows.append(
            {
                "n": int(result["n"]),
                "errors": int(result["n_error"]),
                "undecided": int(result.get("n_undecided", 0)),
                "accuracy_all_half": _nan(result["accuracy_all_half"]),
                "all_lo": _nan(all_ci[0]),
                "all_hi": _nan(all_ci[1]),
                "accuracy": _nan(result["accuracy"]),
                "acc_lo": _nan(acc_ci[0]),
                "acc_hi": _nan(acc_ci[1]),
                "macro_f1": _nan(result["macro_f1"]),
                "f1_lo": _nan(f1_ci[0]),
                "f1_hi": _nan(f1_ci[1]),
                "position_consistency": _nan(result["position_consistency"]),
                "tie_rate": _nan(result["tie_rate"]),
                "criterion_inconsistency": _nan(result["criterion_inconsistency"]),
                "calls_per_pair": _nan(per_pair["model_calls"]),
                "tokens_per_pair": _nan(tokens),
                "cache_hits": int(result["cost"]["total"]["cache_hits"]),
            }
        )
    frame = pd.DataFrame(
        rows, columns=COMPARE_COLUMNS, index=pd.Index(list(results), name="method")
    )
    return frame.astype({"n": int, "errors": int, "undecided": int, "cache_hits": int})


def _by_pair(verdicts: Iterable[Verdict], which: str) -> dict[str, Verdict]:
    """Verdicts keyed by pair id; raises on a duplicate id."""
    out: dict[str, Verdict] = {}
    for verdict in verdicts:
        if verdict.pair_id in out:
            raise ValueError(f"duplicate pair_id {verdict.pair_id!r} in verdicts_{which}")
        out[verdict.pair_id] = verdict
    return out


def paired_difference(
    verdicts_x: list[Verdict],
    verdicts_y: list[Verdict],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Accuracy difference of two methods on the labelled pairs both judged.

    Pairs are joined on ``pair_id``; only pairs that carry a label and that both methods
    judged (status ok with a preferred side) are compared. The interval resamples those
    pairs (both methods' outcomes move together); the p-value is McNemar's exact test,
    a two-sided binomial test of the discordant pairs against 1/2.

    Args:
        verdicts_x: Verdicts of the first method.
        verdicts_y: Verdicts of the second method.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        A JSON-serialisable dict: ``n`` (pairs compared), ``accuracy_x``, ``accuracy_y``,
        ``difference`` (x minus y) and ``difference_ci`` (``[lower, upper]``),
        ``x_only`` (pairs only x got right), ``y_only`` (only y), ``both_right``,
        ``both_wrong``, ``p_value`` (1.0 when there is no discordant pair), and
        ``n_boot`` (the ``n_resamples`` given) and ``seed``. Undefined values are ``None``
        (when ``n`` is 0).

    Raises:
        ValueError: When a pair id repeats within one list, or the two lists give one
            pair different labels.
    """
    from scipy.stats import binomtest

    by_x = _by_pair(verdicts_x, "x")
    by_y = _by_pair(verdicts_y, "y")
    right_x: list[float] = []
    right_y: list[float] = []
    for pair_id, vx in by_x.items():
        vy = by_y.get(pair_id)
        if vy is None:
            continue
        if vx.label is not None and vy.label is not None and vx.label != vy.label:
            raise ValueError(
                f"pair {pair_id!r} has label {vx.label!r} in verdicts_x and "
                f"{vy.label!r} in verdicts_y"
            )
        label = vx.label if vx.label is not None else vy.label
        if label is None or not (_judged(vx) and _judged(vy)):
            continue
        right_x.append(float(vx.preferred == label))
        right_y.append(float(vy.preferred == label))
    x = np.array(right_x, dtype=float)
    y = np.array(right_y, dtype=float)
    n = int(x.size)
    x_only = int(((x == 1) & (y == 0)).sum())
    y_only = int(((x == 0) & (y == 1)).sum())
    discordant = x_only + y_only
    p_value = float(binomtest(x_only, discordant, 0.5).pvalue) if discordant else 1.0
    difference_ci = None
    if n and n_resamples > 0:
        idx = resample_indices(n, n_resamples, seed)  # paired: x and y move together
        difference_ci = _percentile_ci((x[idx] - y[idx]).mean(axis=1))
    return {
        "n": n,
        "accuracy_x": float(x.mean()) if n else None,
        "accuracy_y": float(y.mean()) if n else None,
        "difference": float((x - y).mean()) if n else None,
        "difference_ci": difference_ci,
        "x_only": x_only,
        "y_only": y_only,
        "both_right": int(((x == 1) & (y == 1)).sum()),
        "both_wrong": int(((x == 0) & (y == 0)).sum()),
        "p_value": min(1.0, p_value) if n else None,
        "n_boot": int(n_resamples),
        "seed": int(seed),
    }
