"""Outcomes decided outside the sandbox (issue 12): HumanEval+/MBPP+ and stdio outputs.

The attacks here run in real sandboxes. Each one made a wrong answer *pass* when the
comparison ran inside the candidate's process (the reference beside the code, the
nonce-tagged result the only verdict); each test asserts it no longer does.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefjudge.records import StdioCase, Task
from prefjudge.sandbox import SandboxLimits, run_functional
from prefjudge.sandbox.child import _pj_plain as plain
from prefjudge.sandbox.compare import judge_outside
from prefjudge.sandbox.process import RunOutcome
from prefjudge.sandbox.references import REFERENCES

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)


def ep_task(reference: str, inputs: list, task_id: str = "HumanEval/0", atol: float = 0,
            entry_point: str = "f") -> Task:
    return Task(task_id=task_id, entry_point=entry_point, test_format="evalplus",
                canonical_solution=reference, base_inputs=inputs[:1], plus_inputs=inputs[1:],
                atol=atol, metadata={"evalplus_dataset": "humaneval"})


DOUBLE = ep_task("def f(x):\n    return 2 * x\n", [[1], [2], [3]])

# The reference used to run in the candidate's process, just before each call: code that
# swapped the reference's body for its own made every comparison "equal".
HIJACK_REFERENCE = '''
import gc

def f(x):
    return 0

for obj in gc.get_objects():  # at import: the reference is loaded by then
    if (type(obj).__name__ == "function" and obj is not f
            and getattr(obj, "__code__", None) is not None
            and obj.__code__.co_filename == "reference.py"):
        obj.__code__ = f.__code__
'''

# In-process code can reach the result writer (the stated limit for in-process formats):
# here the verdict comes from prefjudge's comparison, so a forged pass is worth nothing.
FORGE_PASS = '''
import gc, os

def f(x):
    for obj in gc.get_objects():
        if type(obj).__name__ == "ResultWriter":
            obj.write({"stage": "done", "status": "pass", "detail": "forged"})
            os._exit(0)
    return 0
'''

# ... nor is a forged "every input ran" with outputs made up: they must still be right.
FORGE_RAN = '''
import gc, json, os

def f(x):
    for obj in gc.get_objects():
        if type(obj).__name__ == "ResultWriter":
            with open(".prefjudge-outputs.jsonl", "w") as handle:
                for name, i in (("base", 0), ("plus", 0), ("plus", 1)):
                    handle.write(json.dumps({"set": name, "i": i, "t": "builtins.int",
                                             "d": "0" * 64, "n": 3, "v": ["i", "2"]}) + "\\n")
            obj.write({"stage": "done", "status": "ran", "detail": "forged"})
            os._exit(0)
    return 0
'''


@pytest.mark.parametrize("attack", ["HIJACK_REFERENCE", "FORGE_PASS", "FORGE_RAN"])
def test_in_process_tampering_cannot_make_evalplus_pass(attack):
    code = globals()[attack]
    (result,) = run_functional([(DOUBLE, code)], limits=FAST, workers=1)
    assert result.status == "fail", result
    honest = "def f(x):\n    return x + x\n"
    (good,) = run_functional([(DOUBLE, honest)], limits=FAST, workers=1)
    assert good.status == "pass", good


def test_forged_lines_say_where_they_went_wrong():
    (result,) = run_functional([(DOUBLE, FORGE_RAN)], limits=FAST, workers=1)
    assert "plus input #0" in result.detail and "expected: 4" in result.detail, result


# A stdio program that kills the harness and writes a result of its own: no nonce, no
# outputs of the right cases; it must fail, and say so.
STDIO_KILL_PARENT = '''
import json, os, signal
with open(".prefjudge-outputs.jsonl", "w") as handle:
    handle.write(json.dumps({"i": 0, "stdout": "the right answer"}) + "\\n")
os.kill(os.getppid(), signal.SIGKILL)
'''


def test_a_stdio_program_that_kills_the_harness_and_forges_outputs_does_not_pass():
    task = Task(task_id="S/1", test_format="stdio",
                stdio_cases=[StdioCase(input="1\n", output="42\n"),
                             StdioCase(input="2\n", output="43\n")])
    (result,) = run_functional([(task, STDIO_KILL_PARENT)], limits=FAST, workers=1)
    assert result.status == "fail", result


def test_expected_outputs_are_not_in_the_sandbox():
    # The program looks for the expected output everywhere it can read: its input files,
    # the payload, the environment. It is not there any more. The interpreter's own
    # folders, bound read-only into the sandbox, are left out: when the virtualenv lives
    # under /tmp (a checkout there), reading every installed file takes longer than the
    # time limit, and nothing of a run is ever written there.
    seek = '''
import os, sys
secret = "SECRET-EXPECTED-" + "7f3a"  # never whole in this source
found = []
interpreter = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
for root in (".", "/tmp"):
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders
                         if os.path.realpath(os.path.join(folder, d)) not in interpreter]
        for name in files:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    if secret.encode() in handle.read():
                        found.append(name)
            except OSError:
                pass
print(secret if found or secret in str(os.environ) else "no")
'''
    task = Task(task_id="S/2", test_format="stdio",
                stdio_cases=[StdioCase(input="x\n", output="SECRET-EXPECTED-7f3a\n")])
    (result,) = run_functional([(task, seek)], limits=FAST, workers=1)
    assert result.status == "fail" and "got: 'no\\n'" in result.detail, result


def test_large_outputs_are_compared_by_digest():
    task = ep_task("def f(n):\n    return 'ab' * n\n", [[50_000], [60_000]], task_id="HumanEval/1")
    same = "def f(n):\n    return ''.join('ab' for _ in range(n))\n"
    off_by_one = "def f(n):\n    return 'ab' * n + ('' if n < 60_000 else 'a')\n"
    as_bytes = "def f(n):\n    return b'ab' * n\n"
    results = run_functional([(task, same), (task, off_by_one), (task, as_bytes)],
                             limits=FAST, workers=1)
    assert [r.status for r in results] == ["pass", "fail", "fail"], results
    assert "plus input #0" in results[1].detail and "digest" in results[1].detail


def test_large_and_small_outputs_that_python_calls_equal_match():
    # EvalPlus compares with ==: 1 == 1.0 == True, sets in any order. The digest keeps that.
    task = ep_task("def f(n):\n    return list(range(n))\n", [[3], [5000]], task_id="HumanEval/2")
    as_floats = "def f(n):\n    return [float(i) for i in range(n)]\n"
    as_tuple = "def f(n):\n    return tuple(range(n))\n"
    results = run_functional([(task, as_floats), (task, as_tuple)], limits=FAST, workers=1)
    assert [r.status for r in results] == ["pass", "fail"], results


def test_the_reference_runs_once_per_task():
    REFERENCES.clear()
    task = ep_task("def f(x):\n    return -x\n", [[1], [2]], task_id="HumanEval/3")
    codes = ["def f(x):\n    return -x\n", "def f(x):\n    return 0 - x\n",
             "def f(x):\n    return x\n"]
    results = run_functional([(task, code) for code in codes], limits=FAST, workers=2)
    assert [r.status for r in results] == ["pass", "pass", "fail"]
    assert len(REFERENCES._done) == 1


# --- the verdict, on outcomes written by hand ----------------------------------------------


def outcome(result: dict | None, outputs: str | None, **extra) -> RunOutcome:
    return RunOutcome(stage="done" if result else None, result=result, timed_out=False,
                      setup_error=None, exit_code=0, signal=None, output="",
                      output_exceeded=False, supervisor_lost=False, outputs=outputs, **extra)


STDIO = Task(task_id="S/3", test_format="stdio",
             stdio_cases=[StdioCase(input="1\n", output="1\n"),
                          StdioCase(input="2\n", output="4\n")])


def lines(*stdouts: str) -> str:
    import json

    return "".join(json.dumps({"i": i, "stdout": out}) + "\n" for i, out in enumerate(stdouts))


@pytest.mark.parametrize(
    ("result", "outputs", "status", "words"),
    [
        ({"status": "ran"}, lines("1", "4"), "pass", "2 cases passed"),
        ({"status": "pass"}, lines("1", "4"), "fail", "forged"),  # a stolen nonce
        ({"status": "ran"}, lines("1"), "fail", "1 of 2 outputs"),
        ({"status": "ran"}, lines("1", "5"), "fail", "case #1: wrong answer"),
        ({"status": "ran"}, lines("1") + "not json\n", "fail", "could not be read"),
        (None, lines("1"), "fail", "ended before its tests finished"),  # killed
        ({"status": "timeout", "detail": "case #1 exceeded 1 s"}, lines("1"), "timeout", "#1"),
        ({"status": "timeout", "detail": "x"}, lines("2"), "fail", "case #0: wrong answer"),
    ],
)
def test_stdio_verdicts(result, outputs, status, words):
    record = None if result is None else {"detail": "", **result}
    run = outcome(record, outputs)
    if result is None:
        run = RunOutcome(**{**run.__dict__, "stage": "started"})
    verdict = judge_outside(STDIO, run, FAST)
    assert verdict.status == status and words in verdict.detail, verdict


# --- the plain-data format ------------------------------------------------------------------

plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.binary() | st.complex_numbers(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.frozensets(st.integers() | st.text(), max_size=4)
    | st.dictionaries(st.text() | st.integers(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(plain_values)
def test_encode_then_decode_gives_back_the_same_value_and_type(value):
    back = plain.decode(plain.encode(value))
    assert back == value and same_types(back, value)


def same_types(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return all(same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return all(same_types(a[key], b[key]) for key in a)
    return True


@settings(max_examples=300, deadline=None)
@given(plain_values, plain_values)
def test_digests_agree_with_python_equality(a, b):
    assert (plain.digest(a)[0] == plain.digest(b)[0]) == (a == b)


def test_digest_of_equal_numbers_and_unordered_containers():
    assert plain.digest([1, True, 2.0])[0] == plain.digest([1, 1, 2])[0]
    assert plain.digest({3, 1, 2})[0] == plain.digest(frozenset({2, 3, 1}))[0]
    assert plain.digest({"a": 1, "b": 2})[0] == plain.digest({"b": 2, "a": 1})[0]
    assert plain.digest([1])[0] != plain.digest((1,))[0]
    assert plain.digest(10**5000)[0] != plain.digest(float(10**300))[0]
    with pytest.raises(plain.NotPlainData):
        plain.digest([math.nan])


def test_a_nan_is_sent_whole_and_never_equals_another():
    record = plain.record([1.0, math.nan], "builtins.list")
    assert "v" in record
    task = ep_task("def f(x):\n    return [x, float('nan')]\n", [[1.0]], task_id="HumanEval/4")
    (result,) = run_functional([(task, "def f(x):\n    return [x, float('nan')]\n")],
                               limits=FAST, workers=1)
    assert result.status == "fail", result  # EvalPlus: nan != nan (and allclose says no)


@pytest.mark.parametrize("bad", [["x"], ["i", 5], ["d", [[1]]], ["l", "notalist"], 7,
                                 ["S", [["l", []]]]])
def test_decode_refuses_what_encode_never_writes(bad):
    with pytest.raises(ValueError):
        plain.decode(bad)
