"""The ``inner`` family: what a list holds grows, the list's length kept.

HumanEval/119 (``match_parens(lst)``) takes a list of two strings of parentheses, and its
contract refuses any other length, so tiling the list (``repeat``, ``fresh``) is refused
at every step and the task had no scaled input: its pairs were measured on the tests'
few-character strings, where two linear scans cost alike. ``inner`` repeats each string
instead. It is tried only for a task where no other family grows, so the inputs of every
other task stay as they were; a task kept with no inputs under the older rules is tried
again (``NONE_RULES``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefjudge.judge.facts.perf_inputs.accept import build_perf_inputs, from_recipe
from prefjudge.judge.facts.perf_inputs.scaling import inner_strategies, variants
from prefjudge.judge.facts.perf_inputs.store import NONE_RULES, PerfInputStore, store_path
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.references import reference_key, reference_outputs
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)


def test_inner_grows_what_a_list_holds_and_keeps_its_length():
    (grown,) = variants("t", [["()(", ")"]], 4, "inner")
    assert grown == [["()(()(()(()(", "))))"]]
    (mixed,) = variants("t", [[[1, 2], "ab", 3], 7, "xy"], 2, "inner")
    assert mixed == [[[1, 2, 1, 2], "abab", 3], 7, "xy"]  # only the lists' contents grow
    assert inner_strategies([[1, 2, 3]]) == ()  # numbers: nothing inside to grow
    assert inner_strategies([[], "abc"]) == ()


@pytest.fixture(scope="module")
def task_119(shared_data: Path) -> Task:
    tasks = load_tasks(shared_data / "benchmarks" / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    return tasks["HumanEval/119"]


@pytest.mark.shared_data
def test_match_parens_gets_inputs_by_growing_its_two_strings(task_119, pool):
    reference = reference_outputs(task_119, LIMITS, pool.run)
    perf = build_perf_inputs(task_119, reference, pool.run)
    assert perf is not None and perf.strategy == "inner", perf
    assert all(len(inp[0]) == 2 for inp in perf.inputs)  # still a pair of strings
    assert sum(map(len, perf.inputs[-1][0])) >= 16 * sum(map(len, perf.inputs[0][0]))
    again = from_recipe(task_119, json.loads(json.dumps(perf.recipe())))
    assert again is not None and again.inputs == perf.inputs


def test_a_task_kept_with_no_inputs_under_older_rules_is_tried_again(task_119, tmp_path):
    made: list[int] = []
    path = store_path(tmp_path, task_119)
    path.write_text(json.dumps({"tasks": {task_119.task_id: {
        "key": reference_key(task_119), "recipe": None}}}))  # kept before NONE_RULES
    assert PerfInputStore(tmp_path).get(task_119, lambda: made.append(1) or None) is None
    assert made == [1]
    kept = json.loads(path.read_text())["tasks"][task_119.task_id]
    assert kept["recipe"] is None and kept["none_rules"] == NONE_RULES
    assert PerfInputStore(tmp_path).get(task_119, lambda: made.append(2) or None) is None
    assert made == [1]  # kept under today's rules: not tried again
