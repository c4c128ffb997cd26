"""HumanEval+/MBPP+ base and plus inputs judged on their own, as EvalPlus does (issue 30).

EvalPlus's ``check_correctness`` runs a sample on the base inputs and, separately, on the
plus inputs, and reports ``base_status`` and ``plus_status``; each set stops at its first
input that fails (``fast_check``, the default of ``evalplus.evaluate``), and
``base_fail_tests``/``plus_fail_tests`` list that input. prefjudge keeps both outcomes in
``FuncResult.sets``; its verdict on the task stays base's outcome when base did not pass,
else plus's. Every run here is a real sandbox run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox import SandboxLimits, run_functional, run_one
from prefjudge.sandbox.detect import resolve_isolation
from prefjudge.sandbox.process import RunOutcome, run_in_sandbox
from prefjudge.scoring.tasks import load_tasks

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)
# f(x) = 2x on base inputs 1, 2, 3 and plus inputs 10..13
TASK = Task(task_id="HumanEval/0", entry_point="f", test_format="evalplus",
            canonical_solution="def f(x):\n    return 2 * x\n", base_inputs=[[1], [2], [3]],
            plus_inputs=[[10], [11], [12], [13]], atol=0,
            metadata={"evalplus_dataset": "humaneval"})


def wrong_on(*xs: int, then: str = "") -> str:
    """Code that returns 0 for ``xs`` (and does ``then`` first), else the right answer."""
    return (f"import os\n\ndef f(x):\n{then}    return 0 if x in {xs!r} else 2 * x\n")


RAISE_ON_1 = "    if x == 1:\n        raise ValueError('boom')\n"
LOOP_ON_2 = "    while x == 2:\n        pass\n"
LOOP_ON_ALL = "    while True:\n        pass\n"
EXIT_ON_12 = "    if x == 12:\n        os._exit(3)\n"
EXIT_ON_2 = "    if x == 2:\n        os._exit(3)\n"

CASES = {
    # name: (code, base (status, failed), plus (status, failed))
    "base fails, plus passes": (wrong_on(2), ("fail", [1]), ("pass", [])),
    "base passes, plus fails": (wrong_on(12), ("pass", []), ("fail", [2])),
    "both fail": (wrong_on(3, 11), ("fail", [2]), ("fail", [1])),
    "base raises, plus still judged (fails)": (
        wrong_on(13, then=RAISE_ON_1), ("fail", [0]), ("fail", [3])),
    "base raises, plus still judged (passes)": (wrong_on(then=RAISE_ON_1), ("fail", [0]),
                                                ("pass", [])),
    "base times out, plus still judged": (wrong_on(then=LOOP_ON_2), ("timeout", [1]),
                                          ("pass", [])),
    "every input times out": (wrong_on(then=LOOP_ON_ALL), ("timeout", [0]), ("timeout", [0])),
    "all pass": (wrong_on(), ("pass", []), ("pass", [])),
    "does not compile (EvalPlus: both fail, none listed)": (
        "def f(x:\n", ("fail", []), ("fail", [])),
}


@pytest.fixture(scope="module")
def results() -> dict[str, FuncResult]:
    """Every case, run once in real sandboxes (two at a time)."""
    got = run_functional([(TASK, code) for code, _, _ in CASES.values()], limits=FAST,
                         workers=2)
    return dict(zip(CASES, got, strict=True))


@pytest.mark.parametrize("case", list(CASES))
def test_each_set_is_judged_on_its_own(results: dict[str, FuncResult], case: str) -> None:
    _, base, plus = CASES[case]
    result = results[case]
    assert result.sets is not None, result
    assert (result.sets["base"].status, result.sets["base"].failed) == base, result
    assert (result.sets["plus"].status, result.sets["plus"].failed) == plus, result


@pytest.mark.parametrize("case", list(CASES))
def test_the_verdict_is_base_then_plus(results: dict[str, FuncResult], case: str) -> None:
    result = results[case]
    assert result.sets is not None, result
    base, plus = result.sets["base"], result.sets["plus"]
    decides = base if base.status != "pass" else plus
    assert (result.status, result.detail) == (
        (decides.status, decides.detail) if decides.status != "pass"
        else ("pass", "7 inputs matched the reference")), result


# What prefjudge said of these samples before the sets were kept (its verdict must not move).
VERDICTS_BEFORE = {
    "base fails, plus passes": (
        "fail", "base input #1; input: [2]: failed (outputs differ); expected: 4; got: 0"),
    "base passes, plus fails": (
        "fail", "plus input #2; input: [12]: failed (outputs differ); expected: 24; got: 0"),
    "both fail": (
        "fail", "base input #2; input: [3]: failed (outputs differ); expected: 6; got: 0"),
    "base raises, plus still judged (fails)": (
        "fail", "base input #0 raised; input: [1]\n  File \"solution.py\", line 5, in f\n"
        "    raise ValueError('boom')\nValueError: boom"),
    "base times out, plus still judged": (
        "timeout", "base input #1 exceeded 1.00 s of CPU; input: [2]"),
    "every input times out": ("timeout", "base input #0 exceeded 1.00 s of CPU; input: [1]"),
    "all pass": ("pass", "7 inputs matched the reference"),
}


@pytest.mark.parametrize("case", list(VERDICTS_BEFORE))
def test_the_verdict_on_the_task_is_what_it_was(results: dict[str, FuncResult],
                                                case: str) -> None:
    result = results[case]
    assert (result.status, result.detail) == VERDICTS_BEFORE[case]
    assert result.sets is not None


def test_details_say_which_set_and_input(results: dict[str, FuncResult]) -> None:
    sets = results["both fail"].sets
    assert sets is not None
    assert sets["base"].detail.startswith("base input #2; input: [3]")
    assert sets["plus"].detail.startswith("plus input #1; input: [11]")
    assert "expected: 22; got: 0" in sets["plus"].detail
    timed = results["every input times out"].sets
    assert timed is not None
    assert timed["plus"].detail == "plus input #0 exceeded 1.00 s of CPU; input: [10]"
    assert results["all pass"].sets == {
        "base": results["all pass"].sets["base"], "plus": results["all pass"].sets["plus"]}
    assert results["all pass"].sets["plus"].detail == "4 plus inputs matched the reference"


def measured_run(code: str, limits: SandboxLimits = FAST) -> tuple[FuncResult, RunOutcome]:
    """``run_one`` in a fresh sandbox; also the candidate run's outcome (its CPU time)."""
    plan = resolve_isolation(None)
    seen: list[RunOutcome] = []

    def runner(payload: dict, run_limits: SandboxLimits) -> RunOutcome:
        outcome = run_in_sandbox(plan, payload, run_limits)
        if payload.get("role") == "candidate":
            seen.append(outcome)
        return outcome

    result = run_one(TASK, code, plan, limits, runner)
    return result, seen[-1]


def test_a_run_that_times_out_in_base_stays_bounded() -> None:
    # Every input loops: each set stops at its first input (1 s of CPU each), so the
    # whole run costs about two per-input limits, not one per input.
    result, outcome = measured_run(wrong_on(then=LOOP_ON_ALL))
    assert result.status == "timeout" and not outcome.timed_out, result
    assert result.sets is not None  # both sets ran, each stopped by its first input's timer
    assert {name: (s.status, s.failed) for name, s in result.sets.items()} == {
        "base": ("timeout", [0]), "plus": ("timeout", [0])}, result.sets
    # Two 1 s timers, not one per input. The lower bound only tells two timers from one:
    # the CPU timer counts time the host steals from the VM, the kernel's usage does not,
    # so under load the two timers read up to a few tenths under 2 s (1.89 seen).
    assert outcome.cpu_s is not None and 1.5 < outcome.cpu_s < 4.0, outcome.cpu_s


def test_a_crash_in_plus_after_base_failed_keeps_base_s_outcome() -> None:
    # The run ends in the plus inputs without a result of its own: what it said of the
    # base inputs (written as soon as they ended) still decides, as it did before.
    result, _ = measured_run(wrong_on(then=RAISE_ON_1 + EXIT_ON_12))
    assert result.sets is not None
    base, plus = result.sets["base"], result.sets["plus"]
    assert (base.status, base.failed) == ("fail", [0]) and "ValueError: boom" in base.detail
    assert (plus.status, plus.failed) == ("fail", [2]), plus
    assert "ended before its tests finished (exit status 3)" in plus.detail
    assert (result.status, result.detail) == (base.status, base.detail)


def test_the_wall_clock_in_plus_after_base_failed_keeps_base_s_outcome() -> None:
    # As above, but the run is stopped by its wall clock while sleeping in plus input #1.
    limits = SandboxLimits(timeout_s=2, cpu_s=10, memory_mb=1024, nproc=32, fsize_mb=8,
                           disk_mb=32, max_output_kb=64)
    sleep_on_11 = "    if x == 11:\n        import time\n        time.sleep(60)\n"
    result, outcome = measured_run(wrong_on(then=RAISE_ON_1 + sleep_on_11), limits)
    assert outcome.timed_out
    assert result.sets is not None
    base, plus = result.sets["base"], result.sets["plus"]
    assert (base.status, base.failed) == ("fail", [0]) and "ValueError: boom" in base.detail
    assert (plus.status, plus.failed) == ("timeout", [1]), plus
    assert "wall-clock limit" in plus.detail
    assert (result.status, result.detail) == (base.status, base.detail)


FLOOD_ON_11 = "    if x == 11:\n        os.write(1, b'x' * 200_000)\n"
FILL_DISK_ON_11 = ("    if x == 11:\n        for n in range(8):\n"
                   "            with open(f'fill{n}', 'wb') as handle:\n"
                   "                handle.write(b'x' * (7 << 20))\n")


@pytest.mark.parametrize(("then", "plus_status"), [(FLOOD_ON_11, "pass"),
                                                   (FILL_DISK_ON_11, "fail")],
                         ids=["flood", "full disk"])
def test_what_plus_does_after_base_failed_leaves_base_s_outcome(then: str,
                                                                 plus_status: str) -> None:
    # Before, the run ended at base's failure; a stdout flood (past the run's 64 KiB) or
    # a full disk in the plus inputs after it must not change the verdict. (The flood
    # goes to /dev/null then, as EvalPlus's swallow_io sends all output.)
    (result,) = run_functional([(TASK, wrong_on(then=RAISE_ON_1 + then))], limits=FAST,
                               workers=1)
    assert result.sets is not None
    base = result.sets["base"]
    assert (base.status, base.failed) == ("fail", [0]) and base.detail.startswith(
        "base input #0 raised; input: [1]"), base
    assert (result.status, result.detail) == (base.status, base.detail)
    assert result.sets["plus"].status == plus_status, result.sets["plus"]


def test_a_crash_in_base_leaves_plus_not_judged() -> None:
    result, _ = measured_run(wrong_on(then=EXIT_ON_2))
    assert result.status == "fail", result
    assert result.detail == "the program ended before its tests finished (exit status 3)"
    assert result.sets is not None
    assert (result.sets["base"].status, result.sets["base"].failed) == ("fail", [1])
    assert result.sets["plus"].status == "error"
    assert result.sets["plus"].detail.startswith("not judged")


# The run's result is in reach of in-process code: a forged one, with the right outputs
# made up, passes only as a plain "ran" did before; one that says a set passed is forged.
FORGE_SETS = """
import gc, json, os

def f(x):
    for obj in gc.get_objects():
        if type(obj).__name__ == "ResultWriter":
            with open(".prefjudge-outputs.jsonl", "w") as handle:
                for name, xs in (("base", (1, 2, 3)), ("plus", (10, 11, 12, 13))):
                    for i, value in enumerate(xs):
                        handle.write(json.dumps({"set": name, "i": i, "t": "builtins.int",
                                                 "d": "0" * 64, "n": 3,
                                                 "v": ["i", format(2 * value, "x")]})
                                     + "\\n")
            obj.write({"stage": "done", "status": "%s", "detail": "forged",
                       "base_status": "%s", "plus_status": "%s"})
            os._exit(0)
    return 0
"""


@pytest.mark.parametrize(("claims", "verdict"), [
    (("ran", "ran", "ran"), {"base": "pass", "plus": "pass"}),
    (("pass", "ran", "ran"), {"base": "fail", "plus": "fail"}),
    (("ran", "pass", "pass"), {"base": "fail", "plus": "fail"}),
    (("ran", "ran", "pass"), {"base": "pass", "plus": "fail"}),
    (("ran", "ran", "bogus"), {"base": "pass", "plus": "fail"}),
])
def test_a_forged_record_of_the_sets_passes_nothing_new(claims: tuple[str, str, str],
                                                        verdict: dict[str, str]) -> None:
    (result,) = run_functional([(TASK, FORGE_SETS % claims)], limits=FAST, workers=1)
    assert result.sets is not None
    assert {name: each.status for name, each in result.sets.items()} == verdict, result
    assert result.status == ("pass" if set(verdict.values()) == {"pass"} else "fail")


# -- real HumanEval+ and MBPP+ tasks ------------------------------------------------------

EVALPLUS = "benchmarks/evalplus"


def broken(task: Task, raise_on: list, wrong_on_: list) -> str:
    """The task's own solution, raising on one input and wrong on another."""
    name = str(task.entry_point)
    return (f"{task.canonical_solution}\n\n_right = {name}\n\n"
            f"def {name}(*args):\n"
            f"    if list(args) == {raise_on!r}:\n        raise RuntimeError('broken')\n"
            f"    if list(args) == {wrong_on_!r}:\n        return None\n"
            f"    return _right(*args)\n")


@pytest.mark.parametrize(("path", "task_id"), [
    ("HumanEvalPlus-v0.1.10.jsonl.gz", "HumanEval/0"),
    ("MbppPlus-v0.2.0.jsonl.gz", "Mbpp/3"),
])
def test_real_tasks_raise_in_base_and_fail_in_plus(shared_data: Path, path: str,
                                                   task_id: str) -> None:
    task = load_tasks(shared_data / EVALPLUS / path)[task_id]
    assert task.base_inputs and task.plus_inputs
    base_at, plus_at = 1, len(task.plus_inputs) // 2
    code = broken(task, task.base_inputs[base_at], task.plus_inputs[plus_at])
    right, wrong = run_functional([(task, str(task.canonical_solution)), (task, code)],
                                  limits=FAST, workers=2)
    assert right.status == "pass" and right.sets is not None
    assert {name: s.status for name, s in right.sets.items()} == {"base": "pass",
                                                                  "plus": "pass"}
    assert wrong.sets is not None
    base, plus = wrong.sets["base"], wrong.sets["plus"]
    broken_inputs = (task.base_inputs[base_at], task.plus_inputs[plus_at])
    first_base = min(i for i, inp in enumerate(task.base_inputs) if inp in broken_inputs)
    assert (base.status, base.failed) == ("fail", [first_base]), base
    assert base.detail.startswith(f"base input #{first_base}")
    # plus goes on past base's failure: its own first broken input is listed
    first_plus = min(i for i, inp in enumerate(task.plus_inputs) if inp in broken_inputs)
    assert (plus.status, plus.failed) == ("fail", [first_plus]), plus
    assert plus.detail.startswith(f"plus input #{first_plus}")
    assert (wrong.status, wrong.detail) == ("fail", base.detail)
