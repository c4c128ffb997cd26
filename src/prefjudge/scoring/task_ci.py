"""Per-task means and their task-level bootstrap interval: the unit every metric resamples."""

from __future__ import annotations

import pandas as pd

from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_ci


def task_means(frame: pd.DataFrame, column: str) -> pd.Series:
    """Mean of ``column`` per task over the rows where it is known."""
    known = frame.dropna(subset=[column])
    return known.groupby("task_id", sort=True)[column].mean()


def mean_with_ci(
    per_task: pd.Series, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, float]:
    """Mean of per-task values with a task-level bootstrap CI.

    Args:
        per_task: One value per task.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        ``{"value", "lower", "upper", "n_tasks"}``.
    """
    values = per_task.to_numpy(dtype=float)
    low, high = bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
    value = float(values.mean()) if values.size else float("nan")
    return {"value": value, "lower": low, "upper": high, "n_tasks": int(values.size)}

