"""The quick match (the run sent the reference's own value) never changes a verdict.

``compare._identical`` lets an output that is the same plain data as the reference's pass
without reading either back; every verdict must be what the full comparison gives, on
real sandbox runs: equal values, floats within and beyond the tolerance, NaNs (equal to
nothing), values Python calls equal across types, tuples for lists, and tasks with an
oracle of their own.
"""

from __future__ import annotations

import pytest

from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, run_functional
from prefjudge.sandbox import compare as compare_module
from prefjudge.sandbox.references import REFERENCES

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)


def ep_task(task_id: str, reference: str, inputs: list, *, dataset: str = "humaneval",
            entry_point: str = "f", atol: float = 0) -> Task:
    return Task(task_id=task_id, entry_point=entry_point, test_format="evalplus",
                canonical_solution=reference, base_inputs=inputs[:2], plus_inputs=inputs[2:],
                atol=atol, metadata={"evalplus_dataset": dataset})


CASES = [
    (ep_task("HumanEval/1", "def f(x):\n    return [x, x * 2]\n", [[1], [2], [3]]),
     ["def f(x):\n    return [x, x * 2]\n", "def f(x):\n    return [x, x + 2]\n",
      "def f(x):\n    return (x, x * 2)\n", "def f(x):\n    return [float(x), x * 2.0]\n"]),
    (ep_task("HumanEval/2", "def f(x):\n    return x / 3\n", [[1], [2], [4]]),
     ["def f(x):\n    return x / 3\n", "def f(x):\n    return x / 3 + 1e-9\n",
      "def f(x):\n    return x / 3 + 1e-3\n", "def f(x):\n    return round(x / 3, 2)\n"]),
    (ep_task("HumanEval/3", "def f(x):\n    return float('nan') if x > 1 else x\n",
             [[1], [2], [3]]),
     ["def f(x):\n    return float('nan') if x > 1 else x\n", "def f(x):\n    return x\n"]),
    (ep_task("Mbpp/2", "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
             [[[3, 4, 5, 6], [5, 7, 4, 10]], [[1, 2, 3, 4], [5, 4, 3, 7]], [[1, 2], [2, 1]]],
             dataset="mbpp", entry_point="similar_elements"),
     ["def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
      "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))\n",
      "def similar_elements(a, b):\n    return (1,)\n"]),
    (ep_task("HumanEval/32", "def find_zero(xs):\n    return -xs[0] / xs[1]\n",
             [[[1.0, 2.0]], [[-3.0, 1.5]], [[4.0, -2.0]]], entry_point="find_zero"),
     ["def find_zero(xs):\n    return -xs[0] / xs[1]\n",
      "def find_zero(xs):\n    return 0.0\n"]),
]


def verdicts(quick: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    with monkeypatch.context() as patch:
        if not quick:
            patch.setattr(compare_module, "_identical", lambda *args: False)
        jobs = [(task, code) for task, codes in CASES for code in codes]
        results = run_functional(jobs, limits=FAST, workers=2)
    return [(r.status, r.detail, r.model_dump(mode="json").get("sets")) for r in results]


def test_the_quick_match_gives_the_full_comparisons_verdicts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    REFERENCES.clear()
    calls: list[bool] = []
    real = compare_module._identical

    def counted(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(compare_module, "_identical", counted)
    quick = verdicts(True, monkeypatch)
    assert any(calls) and not all(calls), "the quick way was never (or always) taken"
    full = verdicts(False, monkeypatch)
    assert quick == full
    statuses = [status for status, _, _ in quick]
    assert statuses == ["pass", "fail", "fail", "pass",  # a tuple is not a list; 1.0 == 1
                        "pass", "pass", "fail", "fail",
                        "fail", "fail",  # a NaN equals nothing, the reference's own either
                        "pass", "pass", "fail",
                        "pass", "fail"], quick
