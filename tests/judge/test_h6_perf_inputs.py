"""Performance-exercising inputs: scaling, acceptance, the store, and the efficiency fact on them.

The first tests need no sandbox (scaling keeps shapes; recipes come back byte for byte;
the store keeps what it made). The last ones run real sandboxes on the two tasks the
issue names and on a side that is right on the task's tests but wrong on a scaled input:

- HumanEval/31 (``is_prime``): on the task's own inputs trial division up to the square
  root is as cheap as Miller-Rabin, or cheaper; on the scaled inputs (large primes, found
  among the neighbours of the task's numbers grown) Miller-Rabin must win;
- Mbpp/129 (``magic_square_test``), CodePrefBench's pair ``Mbpp/129``: A returns at once
  on a matrix that is not square, which the task's heaviest inputs are; the scaled inputs
  are square (the prompt says so), and there B, EvalPerf's faster side, wins.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefjudge.judge.facts.efficiency import compare_efficiency
from prefjudge.judge.facts.perf_inputs.accept import (
    PerfInputs,
    Step,
    build_perf_inputs,
    from_recipe,
    with_contract,
)
from prefjudge.judge.facts.perf_inputs.curve import ScalePoint, combine, growth
from prefjudge.judge.facts.perf_inputs.scaling import (
    NEAR_WINDOW,
    input_digest,
    strategies_for,
    variants,
)
from prefjudge.judge.facts.perf_inputs.store import PerfInputStore
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.references import reference_outputs
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)
MAGIC = [[2, 7, 6], [9, 5, 1], [4, 3, 8]]

TRIAL_DIVISION = """\
def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
"""
MILLER_RABIN = """\
def is_prime(n):
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True
"""
# Right on every input of the task's tests (the largest is 10**10 + 32), wrong on every
# input above them, whatever the scaled inputs turn out to be (primes or not).
WRONG_WHEN_LARGE = MILLER_RABIN.replace("def is_prime(n):", "def _checked(n):", 1) + """
def is_prime(n):
    return (not _checked(n)) if n > 10**10 + 32 else _checked(n)
"""


def _is_magic(rows: list[list[int]]) -> bool:
    n, total = len(rows), sum(rows[0])
    return (all(len(row) == n and sum(row) == total for row in rows)
            and all(sum(row[c] for row in rows) == total for c in range(n))
            and sum(rows[i][i] for i in range(n)) == total
            and sum(rows[i][n - 1 - i] for i in range(n)) == total)


# -- scaling ------------------------------------------------------------------------------------


def test_a_square_matrix_grows_square_and_a_tiled_magic_square_stays_magic():
    (tiled,) = variants("Mbpp/129", [MAGIC], 16, "repeat")
    (fresh,) = variants("Mbpp/129", [MAGIC], 16, "fresh")
    assert len(tiled[0]) == len(tiled[0][0]) == 12
    assert len(fresh[0]) == len(fresh[0][0]) == 12
    assert _is_magic(tiled[0])
    cells = [cell for row in fresh[0] for cell in row]
    assert len(set(cells)) == len(cells) and min(cells) >= 1  # distinct, as the seed's


def test_strings_lists_dicts_and_numbers_grow_by_their_kind():
    (words,) = variants("t", ["ab cd"], 4, "repeat")
    assert words == ["ab cd ab cd ab cd ab cd"]
    (fresh,) = variants("t", [[1, 5, 9], "xyz", 3], 4, "fresh")
    assert len(fresh[0]) == 12 and fresh[0] == sorted(fresh[0]) and len(set(fresh[0])) == 12
    assert len(fresh[1]) == 12 and set(fresh[1]) <= set("xyz")
    assert fresh[2] == 3  # an integer beside containers is left alone
    (grown,) = variants("t", [{"a": 1, "b": 2}], 3, "repeat")
    assert len(grown[0]) == 6 and grown[0]["a1"] == 1
    near = variants("t", [101], 16, "near")
    assert len(near) == NEAR_WINDOW and near[0] == [1616] and near[5] == [1621]


def test_a_character_stays_main_grows_one_argument_and_along_scales_indices_with_lists():
    # Mbpp/11 remove_Occ(s, ch): the character must stay one, or the task is another
    (grown,) = variants("Mbpp/11", ["hello world", "l"], 4, "repeat")
    assert grown == ["hello world hello world hello world hello world", "l"]
    (main,) = variants("t", [[1, 2, 3], [4, 5, 6, 7]], 3, "main")
    assert main == [[1, 2, 3], [4, 5, 6, 7] * 3]
    # Mbpp/644 reverse_Array_Upto_K(arr, k): k grows with arr, so it stays inside it
    (along,) = variants("Mbpp/644", [[1, 2, 3, 4, 5, 6], 4], 8, "along")
    assert along == [[1, 2, 3, 4, 5, 6] * 8, 32]
    assert strategies_for([[1, 2], 3]) == ("repeat", "fresh", "along", "shift")
    assert strategies_for([[1, 2], "ab"]) == ("repeat", "fresh", "main", "shift")
    assert strategies_for([["a", "b"], "ab"]) == ("repeat", "fresh", "main")
    assert strategies_for([[[1, 2], [3, 4]]]) == ("repeat", "fresh")  # a matrix stays square
    assert strategies_for(["ab"]) == ("repeat", "fresh")
    assert strategies_for([7]) == ("near",)


def test_variants_are_the_same_each_time_and_never_change_the_seed():
    seed = [[3, 1, 2], "abc"]
    kept = json.dumps(seed)
    first = variants("Mbpp/1", seed, 64, "fresh")
    assert first == variants("Mbpp/1", seed, 64, "fresh")
    assert input_digest(first[0]) == input_digest(variants("Mbpp/1", seed, 64, "fresh")[0])
    assert json.dumps(seed) == kept


# -- the contract, the recipe, the store ------------------------------------------------------


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> dict[str, Task]:
    folder = shared_data / "benchmarks" / "evalplus"
    return {**load_tasks(folder / "HumanEvalPlus-v0.1.10.jsonl.gz"),
            **load_tasks(folder / "MbppPlus-v0.2.0.jsonl.gz")}


@pytest.mark.shared_data
def test_the_contract_is_put_back_at_the_top_of_the_reference(tasks):
    code = with_contract(tasks["HumanEval/31"])
    assert "$_CONTRACT_$" in code
    namespace: dict = {}
    exec(compile(code, "<reference>", "exec"), namespace)  # the trusted reference solution
    assert namespace["is_prime"](13441) is True
    with pytest.raises(AssertionError):
        namespace["is_prime"](13441.0)


@pytest.mark.shared_data
def test_a_recipe_gives_the_same_inputs_back_and_a_wrong_digest_none(tasks, tmp_path):
    task = tasks["Mbpp/129"]
    inputs = tuple(variants(task.task_id, task.base_inputs[1], f, "repeat")[0] for f in (1, 4))
    steps = tuple(Step(f, 0, 0.01, input_digest(inp)) for f, inp in zip((1, 4), inputs,
                                                                          strict=True))
    perf = PerfInputs(task.task_id, ("base", 1), "repeat", steps, inputs)
    again = from_recipe(task, json.loads(json.dumps(perf.recipe())))
    assert again is not None and again.inputs == inputs
    spoiled = perf.recipe()
    spoiled["steps"][1][3] = "0" * 64
    assert from_recipe(task, spoiled) is None
    store, made = PerfInputStore(tmp_path), []
    assert store.get(task, lambda: made.append(1) or perf) == perf
    fresh = PerfInputStore(tmp_path)  # another process: from the file
    assert fresh.get(task, lambda: made.append(1) or None) == perf
    assert made == [1] and len(list(tmp_path.glob("perf-inputs-mbpp-*.json"))) == 1


def test_a_tie_at_the_largest_scale_is_decided_by_growth_and_a_decision_there_stands():
    def point(factor: int, a: float, b: float, outcome: str) -> ScalePoint:
        return ScalePoint(factor, outcome, {"A": a, "B": b}, max(a, b) / min(a, b), 0.5, 1, "")

    linear_vs_square = [point(1, 1e-4, 2e-5, "B"), point(16, 1.6e-3, 5e-3, "A"),
                        point(256, 2.6e-2, 2.8e-2, "tie")]
    assert round(growth(linear_vs_square, "A"), 1) == 1.0
    assert combine(linear_vs_square)[0] == "A"
    same = [point(1, 1e-4, 1e-4, "tie"), point(16, 1.6e-3, 1.6e-3, "tie")]
    assert combine(same)[0] == "tie"
    assert combine([point(1, 1e-4, 2e-5, "B"), point(16, 1e-3, 2e-3, "A")])[0] == "A"


# -- real sandboxes -----------------------------------------------------------------------------


@pytest.mark.shared_data
def test_miller_rabin_wins_on_the_scaled_inputs_of_is_prime(tasks, plan, pool):
    task = tasks["HumanEval/31"]
    reference = reference_outputs(task, LIMITS, pool.run)
    perf = build_perf_inputs(task, reference, pool.run)
    assert perf is not None and perf.strategy == "near"
    assert perf.inputs[-1][0] >= 4 * max(abs(inp[0]) for inp in task.plus_inputs)
    assert perf.steps[-1].ref_cpu_s > perf.steps[0].ref_cpu_s
    decision = compare_efficiency(task, TRIAL_DIVISION, MILLER_RABIN, plan=plan,
                                  limits=LIMITS, runner=pool.run, check_correct=False,
                                  scaled=True)
    assert decision.outcome == "B", decision.fact
    assert "per call, x" in decision.fact and "about n^" in decision.fact
    scales = decision.to_fact().detail["scales"]
    assert len(scales) >= 2 and scales[-1]["factor"] > scales[0]["factor"]
    assert scales[-1]["per_call_s"]["A"] > 10 * scales[-1]["per_call_s"]["B"]


@pytest.mark.shared_data
def test_magic_square_the_side_that_returns_on_non_square_matrices_does_not_win(
        tasks, shared_data, plan, pool):
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == "Mbpp/129")
    assert pair.label == "B" and "len(matrix) != len(matrix[0])" in pair.response_a
    task = tasks[pair.task_id]
    decision = compare_efficiency(task, pair.response_a, pair.response_b, plan=plan,
                                  limits=LIMITS, runner=pool.run, check_correct=False,
                                  scaled=True)
    # The issue's case: A, returning at once on the tests' non-square matrices, must not
    # win. On square ones the two sides are close (B 1.1-1.2x cheaper on the families
    # grown): quiet runs decide B, a heavily loaded machine may call it a tie.
    assert decision.outcome in ("B", "tie"), decision.fact
    assert "1,354" not in decision.fact and "per call, x" in decision.fact
    detail = decision.to_fact().detail
    assert detail["perf_inputs"]["factors"][-1] >= 16
    seed_set, seed_index = detail["perf_inputs"]["seed"].split(" #")
    seed = (task.base_inputs if seed_set == "base" else task.plus_inputs)[int(seed_index)]
    assert len(seed[0]) == len(seed[0][0])  # grown from a square matrix: it stays square


@pytest.mark.shared_data
def test_a_side_right_on_the_tests_but_wrong_on_a_scaled_input_loses(tasks, plan, pool):
    task = tasks["HumanEval/31"]
    decision = compare_efficiency(task, WRONG_WHEN_LARGE, TRIAL_DIVISION, plan=plan,
                                  limits=LIMITS, runner=pool.run, check_correct=True,
                                  scaled=True)
    assert decision.outcome == "B", decision.fact
    assert decision.fact.startswith("A's measured outputs differ from the reference")
    assert "A loses efficiency" in decision.fact and "cheaper" not in decision.fact
