from math import comb

import numpy as np
import pandas as pd
import pytest

from prefjudge.records import CheckResult, FuncResult, InstructionRef, ScoredSample
from prefjudge.scoring import metrics


def sample(model, task, *, func=None, checks=(), k=None, **extra):
    results = [CheckResult(id=i, status=s) for i, s in checks]
    passed = sum(s == "pass" for _, s in checks)
    failed = sum(s == "fail" for _, s in checks)
    return ScoredSample(
        task_id=task, model=model, response="",
        instructions=[InstructionRef(id=i) for i, _ in checks],
        instruction_results=results,
        if_instruction=passed / (passed + failed) if passed + failed else None,
        if_task=(False if failed else (True if checks and passed == len(checks) else None)),
        func=FuncResult(status=func) if func else None,
        **({"k": k} if k is not None else {}), **extra,
    )


@pytest.mark.parametrize("n,c,k", [(n, c, k) for n in range(1, 8) for c in range(n + 1)
                                   for k in range(1, n + 1)])
def test_pass_at_k_matches_combinatorial_definition(n, c, k):
    expected = 1 - comb(n - c, k) / comb(n, k)
    assert metrics.pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_rejects_k_above_n():
    with pytest.raises(ValueError, match="at least 3"):
        metrics.pass_at_k(2, 1, 3)


def test_errors_are_left_out_of_pass1_and_counted_apart():
    records = [sample("m", "t1", func="pass"), sample("m", "t2", func="error"),
               sample("m", "t3", func="timeout"), sample("m", "t4")]
    frame = metrics.samples_frame(records)
    summary = metrics.model_summary(frame, n_resamples=200)
    row = summary.iloc[0]
    # t1 passes, t3 times out (not passing), t2 errored (unknown), t4 has no tests
    assert row["pass1"] == pytest.approx(0.5)
    assert row["func_error"] == 1 and row["func_timeout"] == 1 and row["func_missing"] == 1


def test_summary_per_model_and_task_level_ci():
    records = []
    for t in range(40):
        records.append(sample("good", f"t{t}", func="pass",
                              checks=[("style_1", "pass"), ("doc_1", "pass")]))
        records.append(sample("bad", f"t{t}", func="pass" if t % 4 == 0 else "fail",
                              checks=[("style_1", "fail"),
                                      ("doc_1", "pass" if t % 2 else "error")]))
    frame = metrics.samples_frame(records)
    summary = metrics.model_summary(frame, n_resamples=500).set_index("model")
    assert summary.loc["good", "pass1"] == 1.0
    assert summary.loc["good", "if_task"] == 1.0
    assert summary.loc["bad", "pass1"] == pytest.approx(0.25)
    assert summary.loc["bad", "if_task"] == 0.0
    # half the bad samples have an errored doc_1: those count 0/1, the others 1/2
    assert summary.loc["bad", "if_instruction"] == pytest.approx(0.25)
    assert summary.loc["bad", "check_errors"] == 20
    lo, hi = summary.loc["bad", "pass1_lower"], summary.loc["bad", "pass1_upper"]
    assert lo < 0.25 < hi and hi - lo < 0.4


def test_bootstrap_is_seeded_and_has_nominal_width():
    rng = np.random.default_rng(1)
    values = (rng.random(2000) < 0.3).astype(float)
    a = metrics.bootstrap_ci(values, seed=7)
    b = metrics.bootstrap_ci(values, seed=7)
    c = metrics.bootstrap_ci(values, seed=8)
    assert a == b and a != c
    half_width = 1.96 * np.sqrt(values.mean() * (1 - values.mean()) / values.size)
    assert (a[1] - a[0]) / 2 == pytest.approx(half_width, rel=0.15)
    assert all(np.isnan(metrics.bootstrap_ci([])))


def test_functional_regression_paired_on_tasks():
    records = []
    for t in range(10):
        records.append(sample("m", f"t{t}", func="pass" if t < 8 else "fail", k=0))
        records.append(sample("m", f"t{t}", func="pass" if t < 6 else "fail", k=3))
    records.append(sample("m", "only-at-k3", func="fail", k=3))  # unpaired: ignored
    table = metrics.functional_regression(metrics.samples_frame(records), n_resamples=300)
    row = table.iloc[0]
    assert row["k"] == 3 and row["n_tasks"] == 10
    assert row["s0"] == pytest.approx(0.8) and row["sk"] == pytest.approx(0.6)
    assert row["fr"] == pytest.approx(0.25)
    assert row["lower"] <= 0.25 <= row["upper"]


def test_if_by_position_and_category():
    records = [sample("m", f"t{t}", checks=[("style_1", "pass"), ("doc_1", "fail"),
                                            ("logic_1", "error")]) for t in range(5)]
    checks = metrics.checks_frame(records)
    by_pos = metrics.if_by(checks, "position", n_resamples=100).set_index("position")
    assert by_pos.loc[1, "value"] == 1.0 and by_pos.loc[2, "value"] == 0.0
    assert np.isnan(by_pos.loc[3, "value"]) and by_pos.loc[3, "errors"] == 5
    by_cat = metrics.if_by(checks, "category", n_resamples=100).set_index("category")
    assert set(by_cat.index) == {"style", "doc", "logic"}


def test_unbiased_pass_at_k_table_with_several_samples():
    records = [sample("m", "t1", func=s) for s in ("pass", "fail", "fail", "fail")]
    records += [sample("m", "t2", func=s) for s in ("pass", "pass", "fail", "fail")]
    table = metrics.pass_at_k_table(metrics.samples_frame(records), ks=(1, 2, 5))
    values = dict(zip(table["k"], table["value"], strict=True))
    assert values[1] == pytest.approx((0.25 + 0.5) / 2)
    assert values[2] == pytest.approx((0.5 + 5 / 6) / 2)
    assert 5 not in values  # only 4 samples per task
    assert isinstance(table, pd.DataFrame)


# Intervals pinned to the numbers of the implementations before prefjudge.stats (same seed,
# same input): the move to the shared bootstrap must not change a single bit.
PINNED_VALUES = [0.1, 0.5, 0.9, 1.0, 0.0, 0.3, 0.7, 0.25, 0.6]


def test_bootstrap_ci_numbers_are_pinned():
    assert metrics.bootstrap_ci(PINNED_VALUES, n_resamples=200, seed=3) == (
        0.27152777777777787, 0.7002777777777779)
    assert metrics.bootstrap_ci(PINNED_VALUES, statistic=np.median, n_resamples=200, seed=3,
                                level=0.9) == (0.25, 0.7)
    assert metrics.bootstrap_ci([0.4], n_resamples=50, seed=0) == (0.4, 0.4)
    assert metrics.mean_with_ci(pd.Series(PINNED_VALUES), n_resamples=300, seed=11) == {
        "value": 0.4833333333333333, "lower": 0.2970833333333334,
        "upper": 0.6833333333333333, "n_tasks": 9}


def test_functional_regression_numbers_are_pinned():
    rows = []
    for t in range(12):
        rows.append({"model": "m", "k": 0, "task_id": f"t{t}", "func_pass": float(t % 5 != 0)})
        rows.append({"model": "m", "k": 2, "task_id": f"t{t}", "func_pass": float(t % 3 != 0)})
        rows.append({"model": "m", "k": 4, "task_id": f"t{t}", "func_pass": float(t % 2 == 0)})
    table = metrics.functional_regression(pd.DataFrame(rows), n_resamples=250, seed=5)
    assert table[["lower", "upper"]].to_numpy().tolist() == [
        [-0.5714285714285713, 0.4897727272727275],
        [-0.23875000000000005, 0.7000000000000001],
    ]
