"""The ``shift`` family: lists tiled with each copy's values moved past the seed's range.

``repeat`` keeps the seed's values and ``fresh`` draws from their range, so the number of
distinct values stays the seed's however long the list grows. Code whose cost grows with
the number of distinct values hides there. EvalPerf's pair ``HumanEval/26#evalperf2``
(``remove_duplicates``): A counts each distinct value with ``numbers.count`` (a pass over
the list per distinct value), B counts once in a dict; EvalPerf, on its inputs, found B
three speed clusters faster. ``shift`` keeps the seed's share of distinct values, so A's
passes grow with the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prefjudge.judge.facts.perf_inputs.accept import PerfInputs, Step
from prefjudge.judge.facts.perf_inputs.measure import choose_family
from prefjudge.judge.facts.perf_inputs.scaling import input_digest, strategies_for, variants
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)
COUNT_EACH = '''\
def remove_duplicates(numbers):
    seen = dict.fromkeys(numbers)
    return [n for n in seen if numbers.count(n) == 1]
'''
COUNT_ONCE = '''\
def remove_duplicates(numbers):
    count = {}
    for n in numbers:
        count[n] = count.get(n, 0) + 1
    return [n for n in numbers if count[n] == 1]
'''
# Right for values below 100 (the task's own), wrong above: a table sized for them.
TABLE_OF_100 = '''\
def remove_duplicates(numbers):
    count = [0] * 100
    for n in numbers:
        if 0 <= n < 100:
            count[n] += 1
    return [n for n in numbers if 0 <= n < 100 and count[n] == 1]
'''


def test_shift_keeps_the_share_of_distinct_values_and_the_order():
    (grown,) = variants("t", [[1, 1, 2, 5]], 3, "shift")
    assert grown == [[1, 1, 2, 5, 6, 6, 7, 10, 11, 11, 12, 15]]  # span 5, copy c: +5c
    assert len(set(grown[0])) / len(grown[0]) == len({1, 2, 5}) / 4
    assert grown[0] == sorted(grown[0])  # a sorted seed stays sorted
    (nested,) = variants("t", [[[1, 3], [5, True, 2]], 2], 2, "shift")
    assert nested == [[[1, 3], [5, True, 2], [6, 8], [10, True, 7]], 2]  # a bool: no int
    assert strategies_for([[[1, 2], [3, 4]]]) == ("repeat", "fresh")  # a matrix: square


@pytest.fixture(scope="module")
def task_26(shared_data: Path) -> Task:
    tasks = load_tasks(shared_data / "benchmarks" / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    return tasks["HumanEval/26"]


def _family(task: Task, seed: list, strategy: str, factors: tuple[int, ...]) -> PerfInputs:
    inputs = tuple(variants(task.task_id, seed, f, strategy)[0] for f in factors)
    steps = tuple(Step(f, 0, 0.001, input_digest(inp)) for f, inp in zip(
        factors, inputs, strict=True))
    return PerfInputs(task.task_id, ("base", 0), strategy, steps, inputs)


@pytest.mark.shared_data
def test_shift_shows_a_count_per_distinct_value_and_a_side_wrong_beyond_is_not_held(
        task_26, pool):
    seed = [[1, 2, 3, 2, 4, 3, 5, 9, 8, 7]]
    repeat = _family(task_26, seed, "repeat", (1, 16, 256))
    shift = _family(task_26, seed, "shift", (1, 16, 256))
    perf = PerfInputs(repeat.task_id, repeat.seed, repeat.strategy, repeat.steps,
                      repeat.inputs, alternates=(shift,))
    codes = {"A": COUNT_EACH, "B": COUNT_ONCE, "baseline": None}
    chosen, probes = choose_family(task_26, perf, codes, [], pool.run, LIMITS)
    assert chosen.strategy == "shift", probes
    assert probes[1]["per_call_s"]["A"] > 10 * probes[1]["per_call_s"]["B"]
    assert probes[0]["ratio"] < probes[1]["ratio"]  # repeat: 9 distinct values, a few passes
    # a side right on the task's values and wrong beyond them does not lose on shift
    chosen, probes = choose_family(task_26, perf, {**codes, "A": TABLE_OF_100}, [],
                                   pool.run, LIMITS)
    assert chosen.strategy == "repeat"
    assert probes[1]["fails"] == "A fails outside the task's values (not counted)"
    assert probes[1]["ratio"] == 0.0
