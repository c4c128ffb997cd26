"""Pure metric functions over scored records, with seeded bootstrap confidence intervals.

Definitions (per model, over the scored samples given):

* instruction-level IF: the mean over samples of the fraction of a sample's determinable
  instructions that pass (a check with status ``error`` is left out of the fraction);
* task-level IF: the share of samples whose instructions all pass (samples with an
  errored check and no failing one are undetermined and left out);
* pass@1: the mean over tasks of the share of a task's samples that pass their tests;
  ``timeout`` counts as not passing, ``error`` (the harness could not judge the code) is
  left out and counted apart; unbiased pass@k (Chen et al., 2021) when tasks have several
  samples: the mean over tasks of 1 - C(n - c, k) / C(n, k), n a task's judged samples
  and c those that pass, for each k of :data:`PASS_KS` that every task of the model has
  at least k judged samples for (EvalPlus's rule; pass@1 is always shown);
* base and plus (HumanEval+/MBPP+ tasks only, as EvalPlus reports them): pass@k on the
  base inputs alone, and on base and plus inputs together (a sample passes "plus" only
  when it passes both); a sample whose run ended in ``error`` is left out of both;
* FR_k = (S0 - Sk) / S0, the relative functional regression from adding k instructions;
* co-failure lift: for two instructions given together, the observed rate at which both
  fail divided by the product of their separate failure rates over the same samples
  (1 under independence, above 1 when they fail together more than chance predicts);
* retention (multi-turn): of the instructions a model satisfied at the turn that
  introduced them, the share still satisfied at a later turn.

Confidence intervals are the project's seeded percentile bootstrap (:mod:`prefjudge.stats`;
``bootstrap_ci`` here is that function) resampling *tasks* (all samples of a task move
together), so that a rerun gives the same interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.records import ScoredSample
from prefjudge.scoring.co_failure import CO_FAILURE_COLUMNS as CO_FAILURE_COLUMNS
from prefjudge.scoring.co_failure import co_failure as co_failure
from prefjudge.scoring.retention import final_retention as final_retention
from prefjudge.scoring.retention import retention_curve as retention_curve
from prefjudge.scoring.retention import turns_frame as turns_frame
from prefjudge.scoring.rows import SAMPLE_COLUMNS, protocol_of, sample_k, sample_row
from prefjudge.scoring.task_ci import mean_with_ci
from prefjudge.scoring.task_ci import task_means as _task_means
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval, resample_indices
from prefjudge.stats import bootstrap_ci as bootstrap_ci

PROTOCOLS = ("single", "multi")

SUMMARY_COLUMNS = [
    "model",
    "n",
    "if_instruction",
    "if_instruction_lower",
    "if_instruction_upper",
    "if_task",
    "if_task_lower",
    "if_task_upper",
    "pass1",
    "pass1_lower",
    "pass1_upper",
    "base_pass1",
    "base_pass1_lower",
    "base_pass1_upper",
    "plus_pass1",
    "plus_pass1_lower",
    "plus_pass1_upper",
    "pass10",
    "pass10_lower",
    "pass10_upper",
    "pass100",
    "pass100_lower",
    "pass100_upper",
    "check_errors",
    "func_fail",
    "func_timeout",
    "func_error",
    "func_missing",
    "gen_errors",
]
"""Columns of :func:`model_summary` (also when there are no records).

``n`` counts the samples that are answers; ``gen_errors`` the generations whose model
call failed (left out of every rate, counted here alone).

``base_pass1`` and ``plus_pass1`` are NaN for a model without HumanEval+/MBPP+ samples;
``pass10`` and ``pass100`` are NaN unless every task of the model has at least 10 (100)
judged samples."""

PASS_KS = (1, 10, 100)
"""The k of pass@k that summaries and reports show (EvalPlus's; BigCodeBench's own
``pass_at_k.json`` uses 1, 5, 10: see :mod:`prefjudge.scoring.export`)."""

TEST_SETS = {"all": "func_pass", "base": "base_pass", "plus": "plus_pass"}
"""Which tests a pass@k figure counts -> the column of :func:`samples_frame` it reads: all
of a task's tests, or EvalPlus's base inputs, or base and plus inputs together."""


def samples_frame(records: Iterable[ScoredSample | dict[str, Any]]) -> pd.DataFrame:
    """One row per scored sample.

    Args:
        records: Scored samples (records or their JSON dicts).

    Returns:
        Columns: model, task_id, k (number of instructions), if_instruction (float or NaN),
        if_task (1.0/0.0/NaN), func_status (str or None), func_pass (1.0/0.0, NaN when
        there is no functional verdict or it errored), check_errors (int), protocol
        (field ``protocol`` of the record, ``"single"`` when absent), base_pass and
        plus_pass (1.0/0.0 for HumanEval+/MBPP+ samples, else NaN; see
        :func:`prefjudge.scoring.rows.sample_row`).
    """
    return rows_frame([sample_row(record) for record in records])


def rows_frame(rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """:func:`samples_frame` from rows made by :func:`sample_row`."""
    return pd.DataFrame(list(rows), columns=SAMPLE_COLUMNS)


def checks_frame(
    records: Iterable[ScoredSample | dict[str, Any]], categories: dict[str, str] | None = None
) -> pd.DataFrame:
    """One row per instruction check.

    Args:
        records: Scored samples.
        categories: Optional map instruction id -> category.

    Returns:
        Columns: model, task_id, instruction, category, position (1-based order in the
        prompt), status, passed (1.0/0.0, NaN for errors), then sample (index of the
        record in ``records``), protocol and k (as in :func:`samples_frame`).
    """
    rows = []
    categories = categories or {}
    for index, record in enumerate(records):
        rec = record if isinstance(record, ScoredSample) else ScoredSample.model_validate(record)
        k = sample_k(rec)
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
                    "sample": index,
                    "protocol": protocol_of(rec),
                    "k": k,
                }
            )
    columns = ["model", "task_id", "instruction", "category", "position", "status", "passed",
               "sample", "protocol", "k"]
    return pd.DataFrame(rows, columns=columns)


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


def pass_at_k_per_task(frame: pd.DataFrame, k: int, column: str = "func_pass") -> pd.Series:
    """Unbiased pass@k of each task, or an empty series when some task has fewer than k.

    Args:
        frame: Rows of :func:`samples_frame` (one model's, usually).
        k: The k of pass@k.
        column: The verdict column (see :data:`TEST_SETS`); NaN rows are left out.

    Returns:
        pass@k by task id (sorted); empty when no row has a verdict or some task has fewer
        than ``k`` judged samples (pass@k is then not defined for the whole set).
    """
    if column not in frame.columns:
        return pd.Series(dtype=float)
    judged = frame.dropna(subset=[column])
    counts = judged.groupby("task_id", sort=True)[column].agg(["count", "sum"])
    if counts.empty or (counts["count"] < k).any():
        return pd.Series(dtype=float)
    return pd.Series(
        [pass_at_k(int(n), int(c), k) for n, c in zip(counts["count"], counts["sum"], strict=True)],
        index=counts.index, dtype=float,
    )


def pass_at_k_table(
    frame: pd.DataFrame, ks: Sequence[int] = (1,), *, tests: Sequence[str] = ("all",),
    n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Unbiased pass@k per model for each k that every task has enough samples for.

    Args:
        frame: Output of :func:`samples_frame`.
        ks: The k values wanted.
        tests: Which figures (keys of :data:`TEST_SETS`: ``all``, ``base``, ``plus``); a
            figure with no verdict for a model (``base`` without HumanEval+/MBPP+ samples)
            has no row.
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, tests, k, value, lower, upper, n_tasks.
    """
    rows = []
    for model, group in frame.groupby("model", sort=True):
        for name in tests:
            for k in ks:
                per_task = pass_at_k_per_task(group, k, TEST_SETS[name])
                if per_task.empty:
                    continue
                rows.append({"model": model, "tests": name, "k": k,
                             **mean_with_ci(per_task, n_resamples=n_resamples, seed=seed)})
    return pd.DataFrame(rows, columns=["model", "tests", "k", "value", "lower", "upper",
                                       "n_tasks"])


def model_summary(
    frame: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """The per-model summary printed by ``prefjudge score``.

    Args:
        frame: Output of :func:`samples_frame`.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        One row per model: n, if_instruction(+_lower/_upper), if_task(+CI), pass1(+CI),
        base_pass1 and plus_pass1 (+CI; HumanEval+/MBPP+ samples only), pass10 and
        pass100 (+CI; when every task has that many judged samples), check_errors,
        func_fail, func_timeout, func_error, func_missing, gen_errors (failed model
        requests, in no other column) (:data:`SUMMARY_COLUMNS`); no
        rows, with those columns, when ``frame`` is empty.
    """
    if frame.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    rows = []
    for model, everything in frame.groupby("model", sort=True):
        failed = everything["gen_error"].astype(bool)
        group = everything[~failed]
        row: dict[str, Any] = {"model": model, "n": len(group)}
        figures = [("if_instruction", _task_means(group, "if_instruction")),
                   ("if_task", _task_means(group, "if_task")),
                   ("pass1", _task_means(group, "func_pass")),
                   ("base_pass1", pass_at_k_per_task(group, 1, "base_pass")),
                   ("plus_pass1", pass_at_k_per_task(group, 1, "plus_pass"))]
        figures += [(f"pass{k}", pass_at_k_per_task(group, k)) for k in PASS_KS if k > 1]
        for name, per_task in figures:
            stats = mean_with_ci(per_task, n_resamples=n_resamples, seed=seed)
            row[name] = stats["value"]
            row[f"{name}_lower"] = stats["lower"]
            row[f"{name}_upper"] = stats["upper"]
        status = group["func_status"]
        row["check_errors"] = int(group["check_errors"].sum())
        row["func_fail"] = int((status == "fail").sum())
        row["func_timeout"] = int((status == "timeout").sum())
        row["func_error"] = int((status == "error").sum())
        row["func_missing"] = int(status.isna().sum())
        row["gen_errors"] = int(failed.sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def functional_regression(
    frame: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """FR_k = (S0 - Sk) / S0 per model and k, with a paired task bootstrap CI.

    Needs runs of the same tasks with 0 instructions (S0) and with k instructions (Sk);
    only tasks present at both k=0 and k are used for that k.

    Args:
        frame: Output of :func:`samples_frame`.
        n_resamples: Bootstrap resamples.
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
        for k in sorted(set(by_k.index.get_level_values("k")) - {0}):
            paired = pd.concat([base, by_k.loc[k]], axis=1, join="inner").to_numpy()
            if paired.size == 0:
                continue
            s0, sk = paired.mean(axis=0)
            idx = resample_indices(len(paired), n_resamples, seed)  # paired: both columns
            boot = paired[idx].mean(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                fr_boot = (boot[:, 0] - boot[:, 1]) / boot[:, 0]
            # FR_k's interval has always used the literal quantiles 0.025/0.975, which differ
            # from (1 - 0.95) / 2 in the last bit; passing them keeps the numbers unchanged.
            low, high = percentile_interval(fr_boot, tails=(0.025, 0.975))
            fr = (s0 - sk) / s0 if s0 > 0 else float("nan")
            rows.append({"model": model, "k": int(k), "s0": float(s0), "sk": float(sk),
                         "fr": float(fr), "lower": float(low), "upper": float(high),
                         "n_tasks": len(paired)})
    return pd.DataFrame(rows, columns=["model", "k", "s0", "sk", "fr", "lower", "upper",
                                       "n_tasks"])


def if_by(
    checks: pd.DataFrame, key: str, *, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Instruction pass rate per model and ``key`` (position, category or instruction).

    Args:
        checks: Output of :func:`checks_frame`.
        key: Column to group by.
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, <key>, value, lower, upper, n_tasks, n_checks, errors.
    """
    rows = []
    for (model, value), group in checks.groupby(["model", key], sort=True):
        stats = mean_with_ci(_task_means(group, "passed"), n_resamples=n_resamples, seed=seed)
        rows.append({"model": model, key: value, **stats, "n_checks": len(group),
                     "errors": int((group["status"] == "error").sum())})
    return pd.DataFrame(rows, columns=["model", key, "value", "lower", "upper", "n_tasks",
                                       "n_checks", "errors"])


def _protocol_parts(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Split a frame by its ``protocol`` column: single, multi, then any others."""
    if "protocol" not in frame.columns:
        return [("single", frame)]
    present = list(dict.fromkeys(frame["protocol"].fillna("single")))
    order = [p for p in PROTOCOLS if p in present] + sorted(p for p in present
                                                             if p not in PROTOCOLS)
    return [(p, frame[frame["protocol"].fillna("single") == p]) for p in order]


def _tag_protocol(parts: list[tuple[str, pd.DataFrame]], columns: list[str]) -> pd.DataFrame:
    """Concatenate per-protocol tables with a ``protocol`` column after ``model``."""
    tagged = [table.assign(protocol=p) for p, table in parts if len(table)]
    out_columns = ["model", "protocol", *[c for c in columns if c not in ("model", "protocol")]]
    if not tagged:
        return pd.DataFrame(columns=out_columns)
    return pd.concat(tagged, ignore_index=True)[out_columns]


def summary_by_protocol(
    frame: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """:func:`model_summary` per model and protocol.

    Args:
        frame: Output of :func:`samples_frame`.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        The columns of :func:`model_summary` with ``protocol`` after ``model``.
    """
    parts = [(p, model_summary(part, n_resamples=n_resamples, seed=seed))
             for p, part in _protocol_parts(frame)]
    return _tag_protocol(parts, SUMMARY_COLUMNS)


def pass_at_k_by_protocol(
    frame: pd.DataFrame, ks: Sequence[int] = PASS_KS, *,
    tests: Sequence[str] = tuple(TEST_SETS), n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """:func:`pass_at_k_table` per protocol.

    Args:
        frame: Output of :func:`samples_frame`.
        ks: The k values wanted (each shown where every task has at least k samples).
        tests: Which figures (keys of :data:`TEST_SETS`).
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, protocol, tests, k, value, lower, upper, n_tasks.
    """
    parts = [(p, pass_at_k_table(part, ks, tests=tests, n_resamples=n_resamples, seed=seed))
             for p, part in _protocol_parts(frame)]
    return _tag_protocol(parts, ["model", "tests", "k", "value", "lower", "upper", "n_tasks"])


def metrics_by_k(
    frame: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """Instruction-level IF, task-level IF and pass@1 per model, protocol and k, with CIs.

    Args:
        frame: Output of :func:`samples_frame`.
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Long format, columns: model, protocol, k, metric (``if_instruction``, ``if_task``
        or ``pass1``), value, lower, upper, n_tasks. Rows with no known value (e.g. IF at
        k = 0) are left out.
    """
    rows = []
    for protocol, part in _protocol_parts(frame):
        for (model, k), group in part.groupby(["model", "k"], sort=True):
            for metric, column in (("if_instruction", "if_instruction"),
                                   ("if_task", "if_task"), ("pass1", "func_pass")):
                per_task = _task_means(group, column)
                if per_task.empty:
                    continue
                rows.append({"model": model, "protocol": protocol, "k": int(k),
                             "metric": metric,
                             **mean_with_ci(per_task, n_resamples=n_resamples, seed=seed)})
    return pd.DataFrame(rows, columns=["model", "protocol", "k", "metric", "value", "lower",
                                       "upper", "n_tasks"])


def functional_regression_by_protocol(
    frame: pd.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """:func:`functional_regression` per protocol.

    A protocol without its own k = 0 runs is compared with the k = 0 runs of the other
    protocols (with no instruction, single- and multi-turn prompts are the same).

    Args:
        frame: Output of :func:`samples_frame`.
        n_resamples: Bootstrap resamples.
        seed: RNG seed.

    Returns:
        Columns: model, protocol, k, s0, sk, fr, lower, upper, n_tasks.
    """
    zero = frame[frame["k"] == 0]
    parts = []
    for protocol, part in _protocol_parts(frame):
        if not (part["k"] == 0).any():
            part = pd.concat([zero, part], ignore_index=True)
        parts.append((protocol, functional_regression(part, n_resamples=n_resamples, seed=seed)))
    return _tag_protocol(parts, ["model", "k", "s0", "sk", "fr", "lower", "upper", "n_tasks"])


def if_by_protocol(
    checks: pd.DataFrame, key: str, *, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """:func:`if_by` per protocol.

    Args:
        checks: Output of :func:`checks_frame`.
        key: Column to group by (position, category or instruction).
        n_resamples: Bootstrap resamples (over tasks).
        seed: RNG seed.

    Returns:
        Columns: model, protocol, <key>, value, lower, upper, n_tasks, n_checks, errors.
    """
    parts = [(p, if_by(part, key, n_resamples=n_resamples, seed=seed))
             for p, part in _protocol_parts(checks)]
    return _tag_protocol(parts, ["model", key, "value", "lower", "upper", "n_tasks",
                                 "n_checks", "errors"])
