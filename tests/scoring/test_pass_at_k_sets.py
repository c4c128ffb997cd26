"""pass@k (unbiased, with task-bootstrap intervals) and EvalPlus's base and plus figures."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from prefjudge.records import FuncResult, ScoredSample, SetResult
from prefjudge.scoring import metrics
from prefjudge.scoring.run import summary_table
from prefjudge.testbed.report import build_report


def evalplus(task: str, base: str, plus: str, *, model: str = "m") -> ScoredSample:
    """A HumanEval+ sample judged on each input set (the task's verdict as the sandbox's)."""
    sets = {"base": SetResult(status=base), "plus": SetResult(status=plus)}
    status = base if base != "pass" else plus
    return ScoredSample(task_id=task, model=model, response="",
                        func=FuncResult(status=status, sets=sets))


def plain(task: str, status: str, *, model: str = "m") -> ScoredSample:
    """A sample of a task without input sets (BigCodeBench, HumanEval)."""
    return ScoredSample(task_id=task, model=model, response="", func=FuncResult(status=status))


def brute_force_pass_at_k(outcomes: list[bool], k: int) -> float:
    """The share of all k-subsets of the samples that hold a passing one."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_unbiased_estimator_equals_drawing_k_of_the_samples(n: int) -> None:
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            assert metrics.pass_at_k(n, c, k) == pytest.approx(
                brute_force_pass_at_k(outcomes, k), abs=1e-12), (n, c, k)


def test_pass_at_k_per_task_is_the_mean_of_brute_force_over_tasks() -> None:
    outcomes = {"t1": [1, 0, 0, 1, 0], "t2": [0, 0, 0, 0, 1], "t3": [1, 1, 1, 1, 1]}
    records = [plain(task, "pass" if ok else "fail")
               for task, runs in outcomes.items() for ok in runs]
    frame = metrics.samples_frame(records)
    table = metrics.pass_at_k_table(frame, ks=(1, 2, 3, 5, 6), n_resamples=200)
    got = dict(zip(table["k"], table["value"], strict=True))
    for k in (1, 2, 3, 5):
        want = np.mean([brute_force_pass_at_k([bool(x) for x in runs], k)
                        for runs in outcomes.values()])
        assert got[k] == pytest.approx(want)
    assert 6 not in got  # 5 samples per task: pass@6 is not defined


def test_pass_at_k_needs_k_judged_samples_in_every_task_errors_left_out() -> None:
    records = [plain("t1", "pass") for _ in range(10)]
    records += [plain("t2", "fail") for _ in range(9)] + [plain("t2", "error")]
    frame = metrics.samples_frame(records)
    assert metrics.pass_at_k_per_task(frame, 10).empty  # t2 has 9 judged samples
    summary = metrics.model_summary(frame, n_resamples=100).iloc[0]
    assert np.isnan(summary["pass10"]) and summary["func_error"] == 1
    assert summary["pass1"] == pytest.approx(0.5)
    records.append(plain("t2", "timeout"))  # a timeout is judged: it does not pass
    summary = metrics.model_summary(metrics.samples_frame(records), n_resamples=100).iloc[0]
    assert summary["pass10"] == pytest.approx(0.5)
    assert summary["func_timeout"] == 1 and summary["func_error"] == 1


def test_base_and_plus_are_evalplus_figures_and_other_tasks_have_none() -> None:
    records = [
        evalplus("HumanEval/0", "pass", "pass"),
        evalplus("HumanEval/0", "pass", "fail"),
        evalplus("HumanEval/1", "pass", "timeout"),
        evalplus("HumanEval/1", "fail", "fail"),
        evalplus("HumanEval/2", "pass", "error"),  # left out of base, plus and pass@1
        plain("BigCodeBench/1", "pass", model="other"),
    ]
    frame = metrics.samples_frame(records)
    assert frame["base_pass"].tolist()[:4] == [1.0, 1.0, 1.0, 0.0]
    assert frame["plus_pass"].tolist()[:4] == [1.0, 0.0, 0.0, 0.0]
    assert np.isnan(frame["base_pass"].iloc[4]) and np.isnan(frame["plus_pass"].iloc[4])
    assert np.isnan(frame["base_pass"].iloc[5])
    summary = metrics.model_summary(frame, n_resamples=100).set_index("model")
    assert summary.loc["m", "base_pass1"] == pytest.approx((1.0 + 0.5) / 2)
    assert summary.loc["m", "plus_pass1"] == pytest.approx((0.5 + 0.0) / 2)
    assert summary.loc["m", "plus_pass1"] == summary.loc["m", "pass1"]
    assert summary.loc["m", "func_error"] == 1
    assert np.isnan(summary.loc["other", "base_pass1"])
    table = metrics.pass_at_k_table(frame, ks=(1, 2), tests=("all", "base", "plus"))
    got = {(r.model, r.tests, r.k): r.value for r in table.itertuples()}
    assert got[("m", "base", 2)] == pytest.approx((1.0 + 1.0) / 2)
    assert got[("m", "plus", 2)] == pytest.approx((1.0 + 0.0) / 2)
    assert ("other", "base", 1) not in got and got[("other", "all", 1)] == 1.0


def test_intervals_are_a_seeded_task_bootstrap() -> None:
    rng = np.random.default_rng(7)
    # tasks of every difficulty: some are never solved in 10 samples, so pass@10 < 1
    records = [evalplus(f"HumanEval/{t}", "pass" if rng.random() < t / 30 else "fail",
                        "pass" if rng.random() < 0.8 else "fail")
               for t in range(30) for _ in range(10)]
    frame = metrics.samples_frame(records)
    one = metrics.model_summary(frame, n_resamples=300, seed=5)
    again = metrics.model_summary(frame, n_resamples=300, seed=5)
    other = metrics.model_summary(frame, n_resamples=300, seed=6)
    pd.testing.assert_frame_equal(one, again)
    columns = ["base_pass1_lower", "plus_pass1_upper", "pass10_lower"]
    assert not one[columns].equals(other[columns])
    row = one.iloc[0]
    for name in ("pass1", "base_pass1", "plus_pass1", "pass10"):
        assert row[f"{name}_lower"] < row[name] < row[f"{name}_upper"], name
    # the same interval as resampling the per-task values directly
    per_task = metrics.pass_at_k_per_task(frame, 10)
    assert (row["pass10_lower"], row["pass10_upper"]) == metrics.bootstrap_ci(
        per_task.to_numpy(), n_resamples=300, seed=5)


def test_score_table_shows_base_plus_and_pass_at_k_only_where_they_apply() -> None:
    bcb = [plain(f"BigCodeBench/{t}", "pass") for t in range(3)]
    table = summary_table(metrics.model_summary(metrics.samples_frame(bcb), n_resamples=50))
    assert not any("base" in c or "plus" in c or "@10" in c for c in table.columns)
    records = bcb + [evalplus(f"HumanEval/{t}", "pass", "fail", model="ep")
                     for t in range(2) for _ in range(10)]
    table = summary_table(metrics.model_summary(metrics.samples_frame(records), n_resamples=50))
    assert list(table.columns[5:8]) == ["base pass@1 [95% CI]", "plus pass@1 [95% CI]",
                                        "pass@10 [95% CI]"]
    shown = table.set_index("model")
    assert shown.loc["ep", "base pass@1 [95% CI]"].startswith("1.000")
    assert shown.loc["ep", "plus pass@1 [95% CI]"].startswith("0.000")
    assert shown.loc["m", "base pass@1 [95% CI]"] == "—"
    assert shown.loc["m", "pass@10 [95% CI]"] == "—"  # one sample per task
    assert "pass@100 [95% CI]" not in table.columns


def test_report_summary_has_pass_at_k_with_base_and_plus() -> None:
    records = [evalplus(f"HumanEval/{t}", "pass", "pass" if i < 5 else "fail")
               for t in range(3) for i in range(10)]
    records += [plain("BigCodeBench/1", "pass", model="a-first")]
    section = build_report(records, n_resamples=50).section("summary")
    shown = section.table("pass@k").display
    assert shown.iloc[0].tolist() == ["a-first", "single-turn", "all tests",
                                      "1.000 [1.000, 1.000]", "—", 1]
    shown = shown.iloc[1:]
    assert shown["tests"].tolist() == ["all tests", "base", "base + plus"]
    assert list(shown.columns) == ["model", "protocol", "tests", "pass@1 [95% CI]",
                                   "pass@10 [95% CI]", "n_tasks"]
    assert shown.iloc[1]["pass@1 [95% CI]"].startswith("1.000")
    assert shown.iloc[2]["pass@1 [95% CI]"].startswith("0.500")
    assert shown.iloc[2]["pass@10 [95% CI]"].startswith("1.000")
    assert shown["n_tasks"].tolist() == [3, 3, 3]
