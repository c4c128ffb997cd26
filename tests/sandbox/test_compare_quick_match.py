"""The quick match (the run sent the reference's own value) never changes a verdict.

``compare.identical_line`` (the run's line is, character for character, the one the
harness writes for the reference's own value) and ``compare._identical`` (the line read,
its type and tagged value are the reference's) let an output pass without being compared
in full; every verdict must be what the full comparison gives, on
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


def verdicts(quick: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple], int]:
    """The verdicts on every case, and how many outputs were compared in full."""
    compared: list[int] = []
    real_check = compare_module.check_output

    def counted(*args):
        compared.append(1)
        return real_check(*args)

    with monkeypatch.context() as patch:
        patch.setattr(compare_module, "check_output", counted)
        if not quick:
            REFERENCES.clear()  # no reference object whose per-set lines are already made
            patch.setattr(compare_module, "_identical", lambda *args: False)
            patch.setattr(compare_module.ReferenceOutputs, "identical_lines",
                          lambda self, task: (None,) * len(self.lines))
        jobs = [(task, code) for task, codes in CASES for code in codes]
        try:
            results = run_functional(jobs, limits=FAST, workers=2)
        finally:
            if not quick:  # nor one whose lines were made with the quick way taken away
                REFERENCES.clear()
    shown = [(r.status, r.detail, r.model_dump(mode="json").get("sets")) for r in results]
    return shown, len(compared)


def test_the_quick_match_gives_the_full_comparisons_verdicts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    REFERENCES.clear()
    quick, compared_quick = verdicts(True, monkeypatch)
    full, compared_full = verdicts(False, monkeypatch)
    assert 0 < compared_quick < compared_full, "the quick way was never (or always) taken"
    assert quick == full
    statuses = [status for status, _, _ in quick]
    assert statuses == ["pass", "fail", "fail", "pass",  # a tuple is not a list; 1.0 == 1
                        "pass", "pass", "fail", "fail",
                        "fail", "fail",  # a NaN equals nothing, the reference's own either
                        "pass", "pass", "fail",
                        "pass", "fail"], quick


def test_the_harness_writes_an_identical_output_as_the_quick_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that returns the reference's own values passes without a line being read."""
    task, codes = CASES[0]
    run_functional([(task, codes[0])], limits=FAST, workers=1)  # the reference, kept
    reference = REFERENCES.get(task, lambda: pytest.fail("the reference was not kept"))
    assert reference.identical_lines(task)[0] == (
        '{"set": "base", "i": 0, "t": "builtins.list", "v": ["l", [["i", "1"], ["i", "2"]]]}')
    read: list[str] = []
    real = compare_module._record
    monkeypatch.setattr(compare_module, "_record",
                        lambda raw, *args: read.append(raw) or real(raw, *args))
    results = run_functional([(task, codes[0]), (task, codes[1])], limits=FAST, workers=1)
    assert [r.status for r in results] == ["pass", "fail"]
    # the other's first line of each set only (each set is judged on its own)
    heads = ['{"set": "base", "i": 0, "t', '{"set": "plus", "i": 0, "t']
    assert [raw[:26] for raw in read] == heads, read


@pytest.mark.parametrize(("text", "split"), [
    ("", []), ("a", ["a"]), ("a\n", ["a"]), ("a\nb", ["a", "b"]), ("a\n\nb\n", ["a", "", "b"]),
    ("\n", [""]), ("\n\n", ["", ""]), ("ab\ncd\n", ["ab", "cd"]),
])
def test_the_line_reader_splits_at_newlines(text: str, split: list[str]) -> None:
    lines, got = compare_module._Lines(text), []
    while (line := lines.next()) is not None:
        got.append(line)
    assert got == split
    assert list(compare_module.raw_lines(text)) == split
    assert compare_module.line_count(text) == len(split)


def test_a_block_is_taken_only_when_its_whole_lines_come_next() -> None:
    lines = compare_module._Lines("a\nb\nc")
    assert not lines.take("a\nc\n")
    assert lines.take("a\nb\n")
    assert not lines.take("c\n")  # "c" is a line, but not one ended by a newline
    assert lines.next() == "c"
    lines.put_back()
    assert lines.next() == "c" and lines.next() is None


def test_a_set_of_identical_outputs_is_matched_as_one_block(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's own values: each set's block matches, no line is walked."""
    task, codes = CASES[0]
    run_functional([(task, codes[0])], limits=FAST, workers=1)  # the reference, kept
    reference = REFERENCES.get(task, lambda: pytest.fail("the reference was not kept"))
    blocks = {name: wants.block for name, wants in reference.set_wants(task).items()}
    assert blocks["base"] == "".join(line + "\n" for line in reference.identical_lines(task)[:2])
    walked: list[int] = []
    real = compare_module._matched_atol
    monkeypatch.setattr(compare_module, "_matched_atol",
                        lambda *args: walked.append(1) or real(*args))
    results = run_functional([(task, codes[0]), (task, codes[2])], limits=FAST, workers=1)
    assert [r.status for r in results] == ["pass", "fail"]
    assert walked == [], "an identical run walked its lines one by one"
