"""A side that runs out of Python's recursion limit on its tests loses efficiency.

Issue 45's EvalPerf pairs hold one (Mbpp/592): a recursive factorial raises
``RecursionError`` on the MBPP+ input ``1000``, where an iterative binomial finishes, and
EvalPerf measured the recursive side as the slower. Until now the efficiency fact was
``insufficient`` there ("cost is compared only between correct responses"); running out of
the recursion limit is now read as running out of the time limit is: the side that finishes
is the cheaper one. Any other failure is still ``insufficient``. The rule is one function
(:func:`prefjudge.judge.facts.time_limits.efficiency_from_tests`), so the evidence judge and
``compare_efficiency`` decide alike; the real test runs both in the sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prefjudge.judge.facts.correctness import correctness_fact, ran_out_of
from prefjudge.judge.facts.efficiency import compare_efficiency, correctness_decision
from prefjudge.judge.facts.kinds import EvidenceRun, run_efficiency
from prefjudge.judge.facts.time_limits import efficiency_from_tests
from prefjudge.records import FuncResult, Pair, Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.tasks import load_tasks

PASSED = FuncResult(status="pass", detail="106 inputs matched the reference")
TRACE = '  File "solution.py", line 4, in fact\n    return k * fact(k - 1)\n'
DEEP = FuncResult(status="fail", detail=f"plus input #2 raised; input: [1000]\n{TRACE * 3}"
                  "RecursionError: maximum recursion depth exceeded")
WRONG = FuncResult(status="fail", detail="plus input #2: expected 3, got 4")
# The recursion limit named in the trace, but the run ended in another exception.
OTHER_END = FuncResult(status="fail", detail="plus input #0 raised; input: [5]\n"
                       "During handling: RecursionError: maximum recursion depth exceeded\n"
                       "ValueError: bad input")


def test_the_limit_is_read_from_the_exception_that_ended_the_run():
    assert ran_out_of(DEEP) == "recursion"
    assert ran_out_of(WRONG) is None and ran_out_of(OTHER_END) is None
    assert ran_out_of(PASSED) is None
    same_text = FuncResult(status="error", detail=DEEP.detail)  # the harness's error
    assert ran_out_of(same_text) is None
    fact = correctness_fact(DEEP, PASSED)
    assert fact.detail["ran_out_a"] == "recursion" and "ran_out_b" not in fact.detail
    assert "ran_out_a" not in correctness_fact(WRONG, PASSED).detail  # others unchanged


@pytest.mark.parametrize("swap", [False, True])
def test_the_side_that_finishes_is_the_cheaper_one(swap: bool):
    a, b = (PASSED, DEEP) if swap else (DEEP, PASSED)
    decision = correctness_decision(a, b)
    winner, loser = ("A", "B") if swap else ("B", "A")
    assert decision is not None and decision.outcome == winner
    assert decision.counter == "recursion_limit"
    assert decision.fact == (f"{loser} runs out of Python's recursion limit on the task's "
                             f"tests where {winner} finishes (plus input #2 raised; input: "
                             "[1000])")


@pytest.mark.parametrize(("a", "b"), [(DEEP, DEEP), (DEEP, WRONG), (OTHER_END, PASSED),
                                      (WRONG, PASSED)])
def test_any_other_pair_of_failures_is_still_insufficient(a: FuncResult, b: FuncResult):
    decision = correctness_decision(a, b)
    assert decision is not None and decision.outcome == "insufficient"
    assert decision.fact.startswith("cost is compared only between correct responses")


def test_a_fact_made_before_the_rule_keeps_its_outcome():
    # A correctness fact kept from an earlier run has no ran_out_* keys: still insufficient.
    fact = correctness_fact(DEEP, PASSED)
    old = fact.model_copy(update={"detail": {k: v for k, v in fact.detail.items()
                                             if not k.startswith("ran_out_")}})
    found = efficiency_from_tests(old)
    assert found is not None and found.outcome == "insufficient"


RECURSIVE = """\
def sum_Of_product(n):
    def fact(k):
        return 1 if k == 0 else k * fact(k - 1)
    total = 0
    for i in range(n):
        total += (fact(n) // (fact(i) * fact(n - i))) * (
            fact(n) // (fact(i + 1) * fact(n - i - 1)))
    return total
"""
ITERATIVE = """\
from math import comb


def sum_Of_product(n):
    return comb(2 * n, n + 1)
"""


@pytest.fixture(scope="module")
def mbpp_592(shared_data: Path) -> Task:
    return load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")[
        "Mbpp/592"]


@pytest.mark.shared_data
def test_real_mbpp_592_the_recursive_side_loses_alike_on_both_paths(mbpp_592, plan, pool):
    limits = SandboxLimits(timeout_s=20.0, cpu_s=20)
    direct = compare_efficiency(mbpp_592, RECURSIVE, ITERATIVE, plan=plan, limits=limits,
                                runner=pool.run).to_fact()
    pair = Pair(pair_id="p", task_id=mbpp_592.task_id, instruction=mbpp_592.prompt,
                response_a=RECURSIVE, response_b=ITERATIVE)
    run = EvidenceRun({mbpp_592.task_id: mbpp_592}, limits)
    try:
        [by_judge] = run_efficiency(run, [pair])
    finally:
        run.close()
    assert direct == by_judge
    assert direct.outcome == "B" and direct.detail["counter"] == "recursion_limit"
    assert direct.detail["status_a"] == "fail" and direct.detail["ran_out_a"] == "recursion"
    assert direct.fact.startswith("A runs out of Python's recursion limit on the task's "
                                  "tests where B finishes (")
