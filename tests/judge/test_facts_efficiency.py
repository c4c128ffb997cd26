"""The efficiency evidence judge on real CodePrefBench pairs, in real sandboxes.

The pair used is ``Mbpp/757#6``: A counts reverse pairs with a dictionary (linear), B
compares every two strings character by character in Python (quadratic); EvalPerf labels
A the more efficient one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prefjudge.judge.facts.efficiency import (
    COUNTER,
    compare_efficiency,
    correctness_decision,
)
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import FuncResult, Pair, Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation
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


@pytest.fixture(scope="module")
def plan() -> IsolationPlan:
    return resolve_isolation()


@pytest.fixture(scope="module")
def pool(plan: IsolationPlan) -> Iterator[ZygotePool]:
    with ZygotePool(plan) as zygotes:
        yield zygotes


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
    assert "B does not pass its tests (fail" in decision.fact
    assert "A does not" not in decision.fact
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


def test_errors_and_failures_are_kept_apart():
    passed = FuncResult(status="pass", detail="110 inputs matched the reference")
    assert correctness_decision(passed, passed) is None
    timed_out = FuncResult(status="timeout", detail="plus input #3 exceeded 1.00 s of CPU")
    insufficient = correctness_decision(passed, timed_out)
    assert insufficient is not None and insufficient.outcome == "insufficient"
    assert "B does not pass its tests (timeout" in insufficient.fact
    broken = FuncResult(status="error", detail="sandbox setup failed: no unshare")
    error = correctness_decision(broken, timed_out)
    assert error is not None and error.outcome == "error"
    assert "sandbox setup failed" in error.fact
