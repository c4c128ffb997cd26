"""The efficiency fact, second round: outputs that drown the work, noise, and slow pairs.

- A measured call's output is made into its line as in a test run, in Python, element by
  element; on a large output that costs more than the code's own work, alike for both
  sides, and hid the difference. A run now knows an output it has seen (the same
  ``marshal`` bytes as that input's last) and reuses its line: the tests below show the
  line is still checked every call (a changed output is caught); what it saves is
  measured by ``scripts/bench_efficiency.py`` (accuracy) and ``scripts/bench_output_lines.py``.
- A tie that noise alone explains is measured again with more rounds (a scripted meter:
  the rule, not the sandbox).
- Two responses that both run out of time on their tests (Mbpp/123, CodePrefBench's pair:
  amicable numbers, divisors summed up to the number against up to its square root) are
  both slow, not wrong: they are measured on the inputs both finish, and the faster is
  found.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from pj_cost_runs import measured_and_checked

from prefjudge.judge.facts.efficiency import compare_efficiency
from prefjudge.judge.facts.efficiency_measure import RETRY_ROUNDS, decide, measure_and_decide
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, run_one
from prefjudge.sandbox.references import reference_outputs
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)
BIG = list(range(30_000))

REVERSE_SLICE = """\
def reverse_Array_Upto_K(input, k):
    return input[k - 1::-1] + input[k:]
"""
# Right in a run's first two executions of the code, one element off after them.
REVERSE_CHANGED_LATER = REVERSE_SLICE.replace("def reverse_Array_Upto_K(", "def _right(") + """
import builtins


def reverse_Array_Upto_K(input, k):
    seen = builtins.__dict__.setdefault("_pj_seen", [])
    seen.append(1)
    out = _right(input, k)
    if len(seen) > 2:
        out[-1] += 1
    return out
"""


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> dict[str, Task]:
    folder = shared_data / "benchmarks" / "evalplus"
    return {**load_tasks(folder / "HumanEvalPlus-v0.1.10.jsonl.gz"),
            **load_tasks(folder / "MbppPlus-v0.2.0.jsonl.gz")}


def big_task(tasks: dict[str, Task]) -> Task:
    """Mbpp/644 with one input: a list of 30,000 integers (its output as large)."""
    return tasks["Mbpp/644"].model_copy(update={"base_inputs": [],
                                                "plus_inputs": [[BIG, 20_000]]})


@pytest.mark.shared_data
def test_a_large_output_seen_again_is_still_checked_on_every_call(tasks, pool):
    task = big_task(tasks)
    honest, problem = measured_and_checked(task, REVERSE_SLICE, pool.run, LIMITS, rounds=5)
    assert honest.result["outputs_lines"] == "1"  # the same line every round
    assert problem is None
    changed, problem = measured_and_checked(task, REVERSE_CHANGED_LATER, pool.run, LIMITS,
                                            rounds=5)
    assert changed.result["outputs_lines"] == "2"  # the changed output got its own line
    assert problem is not None and problem.startswith(
        "measured outputs differ from the reference on 1 of 1 inputs"), problem


class ScriptedMeter:
    """Costs of a side's run: a fixed start-up with noise, plus its work per round."""

    def __init__(self, per_round: dict[str, float], noise_s: float, seed: int) -> None:
        self.per_round, self.noise_s = per_round, noise_s
        self.rng = random.Random(seed)
        self.calls: list[tuple[str, int, float]] = []

    def measure(self, side: str, rounds: int) -> float:
        cost = 0.02 + self.per_round[side] * rounds + self.rng.uniform(0, self.noise_s)
        self.calls.append((side, rounds, cost))
        return cost


def test_a_tie_that_noise_explains_is_measured_again_with_more_rounds():
    meter = ScriptedMeter({"baseline": 0.0, "A": 0.0010, "B": 0.0013}, noise_s=0.015, seed=1)
    rounds, samples, outcome, fact, _ = measure_and_decide(
        meter, 10, 7, random.Random(0))  # type: ignore[arg-type]
    first = {side: [cost for s, r, cost in meter.calls[:21] if s == side]
             for side in ("baseline", "A", "B")}
    assert decide(first)[0] == "tie"  # the first batch: 10 vs 13 ms under ~15 ms of noise
    assert rounds == 10 * RETRY_ROUNDS
    assert {r for _, r, _ in meter.calls[21:]} == {rounds}
    assert len(samples["A"]) == 7  # decided on the new runs only
    assert outcome == "A", fact


def test_a_clear_first_batch_is_not_measured_again():
    meter = ScriptedMeter({"baseline": 0.0, "A": 0.001, "B": 0.004}, noise_s=0.001, seed=1)
    rounds, _, outcome, _, _ = measure_and_decide(meter, 10, 5, random.Random(0))  # type: ignore[arg-type]
    assert (rounds, outcome, len(meter.calls)) == (10, "A", 15)


@pytest.mark.shared_data
def test_two_responses_that_both_run_out_of_time_are_measured_on_inputs_both_finish(
        shared_data: Path, tasks, plan, pool):
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == "Mbpp/123")
    assert pair.label == "B"  # B sums divisors up to the square root; A up to the number
    task = tasks["Mbpp/123"]
    statuses = [run_one(task, code, plan, LIMITS, pool.run).status
                for code in (pair.response_a, pair.response_b)]
    assert statuses == ["timeout", "timeout"]  # the tests alone cannot tell them apart
    decision = compare_efficiency(task, pair.response_a, pair.response_b, plan=plan,
                                  limits=LIMITS, runner=pool.run, repeats=5)
    assert decision.outcome == "B", decision.fact
    # Both ran out of time on an input (measured on others both finish), or only A did
    # while measured (the CPU limits are tight, and the machine's load moves them).
    assert re.search(r"both sides run out of time on (base|plus) #\d+: measured on inputs "
                     r"both finish|^A runs out of its time limit on (base|plus) #\d+ where "
                     r"B finishes", decision.fact), decision.fact


# -- inputs a model's generator makes (``--perf-inputs model``) --------------------------------

GENERATOR = """\
import random


def perf_input(scale: int) -> list:
    rng = random.Random(scale)
    n = 10 * scale
    return [[rng.randint(-1000, 1000) for _ in range(n)], n // 2]
"""


class ScriptedModel:
    """A judge model that writes :data:`GENERATOR` whatever it is asked (the path, not the model:
    the served model's own path is ``test_h11_synthesized``'s)."""

    model_id = "scripted-generator"

    def __init__(self) -> None:
        self.asked = 0

    def generate(self, requests):
        from prefjudge.backends import Result

        self.asked += len(requests)
        return [Result(request_id=r.id, model=self.model_id, finish_reason="stop",
                       text=f"```python\n{GENERATOR}```\n") for r in requests]


@pytest.mark.shared_data
def test_inputs_a_models_generator_makes_are_measured_and_kept(
        shared_data: Path, tasks, plan, pool, tmp_path, monkeypatch):
    from prefjudge.judge.facts.perf_inputs import measure
    from prefjudge.judge.facts.perf_inputs.store import PerfInputStore

    store = PerfInputStore(tmp_path, kind="model")
    monkeypatch.setattr(measure, "MODEL_PERF_INPUTS", store)
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == "Mbpp/644")
    model = ScriptedModel()
    decision = compare_efficiency(tasks["Mbpp/644"], pair.response_a, pair.response_b,
                                  plan=plan, limits=LIMITS, runner=pool.run, repeats=5,
                                  check_correct=False, scaled=True, perf_client=model)
    # A reverses its first k elements by inserting each at the front: k**2 on the
    # generator's inputs, whose k is half the list; B slices.
    assert decision.outcome == pair.label == "B", decision.fact
    assert "(the model's generator)" in decision.fact
    assert decision.stats["perf_inputs"]["strategy"] == "model"
    assert model.asked == 1
    [kept] = tmp_path.glob("perf-inputs-model-mbpp-*.json")
    entry = json.loads(kept.read_text())["tasks"]["Mbpp/644"]
    assert entry["key"].endswith("|scripted-generator")
    assert entry["recipe"]["generator"] == GENERATOR
    store.clear()  # made again from the kept generator, the model not asked again
    again = measure.perf_inputs_for(tasks["Mbpp/644"], reference_outputs(
        tasks["Mbpp/644"], LIMITS.time_doubled(), pool.run), pool.run, model)
    assert again is not None and again.strategy == "model" and model.asked == 1


def test_perf_inputs_model_is_refused_for_a_method_that_finds_no_facts(tmp_path):
    from click.testing import CliRunner

    from prefjudge.cli import main

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"pair_id": "p", "task_id": "t", "instruction": "x",
                                 "response_a": "a", "response_b": "b"}) + "\n")
    result = CliRunner().invoke(main, ["judge", str(pairs), "-o", str(tmp_path / "v.jsonl"),
                                       "--method", "criteralign", "--perf-inputs", "model"])
    assert result.exit_code == 2, result.output
    assert "--perf-inputs applies to --method evidence or hybrid" in result.output
