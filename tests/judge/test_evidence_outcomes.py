"""Evidence judging of a response that fails by a missing import (issue 43, item 2).

A response whose code imports a module that is not installed (at the top, lazily, or by
raising ``ModuleNotFoundError`` itself) used to make its test run an ``error``, so the
correctness fact and the verdict were errors and ``rank`` never saw that side lose. Its
run is its own ``fail`` now: the side that passes wins on correctness, in both sandbox
modes, and the battle reaches ``rank``. Only the environment's trouble (a library the
task itself declares, not installed) is still an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cli import rows, run_cli
from pj_files import write_jsonl

ABSENT = "pj_surely_absent_module"
DECLARED = "pj_declared_absent_library"

RIGHT = {
    "sample/running_mean": "def running_mean(values):\n    out, total = [], 0.0\n"
                           "    for i, v in enumerate(values, 1):\n        total += v\n"
                           "        out.append(total / i)\n    return out\n",
    "sample/word_count": "import re\n\ndef task_func(text):\n    out = {}\n"
                         "    for w in re.findall('[a-z]+', text.lower()):\n"
                         "        out[w] = out.get(w, 0) + 1\n    return out\n",
    "sample/min_max_stdio": "input()\nxs = list(map(int, input().split()))\n"
                            "print(min(xs), max(xs))\n",
}
# one way of failing by a missing import per task format: plain asserts, unittest, stdio
WRONG = {
    "sample/running_mean": f"import {ABSENT}\n\ndef running_mean(values):\n"
                           f"    return {ABSENT}.means(values)\n",
    "sample/word_count": f"def task_func(text):\n    import {ABSENT}\n"
                         f"    return {ABSENT}.count(text)\n",
    "sample/min_max_stdio": f"raise ModuleNotFoundError('no', name='{ABSENT}')\n",
}


def generations(path: Path, model: str, codes: dict[str, str]) -> Path:
    write_jsonl(path, [{"id": f"{model}/{task}", "task_id": task, "model": model,
                        "response": f"```python\n{code}```"} for task, code in codes.items()])
    return path


def judge(tmp_path: Path, tasks: Path, out: Path) -> list[dict]:
    run_cli("judge", str(generations(tmp_path / "wrong.jsonl", "wrong", WRONG)),
            str(generations(tmp_path / "right.jsonl", "right", RIGHT)), "--tasks", str(tasks),
            "--tests", str(tasks), "--method", "evidence", "--criterion", "correctness",
            "-o", str(out))
    return rows(out)


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "fresh"])
def test_the_side_that_imports_a_missing_module_loses_and_rank_sees_it(
    project_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zygote: str
) -> None:
    monkeypatch.setenv("PREFJUDGE_SANDBOX_ZYGOTE", zygote)  # the command's sandbox mode
    verdicts = judge(tmp_path, project_root / "datasets" / "sample" / "tasks.jsonl",
                     tmp_path / "verdicts.jsonl")
    assert sorted(v["task_id"] for v in verdicts) == sorted(RIGHT)
    for verdict in verdicts:
        assert (verdict["model_a"], verdict["model_b"]) == ("wrong", "right")
        assert verdict["status"] == "ok", verdict
        assert (verdict["preferred"], verdict["winner"]) == ("B", "model_b"), verdict
        assert verdict["decided_by"] == "evidence:correctness"
        fact = verdict["facts"][0]
        assert (fact["kind"], fact["outcome"]) == ("correctness", "B")
        assert (fact["detail"]["status_a"], fact["detail"]["status_b"]) == ("fail", "pass")
    ratings = tmp_path / "ratings.csv"
    run_cli("rank", str(tmp_path / "verdicts.jsonl"), "-o", str(ratings), "--alpha", "0.01")
    table = [line.split(",") for line in ratings.read_text().splitlines()[1:]]
    assert [(row[0], float(row[7]), float(row[8])) for row in table] == [
        ("right", 3.0, 1.0), ("wrong", 3.0, 0.0)], ratings.read_text()


def test_a_library_the_task_declares_missing_is_still_an_error(
    project_root: Path, tmp_path: Path
) -> None:
    tasks = rows(project_root / "datasets" / "sample" / "tasks.jsonl")
    for task in tasks:
        if task["task_id"] == "sample/word_count":
            task["libs"] = [DECLARED]
            task["tests"] = f"import {DECLARED}\n" + task["tests"]
    declared = tmp_path / "tasks.jsonl"
    write_jsonl(declared, tasks)
    by_task = {v["task_id"]: v for v in judge(tmp_path, declared, tmp_path / "verdicts.jsonl")}
    broken = by_task.pop("sample/word_count")
    assert broken["status"] == "error" and broken["preferred"] is None, broken
    fact = broken["facts"][0]
    assert fact["outcome"] == "error" and f"missing module {DECLARED!r}" in fact["fact"], fact
    assert {v["preferred"] for v in by_task.values()} == {"B"}  # the others as before
