"""Efficiency measured on checked calls: a side that tells measurement apart gains nothing.

Every call the cost runner measures is a checked call (its output compared with the
reference's for the same input, in the same runs), and a measured call looks, to the
code, like a call of its test run: the same frames by name and file, the same modules,
the same output streams. A solution that detects the runner by either no longer can; one
that tells measurement apart by what cannot be hidden (the code executed more than once,
a few inputs only) and answers wrongly there gets no efficiency claim, and the fact says
so. The pair is ``Mbpp/757#6`` (A linear, B quadratic), in real sandboxes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from prefjudge.judge.facts.efficiency import (
    compare_efficiency,
    heaviest_inputs,
    in_run_order,
    measured_outputs_problem,
)
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, run_one
from prefjudge.sandbox.adapters import perf_payload
from prefjudge.sandbox.compare import ReferenceOutputs
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.process import RunOutcome, run_in_sandbox
from prefjudge.sandbox.references import reference_outputs
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.tasks import load_tasks

pytestmark = pytest.mark.shared_data

PAIR_ID = "Mbpp/757#6"
LIMITS = SandboxLimits(timeout_s=30.0, cpu_s=30)
OPTIONS = {"repeats": 5, "max_inputs": 3}
Runner = Callable[[dict, SandboxLimits], RunOutcome]

# What the code can see of the call it is in: the frames above it (name and file), the
# modules loaded, the type of its stdout, and the payload the harness holds (its format
# and keys).
VIEW = '''\
import hashlib
import sys


def _view():
    frames, frame, held = [], sys._getframe(2), ""
    while frame is not None:
        frames.append(frame.f_code.co_name + "@" + frame.f_code.co_filename)
        if frame.f_code.co_name == "serve" and not held:
            payload = frame.f_locals.get("payload", {})
            held = str(payload.get("format")) + ":" + ",".join(sorted(payload))
        frame = frame.f_back
    modules = hashlib.sha256(" ".join(sorted(sys.modules)).encode()).hexdigest()
    return " ".join(frames), modules, type(sys.stdout).__name__, held
'''
PROBE = VIEW + '''

def count_reverse_pairs(strings):
    raise RuntimeError("VIEW%r" % (_view(),))
'''
# Measured (as the cheat tells it once per execution of its code): a fast, wrong answer.
CHEAT = VIEW + '''

_measured = None


def count_reverse_pairs(strings):
    global _measured
    if _measured is None:
        _measured = {test}
    if _measured:
        return -1
    return _honest(strings)
'''


@pytest.fixture(scope="module")
def real_pair(shared_data: Path) -> tuple[str, str, Task]:
    """Response A (linear), response B (quadratic, correct) and their task."""
    pairs, _ = load_codeprefbench(
        shared_data / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz")
    pair = next(p for p in pairs if p.pair_id == PAIR_ID)
    tasks = load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")
    return pair.response_a, pair.response_b, tasks[pair.task_id]


def fresh(plan: IsolationPlan) -> Runner:
    return lambda payload, limits: run_in_sandbox(plan, payload, limits)


@pytest.fixture(params=["zygote", "fresh"])
def mode(request: pytest.FixtureRequest, plan: IsolationPlan, pool: ZygotePool
         ) -> tuple[str, Runner]:
    """Both ways a run is made: forked from a zygote, or a fresh process."""
    return request.param, (pool.run if request.param == "zygote" else fresh(plan))


def honest_slow(slow: str) -> str:
    return slow.replace("def count_reverse_pairs(", "def _honest(")


def cheat(slow: str, test: str) -> str:
    """The slow response, answering -1 fast where ``test`` (an expression) says measured."""
    return honest_slow(slow) + "\n\n" + CHEAT.replace("{test}", test)


def view_of(detail: str) -> tuple[str, str, str, str]:
    """The probe's view, from the detail of the run it raised in."""
    found = re.search(r"RuntimeError: VIEW(\(.*\))", detail)
    assert found is not None, detail
    return ast.literal_eval(found.group(1))


def seen_in_test_run(task: Task, plan: IsolationPlan, run: Runner
                     ) -> tuple[str, str, str, str]:
    """What the code sees in its test run (the probe raises at its first input)."""
    result = run_one(task, PROBE, plan, LIMITS, run)
    assert result.status == "fail", result.detail
    return view_of(result.detail)


def measured_view(task: Task, run: Runner) -> tuple[str, str, str, str]:
    """What the code sees in a measured run."""
    outcome = run(perf_payload(task, PROBE, [task.plus_inputs[0]], 2), LIMITS)
    assert outcome.result is not None and outcome.result["status"] == "fail", outcome.result
    return view_of(outcome.result["detail"])


def compare(task: Task, code_a: str, code_b: str, plan: IsolationPlan, run: Runner, **options):
    return compare_efficiency(task, code_a, code_b, plan=plan, limits=LIMITS, runner=run,
                              **{**OPTIONS, **options})


# -- the code cannot tell a measured call from a test call -----------------------------------


def test_a_measured_call_looks_like_a_call_of_the_test_run(real_pair, plan, mode):
    _, _, task = real_pair
    _, run = mode
    tested, measured = seen_in_test_run(task, plan, run), measured_view(task, run)
    assert measured == tested
    frames, _, stdout, held = measured
    assert "perf" not in frames and "_rounds" not in frames
    assert frames.split()[0].startswith("_call_with_limit@") and stdout == "OutputSink"
    assert held.startswith("evalplus:") and "rounds" not in held, held


def test_a_solution_that_looks_for_the_runner_in_its_frames_is_measured_doing_its_work(
        real_pair, plan, pool):
    fast, slow, task = real_pair
    frames = seen_in_test_run(task, plan, pool.run)[0]
    cheating = cheat(slow, f"_view()[0] != {frames!r}")
    decision = compare(task, fast, cheating, plan, pool.run)
    assert decision.outcome == "A", decision.fact  # it did not see the runner: it worked
    assert decision.stats["net_s"]["B"] > 2 * decision.stats["net_s"]["A"], decision.stats


def test_a_solution_that_looks_for_the_runner_in_sys_modules_is_measured_doing_its_work(
        real_pair, plan):
    fast, slow, task = real_pair
    run = fresh(plan)  # where the old runner's own imports showed (pickle)
    _, modules, stdout, _ = seen_in_test_run(task, plan, run)
    cheating = cheat(slow, f"_view()[1:3] != {(modules, stdout)!r}")
    decision = compare(task, fast, cheating, plan, run, repeats=4)  # fresh runs cost more
    assert decision.outcome == "A", decision.fact
    assert decision.stats["net_s"]["B"] > 2 * decision.stats["net_s"]["A"], decision.stats


# -- a side that tells measurement apart and answers wrongly there gets no claim -------------

# The code's second execution in one process: a test run executes it once.
EXECUTED_AGAIN = ('__import__("builtins").__dict__.setdefault("_executions", []).append(1) '
                  'or len(__import__("builtins")._executions) > 1')
# Called by a runner that holds a few plus inputs only: a test run holds all 110.
FEW_INPUTS = ('sys._getframe(2).f_locals.get("name") == "plus" '
              'and len(sys._getframe(2).f_locals.get("inputs", ())) < 10')


@pytest.mark.parametrize(("test", "wrong"), [(EXECUTED_AGAIN, r"\d"), (FEW_INPUTS, "3")],
                         ids=["executed-again", "few-inputs"])
def test_wrong_answers_on_the_measured_calls_win_nothing(real_pair, plan, pool, test, wrong):
    fast, slow, task = real_pair
    # The heaviest inputs are measured; "few-inputs" tells a measured run by its plus set
    # (a test run's base set is small too), so here the task's inputs are its plus set.
    task = task.model_copy(update={"base_inputs": []})
    cheating = cheat(slow, test)
    assert run_one(task, cheating, plan, LIMITS, pool.run).status == "pass"  # tests alike
    decision = compare(task, fast, cheating, plan, pool.run)
    assert decision.outcome == "insufficient", decision.fact
    assert re.search(rf"^B's measured outputs differ from the reference on {wrong} of 3 "
                     r"inputs \(.*expected: \d+; got: -1\): no efficiency claim$",
                     decision.fact), decision.fact
    assert decision.stats == {}  # nothing decided on what was measured


def test_a_solution_that_raises_when_measured_wins_nothing(real_pair, plan, pool):
    fast, slow, task = real_pair
    raising = cheat(slow, EXECUTED_AGAIN).replace("return -1", "raise ValueError('measured')")
    decision = compare(task, fast, raising, plan, pool.run)
    assert decision.outcome == "insufficient", decision.fact
    name, number = decision.inputs[0].split()  # called first: named as the task numbers it
    assert decision.fact.startswith(
        f"B's measurement run did not finish (round 2: {name} input {number} raised; ")
    assert "ValueError: measured" in decision.fact
    assert decision.fact.endswith(": no efficiency claim")


def test_a_module_imported_only_when_measured_is_the_sides_doing_not_an_error(
        real_pair, plan, pool):
    fast, slow, task = real_pair
    importing = cheat(slow, EXECUTED_AGAIN).replace("return -1", "import no_such_module_pj")
    decision = compare(task, fast, importing, plan, pool.run)
    assert decision.outcome == "insufficient", decision.fact  # an error would void the pair
    assert decision.fact.startswith("B's measurement run did not finish (round 2: ")
    assert "no_such_module_pj" in decision.fact
    assert decision.fact.endswith(": no efficiency claim")


def test_an_outputs_file_the_code_changed_is_not_read_as_the_runs(real_pair, plan, pool):
    fast, slow, task = real_pair
    # Right answers, and a line of its own in the outputs file (which fails its tests,
    # so the pair is measured without them).
    adding = fast + '''

_answer = count_reverse_pairs


def count_reverse_pairs(strings):
    with open(".prefjudge-outputs.jsonl", "a") as handle:
        handle.write('{"set": "plus", "i": 0, "t": "int", "v": ["i", 0]}\\n')
    return _answer(strings)
'''
    decision = compare(task, adding, slow, plan, pool.run, check_correct=False)
    assert decision.outcome == "insufficient", decision.fact
    assert decision.fact == ("A's measured outputs are not what its run wrote (the outputs "
                             "file was changed): no efficiency claim")


# -- honest code is still measured, and the faster wins ----------------------------------------


def reference_of(task: Task, run: Runner) -> ReferenceOutputs:
    found = reference_outputs(task, LIMITS.time_doubled(), run)
    assert isinstance(found, ReferenceOutputs), found
    return found


def measured_run(task: Task, code: str, chosen: list, run: Runner, **options) -> RunOutcome:
    """One measured run of ``code`` on the ``chosen`` inputs, 3 rounds."""
    payload = perf_payload(task, code, [inp for *_, inp in chosen], 3)
    payload.update(input_sets=[name for name, _, _ in chosen], **options)
    outcome = run(payload, LIMITS)
    assert outcome.result is not None and outcome.result["status"] == "ran", outcome.result
    return outcome


def test_the_measured_outputs_of_honest_code_match_and_a_changed_one_does_not(
        real_pair, pool):
    fast, _, task = real_pair
    reference = reference_of(task, pool.run)
    chosen = in_run_order(heaviest_inputs(task, reference, 3))
    outcome = measured_run(task, fast, chosen, pool.run)
    assert outcome.result["outputs_lines"] == "3"  # one line per input: no round differed
    assert measured_outputs_problem(task, reference, chosen, outcome) is None
    [first, *rest] = outcome.outputs.splitlines()
    wrong = first.rsplit('"v": ', 1)[0] + '"v": ["i", -1]}'
    changed = replace(outcome, outputs="\n".join([wrong, *rest]) + "\n")
    assert measured_outputs_problem(task, reference, chosen, changed) == (
        "measured outputs are not what its run wrote (the outputs file was changed)")


def test_outputs_beyond_those_compared_make_no_claim_either(real_pair, pool):
    fast, _, task = real_pair
    reference = reference_of(task, pool.run)
    chosen = in_run_order(heaviest_inputs(task, reference, 3))
    # Right in the first round, wrong after it: one output an input is compared here.
    outcome = measured_run(task, cheat(fast, EXECUTED_AGAIN), chosen, pool.run,
                           distinct_outputs=1)
    assert outcome.result["outputs_lines"] == "3" and outcome.result["outputs_varied"] == "3"
    assert measured_outputs_problem(task, reference, chosen, outcome) == (
        "measured outputs took more different values than are compared (on 3 of 3 inputs)")
    compared = measured_run(task, cheat(fast, EXECUTED_AGAIN), chosen, pool.run)
    assert compared.result["outputs_lines"] == "6" and compared.result["outputs_varied"] == "0"
    assert measured_outputs_problem(task, reference, chosen, compared).startswith(
        "measured outputs differ from the reference on 3 of 3 inputs (")


def test_an_honest_faster_solution_still_wins(real_pair, plan, pool):
    fast, slow, task = real_pair
    decision = compare(task, slow, fast, plan, pool.run)
    assert decision.outcome == "B", decision.fact
    assert decision.stats["ratio"] >= 2.0 and decision.stats["p_value"] <= 0.05
    assert "B is" in decision.fact and "cheaper" in decision.fact
