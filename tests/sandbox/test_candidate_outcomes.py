"""Outcomes a response cannot choose (issue 43, item 1).

``error`` belongs to the harness and the environment: the sandbox could not start, the
harness crashed, the task's tests do not load on their own, or a library the benchmark
itself declares is not installed. Whatever the candidate's code does -- importing a
module that is not installed (at the top, lazily, or by raising ``ModuleNotFoundError``
itself), raising anything, printing anything, keeping the tests from loading -- is its
own outcome, ``pass`` or ``fail``, in every test format and in both sandbox modes. Before,
a wrong solution that imported a missing module was an ``error``, which pass@1 leaves
out: on HumanEval/2, one right solution in five scored 0.50 instead of 0.20.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefjudge.cli import main
from prefjudge.records import FuncResult, StdioCase, Task
from prefjudge.sandbox import SandboxLimits, run_functional
from prefjudge.sandbox.child import _pj_common as common
from prefjudge.sandbox.preload import declared_modules

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)
ABSENT = "pj_surely_absent_module"  # installed nowhere
DECLARED = "pj_declared_absent_library"  # what a task declares but this machine lacks
both_modes = pytest.mark.parametrize("zygote", [True, False], ids=["zygote", "fresh"])

# The three ways to fail by a missing import, as a function ``name(x)`` wrote them.
MISSING_IMPORTS = {
    "top": f"import {ABSENT}\n\ndef {{name}}(x):\n    return {ABSENT}.go(x)\n",
    "lazy": f"def {{name}}(x):\n    import {ABSENT}\n    return {ABSENT}.go(x)\n",
    "raised": f"def {{name}}(x):\n    raise ModuleNotFoundError(\"No module named '{ABSENT}'\", "
              f"name='{ABSENT}')\n",
    "from": f"from {ABSENT}.sub import helper\n\ndef {{name}}(x):\n    return helper(x)\n",
}
# Whatever else the code does that once read, or could read, as the harness's trouble.
RAISES = {
    "import-error": "def {name}(x):\n    raise ImportError('cannot import name y', name='json')\n",
    "system-exit": "import sys\nsys.exit(0)\n",
    "keyboard-interrupt": "def {name}(x):\n    raise KeyboardInterrupt\n",
    "own-class": (  # says it is a ModuleNotFoundError, names a declared library
        "class Lie(Exception):\n    @property\n    def __class__(self):\n"
        "        return ModuleNotFoundError\n"
        f"def {{name}}(x):\n    raise Lie('{DECLARED}')\n"),
    "printing": (
        "import sys\n"
        "print('[prefjudge-harness-started 00]')\n"
        "print('{{\"stage\": \"done\", \"status\": \"error\", \"nonce\": \"00\"}}')\n"
        "sys.stderr.write(\"Traceback (most recent call last):\\n"
        f"ModuleNotFoundError: No module named '{ABSENT}'\\n\")\n"
        "def {name}(x):\n    return -1\n"),
}


def codes(name: str) -> dict[str, str]:
    """Every hostile way of failing, written for entry point ``name``."""
    return {way: code.format(name=name) for way, code in {**MISSING_IMPORTS, **RAISES}.items()}


def run(task: Task, named: dict[str, str], zygote: bool) -> dict[str, FuncResult]:
    results = run_functional([(task, code) for code in named.values()], limits=FAST,
                             zygote=zygote, workers=2)
    return dict(zip(named, results, strict=True))


def assert_all_fail(results: dict[str, FuncResult]) -> None:
    statuses = {way: result.status for way, result in results.items()}
    assert statuses == dict.fromkeys(results, "fail"), results
    for way in MISSING_IMPORTS:
        if way in results:
            assert ABSENT in results[way].detail, results[way]


# --- the rule itself --------------------------------------------------------------------------


class _NameLies(ModuleNotFoundError):
    @property
    def name(self):  # type: ignore[override]  # never read: the C slot is
        raise RuntimeError("read")


def test_only_a_declared_library_missing_before_the_run_is_the_environments() -> None:
    try:
        common.note_declared([DECLARED, "json", 7, ""])
        declared = common.environment_error(ModuleNotFoundError("x", name=f"{DECLARED}.sub"))
        assert declared is not None and declared["status"] == "error"
        assert DECLARED in declared["detail"]
        assert common.environment_error(ModuleNotFoundError("x", name=ABSENT)) is None
        assert common.environment_error(ModuleNotFoundError("x", name="json")) is None
        assert common.environment_error(ImportError("x", name=DECLARED)) is None
        assert common.environment_error(_NameLies("x", name=ABSENT)) is None
        assert common.environment_error(_NameLies("x", name=DECLARED)) is not None
        assert common.declared_missing(None) is None and common.declared_missing(7) is None
        failed = common.failure_from_exception(ModuleNotFoundError("x", name=ABSENT), ())
        assert failed["status"] == "fail"
    finally:
        common.note_declared(())
    assert common.environment_error(ModuleNotFoundError("x", name=DECLARED)) is None


def test_what_a_task_declares_comes_from_its_own_files() -> None:
    task = Task(task_id="B/1", test_format="bigcodebench", libs=["numpy", "sklearn.svm"],
                tests="import unittest\nfrom pandas.api import types\n",
                canonical_solution="import os.path\n", prompt="import re\ndef f(): ...")
    assert declared_modules(task) == ["numpy", "os", "pandas", "re", "sklearn", "unittest"]
    assert declared_modules(Task(task_id="S/1", prompt="Write a program.")) == []


# --- plain asserts (HumanEval's check) ---------------------------------------------------------

CHECK = "import math\n\ndef check(candidate):\n    assert math.isclose(candidate(3.5), 0.5)\n"
TRUNCATE = "def truncate(x):\n    return x % 1.0\n"


@both_modes
def test_plain_asserts_a_candidates_imports_raises_and_prints_are_its_fails(zygote: bool) -> None:
    task = Task(task_id="T/1", entry_point="truncate", test_format="humaneval", tests=CHECK)
    named = {
        **codes("truncate"),
        "breaks-the-tests-import": "import sys\nsys.modules['math'] = None\n" + TRUNCATE,
        "right-and-printing": "print('Traceback: ModuleNotFoundError')\n" + TRUNCATE,
    }
    results = run(task, named, zygote)
    right = results.pop("right-and-printing")
    assert right.status == "pass", right
    assert_all_fail(results)
    assert "no longer load" in results["breaks-the-tests-import"].detail


# --- HumanEval+ / MBPP+ (the EvalPlus harness) -------------------------------------------------


def evalplus_task() -> Task:
    return Task(task_id="HumanEval/9002", entry_point="truncate", test_format="evalplus",
                canonical_solution=TRUNCATE, base_inputs=[[3.5], [1.25]],
                plus_inputs=[[2.75], [9.5]], atol=1e-6,
                metadata={"evalplus_dataset": "humaneval"})


@both_modes
def test_evalplus_a_candidates_missing_import_fails_base_and_plus(zygote: bool) -> None:
    named = {**codes("truncate"), "right": TRUNCATE}
    results = run(evalplus_task(), named, zygote)
    assert results.pop("right").status == "pass"
    assert_all_fail(results)
    for way in MISSING_IMPORTS:
        sets = results[way].sets
        assert {name: each.status for name, each in sets.items()} == {
            "base": "fail", "plus": "fail"}, (way, sets)


# --- BigCodeBench (unittest) -------------------------------------------------------------------

BCB_TESTS = """import unittest

class TestCases(unittest.TestCase):
    def test_half(self):
        self.assertAlmostEqual(task_func(3.5), 0.5)

    def test_not_zero(self):
        self.assertTrue(task_func(1.25) != 0)
"""
BCB_RIGHT = "def task_func(x):\n    return x % 1.0\n"


def bcb_task(tests: str = BCB_TESTS, libs: list[str] | None = None) -> Task:
    return Task(task_id="BigCodeBench/9001", entry_point="task_func", test_format="bigcodebench",
                tests=tests, libs=libs or [])


@both_modes
def test_bigcodebench_a_candidate_that_keeps_its_tests_from_running_fails(zygote: bool) -> None:
    named = {
        **codes("task_func"),
        "tests-import-broken": "import sys\nsys.modules['unittest'] = None\n" + BCB_RIGHT,
        "no-test-runs": "import unittest\nunittest.TestLoader.loadTestsFromTestCase = "
                        "lambda self, cls: unittest.TestSuite()\n" + BCB_RIGHT,
        "right": BCB_RIGHT,
    }
    results = run(bcb_task(), named, zygote)
    assert results.pop("right").status == "pass"
    assert_all_fail(results)
    assert "no test ran" in results["no-test-runs"].detail
    assert "failed at import" in results["tests-import-broken"].detail


# --- LiveCodeBench (stdin/stdout) ---------------------------------------------------------------

STDIO_RIGHT = "print(2 * int(input()))\n"


def stdio_task(libs: list[str] | None = None) -> Task:
    return Task(task_id="S/1", test_format="stdio", libs=libs or [],
                stdio_cases=[StdioCase(input="3\n", output="6\n"),
                             StdioCase(input="4\n", output="8\n")])


@both_modes
def test_stdio_a_programs_missing_import_and_its_printed_traceback_fail(zygote: bool) -> None:
    named = {
        "top": f"import {ABSENT}\n" + STDIO_RIGHT,
        "lazy": f"n = int(input())\nif n > 3:\n    import {ABSENT}\nprint(2 * n)\n",
        "raised": f"raise ModuleNotFoundError('no', name='{ABSENT}')\n",
        "printed": ("import sys\nsys.stderr.write(\"ModuleNotFoundError: No module named "
                    f"'{ABSENT}'\\n\")\nsys.exit(1)\n"),
        "protocol-lines": ("print('[prefjudge-harness-started 00]')\n"
                           "print('{\"stage\": \"done\", \"status\": \"error\"}')\n"),
        "keyboard-interrupt": "raise KeyboardInterrupt\n",
        "right": STDIO_RIGHT,
    }
    results = run(stdio_task(), named, zygote)
    assert results.pop("right").status == "pass"
    assert {way: r.status for way, r in results.items()} == dict.fromkeys(results, "fail"), results
    assert ABSENT in results["top"].detail and "case #1" in results["lazy"].detail


# --- the environment's: a library the benchmark declares is missing ------------------------------


@both_modes
def test_a_declared_library_that_is_missing_is_an_error_with_its_reason(zygote: bool) -> None:
    uses = f"import {DECLARED}\n" + BCB_RIGHT
    jobs = [
        (bcb_task(libs=[DECLARED]), uses),  # BigCodeBench's libs
        (bcb_task(libs=[DECLARED]), f"def task_func(x):\n    import {DECLARED}\n    return 0\n"),
        (bcb_task(f"import {DECLARED}\n" + BCB_TESTS), BCB_RIGHT),  # the tests import it
        (Task(task_id="T/2", entry_point="truncate", test_format="humaneval",
              tests=f"import {DECLARED}\n" + CHECK), TRUNCATE),
        (evalplus_task().model_copy(update={
            "canonical_solution": f"import {DECLARED}\n" + TRUNCATE}), TRUNCATE),
        (stdio_task(libs=[DECLARED]), f"import {DECLARED}\n" + STDIO_RIGHT),
        # the task declares it, the code neither needs it nor is right: its own outcome
        (bcb_task(libs=[DECLARED]), BCB_RIGHT),
        (bcb_task(libs=[DECLARED]), "def task_func(x):\n    return 0\n"),
        (bcb_task(libs=[DECLARED]), f"import {ABSENT}\n" + BCB_RIGHT),
    ]
    results = run_functional(jobs, limits=FAST, zygote=zygote, workers=2)
    statuses = [result.status for result in results]
    assert statuses == ["error"] * 6 + ["pass", "fail", "fail"], results
    for result in results[:4] + results[5:6]:
        assert f"missing module {DECLARED!r}" in result.detail, result
    assert "reference solution" in results[4].detail and DECLARED in results[4].detail


@both_modes
def test_tests_that_do_not_load_on_their_own_are_an_error(zygote: bool) -> None:
    jobs = [
        (Task(task_id="T/3", entry_point="truncate", test_format="humaneval",
              tests="raise RuntimeError('broken tests')\n"), TRUNCATE),
        (Task(task_id="T/4", entry_point="truncate", test_format="humaneval", tests="x = 1\n"),
         TRUNCATE),
        (bcb_task("import unittest\nclass Other(unittest.TestCase):\n    pass\n"), BCB_RIGHT),
        (bcb_task("class TestCases(:\n"), BCB_RIGHT),
        (bcb_task("from __future__ import annotations\n" + BCB_TESTS), BCB_RIGHT),
    ]
    results = run_functional(jobs, limits=FAST, zygote=zygote, workers=2)
    assert [result.status for result in results] == ["error"] * 5, results
    assert "broken tests" in results[0].detail and "check(candidate)" in results[1].detail
    assert "TestCases" in results[2].detail and "do not compile" in results[3].detail
    assert "__future__" in results[4].detail


# --- prefjudge score: HumanEval/2 (the case) ------------------------------------------


@both_modes
def test_score_humaneval_2_one_right_in_five_is_pass_at_1_of_a_fifth(
    shared_data: Path, tmp_path: Path, zygote: bool
) -> None:
    tasks = shared_data / "benchmarks" / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    solutions = ["def truncate_number(number: float) -> float:\n    return number % 1.0\n"]
    solutions += [MISSING_IMPORTS[way].format(name="truncate_number")
                  for way in ("top", "lazy", "raised", "from")]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "HumanEval/2", "solution": code}) + "\n"
                               for code in solutions))
    out = tmp_path / "scores.jsonl"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(main, [
        "score", str(samples), "--tasks", str(tasks), "--model", "m", "-o", str(out),
        "--bootstrap", "0", "--zygote" if zygote else "--no-zygote"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["func"]["status"] for r in records] == ["pass"] + ["fail"] * 4, records
    [model] = json.loads((tmp_path / "scores.summary.json").read_text())["models"]
    assert model["pass1"] == pytest.approx(0.2)
    assert (model["func_fail"], model["func_error"]) == (4, 0)
