"""Co-failure lift: which instructions given together fail together more than chance."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

CO_FAILURE_COLUMNS = ["instruction_a", "instruction_b", "n", "fail_a", "fail_b", "joint_fail",
                      "expected", "lift", "n_joint"]


def co_failure(
    checks: pd.DataFrame, *, min_count: int = 5, by: Sequence[str] = ("model",)
) -> pd.DataFrame:
    """Which instructions fail together more often than independence predicts.

    For each pair of instructions given together in at least ``min_count`` samples (both
    checks determinable), over those samples: the failure rate of each, the observed rate
    at which both fail, the product of the two failure rates (what independence
    predicts) and their ratio, the lift.

    Args:
        checks: Output of :func:`checks_frame` (needs its ``sample`` column).
        min_count: Fewest samples a pair must share to be reported.
        by: Columns to compute the matrix within (default per model; ``()`` pools all).

    Returns:
        Columns: <by...>, instruction_a, instruction_b (a < b), n (samples with both),
        fail_a, fail_b, joint_fail, expected (fail_a · fail_b), lift (joint_fail /
        expected, NaN when expected is 0), n_joint (samples where both fail); sorted by
        lift, highest first.
    """
    by = list(by)
    known = checks.dropna(subset=["passed"])
    groups = known.groupby(by, sort=True) if by else [((), known)]
    rows = []
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        failed = group.assign(failed=1.0 - group["passed"]).pivot_table(
            index="sample", columns="instruction", values="failed", aggfunc="max")
        names = list(failed.columns)
        values = failed.to_numpy(dtype=float)
        assigned = (~np.isnan(values)).astype(float)
        fails = np.nan_to_num(values)
        counts = assigned.T @ assigned
        fail_a_sum = fails.T @ assigned  # [a, b]: failures of a where b is also given
        joint_sum = fails.T @ fails
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                n = int(counts[i, j])
                if n < min_count or n == 0:
                    continue
                fail_a = fail_a_sum[i, j] / n
                fail_b = fail_a_sum[j, i] / n
                joint = joint_sum[i, j] / n
                expected = fail_a * fail_b
                lift = joint / expected if expected > 0 else float("nan")
                rows.append({**dict(zip(by, key, strict=True)), "instruction_a": names[i],
                             "instruction_b": names[j], "n": n, "fail_a": float(fail_a),
                             "fail_b": float(fail_b), "joint_fail": float(joint),
                             "expected": float(expected), "lift": float(lift),
                             "n_joint": int(np.rint(joint_sum[i, j]))})
    frame = pd.DataFrame(rows, columns=[*by, *CO_FAILURE_COLUMNS])
    return frame.sort_values(["lift", "n"], ascending=[False, False], na_position="last",
                             ignore_index=True)
