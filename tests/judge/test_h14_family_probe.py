"""Scaled inputs of several families: both sides probed on each, measured where they differ most.

The reference's cost per input character chooses a task's family of scaled inputs, and it
cannot see what two responses do differently. CodePrefBench's pair ``Mbpp/644``
(``reverse_Array_Upto_K(arr, k)``): A inserts the first ``k`` items at the front one by
one (quadratic in ``k``), B slices and reverses (linear). The reference's choice tiles the
list and leaves ``k`` as it was, where the two cost the same; the ``along`` family grows
``k`` with the list, where A's inserts cost ``k`` times more, and EvalPerf's label (B)
shows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from prefjudge.judge.facts.efficiency import compare_efficiency
from prefjudge.judge.facts.perf_inputs.accept import (
    PerfInputs,
    Step,
    _Family,
    _grows,
    from_recipe,
)
from prefjudge.judge.facts.perf_inputs.measure import (
    SWITCH_RATIO,
    choose_family,
    perf_inputs_for,
)
from prefjudge.judge.facts.perf_inputs.scaling import input_digest, variants
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.references import reference_outputs
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)


def _family(task: Task, seed: tuple[str, int], strategy: str, factors: tuple[int, ...]
            ) -> PerfInputs:
    sets = {"base": task.base_inputs, "plus": task.plus_inputs}
    inputs = tuple(variants(task.task_id, sets[seed[0]][seed[1]], f, strategy)[0]
                   for f in factors)
    steps = tuple(Step(f, 0, 0.001 * f, input_digest(inp)) for f, inp in zip(
        factors, inputs, strict=True))
    return PerfInputs(task.task_id, seed, strategy, steps, inputs)


@pytest.fixture(scope="module")
def mbpp(shared_data: Path) -> dict[str, Task]:
    return load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")


@pytest.fixture(scope="module")
def pair_644(shared_data: Path):
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == "Mbpp/644")
    assert pair.label == "B" and ".insert(0, arr[i])" in pair.response_a
    return pair


@pytest.mark.shared_data
def test_a_recipe_keeps_its_alternates_and_any_spoiled_one_spoils_the_whole(mbpp):
    task = mbpp["Mbpp/644"]
    main = _family(task, ("base", 0), "repeat", (1, 4))
    other = _family(task, ("base", 0), "along", (1, 4))
    perf = PerfInputs(main.task_id, main.seed, main.strategy, main.steps, main.inputs,
                      alternates=(other,))
    recipe = json.loads(json.dumps(perf.recipe()))
    again = from_recipe(task, recipe)
    assert again is not None and [f.strategy for f in again.families()] == ["repeat", "along"]
    assert again.alternates[0].inputs == other.inputs
    assert again.alternates[0].inputs[-1][1] == 4 * task.base_inputs[0][1]  # k grew
    recipe["alternates"][0]["steps"][1][3] = "0" * 64
    assert from_recipe(task, recipe) is None
    assert "alternates" not in main.recipe()  # a lone family's recipe is as before


def test_a_seed_that_stays_as_it_was_when_scaled_is_not_a_grown_family():
    # HumanEval/74 total_match([], []): two empty lists tiled are two empty lists, and the
    # reference's cost on them is all noise; it had been chosen as the dearest per character
    empty = _Family(("base", 0), [[], []], "repeat")
    for factor in (1, 4, 16):
        (inp,) = variants("HumanEval/74", empty.inp, factor, "repeat")
        empty.steps.append(Step(factor, 0, 1e-6, input_digest(inp)))
        empty.inputs.append(inp)
    assert empty.inputs[-1] == [[], []] and not _grows(empty)
    grown = _Family(("base", 1), [["hi", "admin"], ["hI", "Hi"]], "repeat")
    for factor in (1, 4):
        (inp,) = variants("HumanEval/74", grown.inp, factor, "repeat")
        grown.steps.append(Step(factor, 0, 1e-5, input_digest(inp)))
        grown.inputs.append(inp)
    assert _grows(grown)
    grown.steps.pop()
    assert not _grows(grown)  # one step is not a ladder


@pytest.mark.shared_data
def test_the_family_that_separates_the_sides_is_measured_and_the_fact_says_so(
        mbpp, pair_644, plan, pool):
    task = mbpp["Mbpp/644"]
    reference = reference_outputs(task, LIMITS, pool.run)
    perf = perf_inputs_for(task, reference, pool.run)  # made once, kept: what is measured
    assert perf is not None and "along" in [f.strategy for f in perf.families()]
    assert len({f.strategy for f in perf.families()}) == len(perf.families())
    assert all(len(json.dumps(f.inputs[-1])) > len(json.dumps(f.inputs[0]))
               for f in perf.families())

    decision = compare_efficiency(task, pair_644.response_a, pair_644.response_b, plan=plan,
                                  limits=LIMITS, runner=pool.run, check_correct=False,
                                  scaled=True)
    assert decision.outcome == "B", decision.fact
    detail = decision.to_fact().detail
    assert detail["perf_inputs"]["strategy"] == "along"
    probes = detail["perf_inputs"]["probed"]
    assert [probe["family"] for probe in probes] == [f.label() for f in perf.families()]
    along = next(probe for probe in probes if probe["family"].startswith("along of"))
    assert along["per_call_s"]["A"] > along["per_call_s"]["B"]  # the quadratic side dearer
    if along is probes[0]:  # grown first (its reference was the dearest): kept, none beat it
        assert all(probe["ratio"] <= SWITCH_RATIO * max(along["ratio"], 1.0)
                   for probe in probes[1:] if probe["ratio"] is not None)
    else:  # another family came first: along separated the sides enough to switch to it
        assert along["ratio"] > SWITCH_RATIO * max(probes[0]["ratio"], 1.0)
    assert "separates the sides most" in decision.fact
    assert detail["growth"]["A"] > detail["growth"]["B"] + 0.5  # about n^2 against n


@pytest.mark.shared_data
def test_one_family_is_not_probed_and_a_side_failing_on_an_alternate_is_chosen(mbpp, pool):
    task = mbpp["Mbpp/644"]
    lone = _family(task, ("base", 0), "repeat", (1, 4))
    slicing = "def reverse_Array_Upto_K(arr, k):\n    return arr[k - 1::-1] + arr[k:]\n"
    codes = {"A": slicing, "B": slicing, "baseline": None}
    assert choose_family(task, lone, codes, [], pool.run, LIMITS) == (lone, [])
    # B is right while k stays as small as the task's (at most 6), wrong above
    wrong_when_long = slicing.replace("    return", "    if k > 6:\n        return arr\n"
                                      "    return", 1)
    along = _family(task, ("base", 0), "along", (1, 4))
    perf = PerfInputs(lone.task_id, lone.seed, lone.strategy, lone.steps, lone.inputs,
                      alternates=(along,))
    chosen, probes = choose_family(task, perf, {**codes, "B": wrong_when_long}, [],
                                   pool.run, LIMITS)
    assert chosen.strategy == "along"
    assert probes[1]["fails"] == "B" and probes[1]["ratio"] is None
    assert not math.isinf(probes[0]["ratio"])
