"""Default limits per task format are the reference harness's own (issue 30).

bigcodebench.evaluate gives a sample's tests 240 s and a 30 GiB address space; a
BigCodeBench canonical solution that waits 156 s (BigCodeBench/461) passes there, and
timed out under prefjudge's old 60 s default. The limits are read inside real sandbox
runs, from the kernel (``getrlimit``), not from prefjudge's own records.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pj_cli import invoke

from prefjudge.records import Task
from prefjudge.sandbox import run_functional
from prefjudge.sandbox.limits import GENERIC_DEFAULTS, HARNESS_DEFAULTS, SandboxLimits

READ_LIMITS = """
import resource
CPU = resource.getrlimit(resource.RLIMIT_CPU)[0]
AS_MIB = resource.getrlimit(resource.RLIMIT_AS)[0] // (1024 * 1024)
"""
SOLUTION = "def task_func():\n    return 1\n"


def limits_test(cpu: int, memory_at_least: int, memory_below: int) -> str:
    return READ_LIMITS + f"""
import unittest
class TestCases(unittest.TestCase):
    def test_limits(self):
        self.assertEqual(CPU, {cpu})
        self.assertGreaterEqual(AS_MIB, {memory_at_least})
        self.assertLess(AS_MIB, {memory_below})
"""


def test_limits_not_given_follow_the_format_and_given_ones_win() -> None:
    default = SandboxLimits()
    assert default.timeout_s == GENERIC_DEFAULTS["timeout_s"]
    assert default.for_format("humaneval") is default
    bcb = default.for_format("bigcodebench")
    assert (bcb.timeout_s, bcb.cpu_s, bcb.memory_mb) == (240.0, 240, 30 * 1024)
    assert HARNESS_DEFAULTS["bigcodebench"]["timeout_s"] == 240.0
    given = SandboxLimits(timeout_s=10, memory_mb=512).for_format("bigcodebench")
    assert (given.timeout_s, given.cpu_s, given.memory_mb) == (10, 240, 512)
    # a value changed later (as the EvalPlus runs double their budget) counts as given
    assert replace(default, cpu_s=7).for_format("bigcodebench").cpu_s == 7
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)


def test_a_bigcodebench_run_gets_bigcodebench_limits_and_others_keep_theirs() -> None:
    bcb = Task(task_id="BigCodeBench/0", entry_point="task_func", test_format="bigcodebench",
               tests=limits_test(240, 30 * 1024, 31 * 1024))
    bcb_given = bcb.model_copy(update={"tests": limits_test(60, 2048, 3072)})
    humaneval = Task(task_id="HumanEval/0", entry_point="task_func", test_format="humaneval",
                     tests=READ_LIMITS + "def check(candidate):\n"
                     "    assert CPU == 60 and 4096 <= AS_MIB < 5120, (CPU, AS_MIB)\n")
    results = run_functional([(bcb, SOLUTION), (humaneval, SOLUTION)], workers=2,
                             zygote=False)
    assert [r.status for r in results] == ["pass", "pass"], results
    (given,) = run_functional([(bcb_given, SOLUTION)], zygote=False,
                              limits=SandboxLimits(cpu_s=60, memory_mb=2048))
    assert given.status == "pass", given


def test_score_help_names_the_harness_defaults() -> None:
    shown = " ".join(invoke("score", "--help", ok=True).output.split())
    assert "240 s (CPU and wall) and 30 GiB for BigCodeBench" in shown
    assert "as evalplus.evaluate" in shown
