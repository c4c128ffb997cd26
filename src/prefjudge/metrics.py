"""Pure metric functions over scored records, with seeded bootstrap confidence intervals.

Definitions (per model, over the scored samples given):

* instruction-level IF: the mean over samples of the fraction of a sample's determinable
  instructions that pass (a check with status ``error`` is left out of the fraction);
* task-level IF: the share of samples whose instructions all pass (samples with an
  errored check and no failing one are undetermined and left out);
* pass@1: the mean over tasks of the share of a task's samples that pass their tests;
  ``timeout`` counts as not passing, ``error`` (the harness could not judge the code) is
  left out and counted apart; unbiased pass@k (Chen et al., 2021) when tasks have several
  samples;
* FR_k = (S0 - Sk) / S0, the relative functional regression from adding k instructions.

Confidence intervals are percentile bootstraps that resample *tasks* (all samples of a
task move together), seeded so that a rerun gives the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.records import ScoredSample

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0

SAMPLE_COLUMNS = [
    "model",
    "task_id",
    "k",
    "if_instruction",
    "if_task",
    "func_status",
    "func_pass",
    "check_errors",
]


def samples_frame(records: Iterable[ScoredSample | dict[str, Any]]) -> pd.DataFrame:
    """One row per scored sample.

    Args:
        records: Scored samples (records or their JSON dicts).

    Returns:
        Columns: model, task_id, k (number of instructions), if_instruction (float or NaN),
        if_task (1.0/0.0/NaN), func_status (str or None), func_pass (1.0/0.0, NaN when
        there is no functional verdict or it errored), check_errors (int).
    """
    rows = []
    for record in records:
        rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
        func_status = rec.func.status if rec.func else None
        func_pass = np.nan
        if func_status in ("pass", "fail", "timeout"):
            func_pass = 1.0 if func_status == "pass" else 0.0
        rows.append(
            {
                "model": rec.model,
                "task_id": rec.task_id,
                "k": int(getattr(rec, "k", None) or len(rec.instructions)),
                "if_instruction": np.nan if rec.if_instruction is None else rec.if_instruction,
                "if_task": np.nan if rec.if_task is None else float(rec.if_task),
                "func_status": func_status,
                "func_pass": func_pass,
                "check_errors": sum(r.status == "error" for r in rec.instruction_results),
            }
        )
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS)


def checks_frame(
    records: Iterable[ScoredSample | dict[str, Any]], categories: dict[str, str] | None = None
) -> pd.DataFrame:
    """One row per instruction check.

    Args:
        records: Scored samples.
        categories: Optional map instruction id -> category.

    Returns:
        Columns: model, task_id, instruction, category, position (1-based order in the
        prompt), status, passed (1.0/0.0, NaN for errors).
    """
    rows = []
    categories = categories or {}
    for record in records:
        rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
        for position, result in enumerate(rec.instruction_results, start=1):
            passed = np.nan if result.status == "error" else float(result.status == "pass")
            rows.append(
                {
                    "model": rec.model,
                    "task_id": rec.task_id,
                    "instruction": result.id,
                    "category": categories.get(result.id, result.id.split("_")[0]),
                    "position": position,
                    "status": result.status,
                    "passed": passed,
                }
            )
    columns = ["model", "task_id", "instruction", "category", "position", "status", "passed"]
    return pd.DataFrame(rows, columns=columns)


def _task_means(frame: pd.DataFrame, column: str) -> pd.Series:
    """Mean of ``column`` per task over the rows where it is known."""
    known = frame.dropna(subset=[column])
    return known.groupby("task_id", sort=True)[column].mean()


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    statistic: Callable[[np.ndarray], float] = np.mean,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over ``values``.

    Args:
        values: One value per resampling unit (e.g. per task).
        statistic: Function of a resampled array.
        resamples: Number of bootstrap resamples.
        seed: RNG seed.
        level: Coverage of the interval.

    Returns:
        ``(lower, upper)``; ``(nan, nan)`` when there are no values.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    if statistic is np.mean:
        stats = data[idx].mean(axis=1)
    else:
        stats = np.array([statistic(data[row]) for row in idx])
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def mean_with_ci(
    per_task: pd.Series, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, float]:
    """Mean of per-task values with a task-level bootstrap CI.

    Args:
        per_task: One value per task.
        resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        ``{"value", "lower", "upper", "n_tasks"}``.
    """
    values = per_task.to_numpy(dtype=float)
    low, high = bootstrap_ci(values, resamples=resamples, seed=seed)
    value = float(values.mean()) if values.size else float("nan")
    return {"value": value, "lower": low, "upper": high, "n_tasks": int(values.size)}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator for one task (Chen et al., 2021).

    Args:
        n: Samples generated for the task.
        c: Samples that passed.
        k: The k of pass@k (``k <= n``).

    Returns:
        The probability that at least one of k samples drawn without replacement passes.

    Raises:
        ValueError: When ``k`` exceeds ``n``.
    """
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_table(frame: pd.DataFrame, ks: Sequence[int] = (1,)) -> pd.DataFrame:
    """Unbiased pass@k per model for each k that every task has enough samples for.

    Args:
        frame: Output of :func:`samples_frame`.
        ks: The k values wanted.

    Returns:
        Columns: model, k, value, lower, upper, n_tasks.
    """
    rows = []
    judged = frame.dropna(subset=["func_pass"])
    for model, group in judged.groupby("model", sort=True):
        counts = group.groupby("task_id")["func_pass"].agg(["count", "sum"])
        for k in ks:
            if (counts["count"] < k).any():
                continue
            per_task = pd.Series(
                [pass_at_k(int(n), int(c), k)
                 for n, c in zip(counts["count"], counts["sum"], strict=True)],
                index=counts.index,
            )
            rows.append({"model": model, "k": k, **mean_with_ci(per_task)})
    return pd.DataFrame(rows, columns=["model", "k", "value", "lower", "upper", "n_tasks"])


def model_summary(
    frame: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """The per-model summary printed by ``prefjudge score``.

    Args:
        frame: Output of :func:`samples_frame`.
        resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        One row per model: n, if_instruction(+_lower/_upper), if_task(+CI), pass1(+CI),
        check_errors, func_fail, func_timeout, func_error, func_missing.
    """
    rows = []
    for model, group in frame.groupby("model", sort=True):
        row: dict[str, Any] = {"model": model, "n": len(group)}
        for name, column in (("if_instruction", "if_instruction"), ("if_task", "if_task"),
                             ("pass1", "func_pass")):
            stats = mean_with_ci(_task_means(group, column), resamples=resamples, seed=seed)
            row[name] = stats["value"]
            row[f"{name}_lower"] = stats["lower"]
            row[f"{name}_upper"] = stats["upper"]
        status = group["func_status"]
        row["check_errors"] = int(group["check_errors"].sum())
        row["func_fail"] = int((status == "fail").sum())
        row["func_timeout"] = int((status == "timeout").sum())
        row["func_error"] = int((status == "error").sum())
        row["func_missing"] = int(status.isna().sum())
        rows.append(row)
    return pd.DataFrame(rows)


def functional_regression(
    frame: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """FR_k = (S0 - Sk) / S0 per model and k, with a paired task bootstrap CI.

    Needs runs of the same tasks with 0 instructions (S0) and with k instructions (Sk);
    only tasks present at both k=0 and k are used for that k.

    Args:
        frame: Output of :func:`samples_frame`.
        resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        Columns: model, k, s0, sk, fr, lower, upper, n_tasks.
    """
    rows = []
    judged = frame.dropna(subset=["func_pass"])
    for model, group in judged.groupby("model", sort=True):
        by_k = group.groupby(["k", "task_id"])["func_pass"].mean()
        if 0 not in by_k.index.get_level_values("k"):
            continue
        base = by_k.loc[0]
        rng_seed = seed
        for k in sorted(set(by_k.index.get_level_values("k")) - {0}):
            paired = pd.concat([base, by_k.loc[k]], axis=1, join="inner").to_numpy()
            if paired.size == 0:
                continue
            s0, sk = paired.mean(axis=0)
            rng = np.random.default_rng(rng_seed)
            idx = rng.integers(0, len(paired), size=(resamples, len(paired)))
            boot = paired[idx].mean(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                fr_boot = (boot[:, 0] - boot[:, 1]) / boot[:, 0]
            fr_boot = fr_boot[np.isfinite(fr_boot)]
            low, high = (np.quantile(fr_boot, [0.025, 0.975]) if fr_boot.size
                         else (np.nan, np.nan))
            fr = (s0 - sk) / s0 if s0 > 0 else float("nan")
            rows.append({"model": model, "k": int(k), "s0": float(s0), "sk": float(sk),
                         "fr": float(fr), "lower": float(low), "upper": float(high),
                         "n_tasks": len(paired)})
    return pd.DataFrame(rows, columns=["model", "k", "s0", "sk", "fr", "lower", "upper",
                                       "n_tasks"])


def if_by(
    checks: pd.DataFrame, key: str, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Instruction pass rate per model and ``key`` (position, category or instruction).

    Args:
        checks: Output of :func:`checks_frame`.
        key: Column to group by.
        resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, <key>, value, lower, upper, n_tasks, n_checks, errors.
    """
    rows = []
    for (model, value), group in checks.groupby(["model", key], sort=True):
        stats = mean_with_ci(_task_means(group, "passed"), resamples=resamples, seed=seed)
        rows.append({"model": model, key: value, **stats, "n_checks": len(group),
                     "errors": int((group["status"] == "error").sum())})
    return pd.DataFrame(rows, columns=["model", key, "value", "lower", "upper", "n_tasks",
                                       "n_checks", "errors"])
