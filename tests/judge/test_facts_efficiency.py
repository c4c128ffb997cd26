"""The efficiency evidence judge on real CodePrefBench pairs, in real sandboxes.

The pair used is ``Mbpp/757#6``: A counts reverse pairs with a dictionary (linear), B
compares every two strings character by character in Python (quadratic); EvalPerf labels
A the more efficient one.

A pair whose responses do not both pass is decided by its tests alone, by one rule that
``compare_efficiency``, the evidence judge (``run_efficiency``) and
``scripts/evidence_efficiency.py`` share; the last tests here hold them to it.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

import pytest

from prefjudge.judge.facts.correctness import correctness_fact
from prefjudge.judge.facts.efficiency import (
    COUNTER,
    compare_efficiency,
    correctness_decision,
)
from prefjudge.judge.facts.kinds import EvidenceRun, run_efficiency
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Fact, FuncResult, Pair, Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.adapters import perf_payload
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.tasks import load_tasks

PAIR_ID = "Mbpp/757#6"
LIMITS = SandboxLimits(timeout_s=30.0, cpu_s=30)
# Replaces every clock the code's own process could read: a judge that timed the code
# in that process would see it take no time at all.
FAKE_CLOCKS = """\
import os, resource, time
time.process_time = lambda: 0.0
time.perf_counter = lambda: 0.0
time.monotonic = lambda: 0.0
time.time = lambda: 0.0
time.process_time_ns = lambda: 0
time.perf_counter_ns = lambda: 0
os.times = lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0))
_usage = resource.getrusage(resource.RUSAGE_SELF)
resource.getrusage = lambda who: _usage
"""

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def real_pair(shared_data: Path) -> tuple[Pair, Task]:
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == PAIR_ID)
    tasks = load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")
    return pair, tasks[pair.task_id]


def compare(task: Task, code_a: str, code_b: str, plan: IsolationPlan, pool: ZygotePool,
            **options):
    return compare_efficiency(task, code_a, code_b, plan=plan, limits=LIMITS,
                              runner=pool.run, **options)


def test_the_linear_response_is_found_cheaper_than_the_quadratic_one(real_pair, plan, pool):
    pair, task = real_pair
    assert pair.label == "A"
    decision = compare(task, pair.response_a, pair.response_b, plan, pool)
    assert decision.outcome == "A", decision.fact
    assert decision.counter == COUNTER == "cpu_time:rusage"
    assert decision.stats["ratio"] >= 2.0
    assert decision.stats["p_value"] <= 0.05
    assert len(decision.samples["A"]) == len(decision.samples["B"]) >= 7
    assert all(value > 0 for values in decision.samples.values() for value in values)
    assert decision.inputs and decision.rounds >= 1
    assert "A is" in decision.fact and "cheaper" in decision.fact
    fact = decision.to_fact()
    assert fact.kind == "efficiency" and fact.outcome == "A"
    assert fact.detail["counter"] == COUNTER and fact.detail["inputs"] == list(decision.inputs)


def test_the_same_code_on_both_sides_is_a_tie(real_pair, plan, pool):
    pair, task = real_pair
    decision = compare(task, pair.response_a, pair.response_a, plan, pool,
                       check_correct=False)
    assert decision.outcome == "tie", decision.fact
    assert "no clear difference" in decision.fact
    assert decision.stats["ratio"] < 1.10 or decision.stats["p_value"] > 0.05


def test_a_response_that_raises_is_insufficient(real_pair, plan, pool):
    pair, task = real_pair
    raising = f"def {task.entry_point}(*args):\n    raise RuntimeError('not today')\n"
    decision = compare(task, pair.response_a, raising, plan, pool)
    assert decision.outcome == "insufficient"
    assert "cost is compared only between correct responses" in decision.fact
    assert "B does not (fail" in decision.fact and "A does not" not in decision.fact
    assert decision.samples == {}  # nothing was measured


def test_faked_clocks_do_not_make_the_slow_response_look_fast(real_pair, plan, pool):
    pair, task = real_pair
    cheating_slow = FAKE_CLOCKS + pair.response_b
    decision = compare(task, pair.response_a, cheating_slow, plan, pool)
    assert decision.outcome == "A", decision.fact
    assert decision.stats["net_s"]["B"] > 2 * decision.stats["net_s"]["A"]


def test_work_done_in_a_process_the_code_starts_is_counted(real_pair, pool):
    _, task = real_pair
    # The work is done by a child process: a clock read in the function's own process
    # would not see it; the supervisor's count of the run's processes does.
    escaping = f"""\
import os
def {task.entry_point}(*args):
    pid = os.fork()
    if pid == 0:
        x = 0
        for i in range(10_000_000):
            x += i
        os._exit(0)
    os.waitpid(pid, 0)
    return 0
"""
    inputs = [task.plus_inputs[0]]
    quiet = pool.run(perf_payload(task, f"def {task.entry_point}(*args):\n    return 0\n",
                                  inputs, 1), LIMITS)
    forking = pool.run(perf_payload(task, escaping, inputs, 1), LIMITS)
    assert quiet.result["status"] == forking.result["status"] == "ran"
    assert quiet.cpu_s is not None and forking.cpu_s is not None
    assert forking.cpu_s > quiet.cpu_s + 0.2


def test_errors_failures_and_time_limits_are_kept_apart():
    passed = FuncResult(status="pass", detail="110 inputs matched the reference")
    assert correctness_decision(passed, passed) is None
    timed_out = FuncResult(status="timeout", detail="plus input #3 exceeded 1.00 s of CPU")
    slower = correctness_decision(passed, timed_out)
    assert slower is not None and slower.outcome == "A"  # B ran out of time, A finished
    assert slower.counter == "time_limit" and slower.to_fact().detail["status_b"] == "timeout"
    assert "B runs out of its time limit" in slower.fact and "plus input #3" in slower.fact
    failed = FuncResult(status="fail", detail="plus input #2: expected 3, got 4")
    insufficient = correctness_decision(failed, timed_out)
    assert insufficient is not None and insufficient.outcome == "insufficient"
    broken = FuncResult(status="error", detail="sandbox setup failed: no unshare")
    error = correctness_decision(broken, timed_out)
    assert error is not None and error.outcome == "error"
    assert "sandbox setup failed" in error.fact


# -- one rule for the pairs the tests decide, on every path ----------------------------------

STATUSES = ("pass", "fail", "timeout", "error")
DETAILS = {
    "pass": "110 inputs matched the reference",
    "fail": "plus input #2: expected 3, got 4",
    "timeout": "plus input #3 exceeded 1.00 s of CPU",
    "error": "sandbox setup failed: no unshare",
}


def expected_outcome(status_a: str, status_b: str) -> str | None:
    """The documented rule, spelled out: None means "measure them" (both pass, or both are
    only slow: they are measured on inputs both finish)."""
    if "error" in (status_a, status_b):
        return "error"
    return {("pass", "pass"): None, ("timeout", "timeout"): None, ("pass", "timeout"): "A",
            ("timeout", "pass"): "B"}.get((status_a, status_b), "insufficient")


def judged(result_a: FuncResult, result_b: FuncResult) -> Fact:
    """The evidence judge's efficiency fact, from the correctness fact its first step finds."""
    pair = Pair(pair_id="p", task_id="no-such-task", instruction="write it",
                response_a="", response_b="")
    run = EvidenceRun(tasks={}, correctness={"p": correctness_fact(result_a, result_b)})
    try:
        [fact] = run_efficiency(run, [pair])
    finally:
        run.close()
    return fact


@pytest.mark.parametrize(("status_a", "status_b"), list(itertools.product(STATUSES, repeat=2)))
def test_the_tests_decide_a_pair_alike_for_the_judge_and_for_compare_efficiency(
    status_a: str, status_b: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFJUDGE_SANDBOX_ZYGOTE", "0")  # no zygote for a task-less run
    result_a = FuncResult(status=status_a, detail=DETAILS[status_a])  # type: ignore[arg-type]
    result_b = FuncResult(status=status_b, detail=DETAILS[status_b])  # type: ignore[arg-type]
    decision = correctness_decision(result_a, result_b)
    fact = judged(result_a, result_b)
    expected = expected_outcome(status_a, status_b)
    if expected is None:  # both pass (or both only time out): both paths go on to measure
        assert decision is None
        assert fact.fact == "no task 'no-such-task' to measure the code on"
        return
    assert decision is not None and decision.outcome == expected
    assert decision.to_fact() == fact


def evidence_script(root: Path) -> ModuleType:
    """``scripts/evidence_efficiency.py`` as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(
        "evidence_efficiency", root / "scripts" / "evidence_efficiency.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_side_that_runs_out_of_time_loses_alike_on_every_path(
    real_pair, plan, pool, project_root: Path
) -> None:
    pair, task = real_pair
    looping = f"def {task.entry_point}(*args):\n    while True:\n        pass\n"
    timing_out = pair.model_copy(update={"response_b": looping})
    limits = SandboxLimits(timeout_s=5.0, cpu_s=5)  # EvalPlus's own limit: 1 s per input
    direct = compare_efficiency(task, pair.response_a, looping, plan=plan, limits=limits,
                                runner=pool.run).to_fact()
    run = EvidenceRun({task.task_id: task}, limits)
    try:
        [by_judge] = run_efficiency(run, [timing_out])
    finally:
        run.close()
    [by_script] = evidence_script(project_root).test_all(
        [timing_out], {task.task_id: task}, limits, pool, 2)
    assert direct == by_judge == by_script
    assert direct.outcome == "A" and direct.detail["counter"] == "time_limit"
    assert direct.detail["status_a"] == "pass" and direct.detail["status_b"] == "timeout"
    assert "B runs out of its time limit" in direct.fact
