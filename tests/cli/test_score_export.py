"""``prefjudge score --export`` and the base/plus columns, end to end on real HumanEval+ tasks.

Nine samples of three real HumanEval+ tasks run in the real sandbox: the reference solution
(passes base and plus), a solution that answers only the base inputs right (passes base,
fails plus) and one that returns None (fails both).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from pj_cli import WIDE, flat, invoke, rows

TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/13")


def refuse(constant: str) -> None:
    """A strict JSON reader's answer to ``NaN`` or ``Infinity``."""
    raise ValueError(f"not JSON: {constant}")


def samples_of(release: Path) -> list[dict[str, str]]:
    """Three samples per task: right, right on base inputs only, wrong."""
    found = {}
    with gzip.open(release, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["task_id"] in TASKS:
                found[record["task_id"]] = record
    out = []
    for task_id in TASKS:
        task = found[task_id]
        right = task["prompt"] + task["canonical_solution"]
        name = task["entry_point"]
        base_only = (
            f"{right}\n\n_right = {name}\n_base = {json.dumps(task['base_input'])!r}\n\n\n"
            f"def {name}(*args):\n    import json\n"
            "    if json.loads(json.dumps(list(args))) in json.loads(_base):\n"
            "        return _right(*args)\n    return None\n")
        out += [{"task_id": task_id, "solution": right},
                {"task_id": task_id, "solution": base_only},
                {"task_id": task_id, "solution": task["prompt"] + "    return None\n"}]
    return out


@pytest.fixture(scope="module")
def release(shared_data: Path) -> Path:
    path = shared_data / "benchmarks" / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    if not path.exists():
        pytest.skip(f"the HumanEval+ release file is not in {path.parent}")
    return path


def test_score_shows_base_and_plus_and_exports_evalplus_results(
        tmp_path: Path, release: Path) -> None:
    generations = tmp_path / "coder_temp_0.jsonl"
    generations.write_text("".join(json.dumps(s) + "\n" for s in samples_of(release)))
    out, exported = tmp_path / "scores.jsonl", tmp_path / "evalplus"
    result = invoke("score", generations, "--tasks", release, "-o", out,
                    "--export", f"evalplus={exported}", env=WIDE)
    assert result.exit_code == 0, result.output
    records = rows(out)
    assert all(r["func"]["sets"] is not None for r in records), "the sandbox fills func.sets"
    sets = [(r["func"]["sets"]["base"]["status"], r["func"]["sets"]["plus"]["status"])
            for r in records]
    assert sets == [("pass", "pass"), ("pass", "fail"), ("fail", "fail")] * 3
    summary = json.loads(out.with_name("scores.summary.json").read_text())["models"][0]
    assert summary["base_pass1"] == pytest.approx(2 / 3)
    assert summary["plus_pass1"] == pytest.approx(1 / 3) == summary["pass1"]
    shown = flat(result.output)
    assert "base pass@1 [95% CI]" in shown and "plus pass@1 [95% CI]" in shown
    assert "0.667 [0.667, 0.667]" in shown and "pass@10" not in shown

    text = (exported / "humaneval" / "coder_temp_0_eval_results.json").read_text()
    results = json.loads(text, parse_constant=refuse)
    assert list(results) == ["date", "hash", "eval", "pass_at_k"]
    # EvalPlus 0.3.1's block: base tests, then base and plus together; k=1 only (3 samples)
    assert results["pass_at_k"] == {"base": {"pass@1": pytest.approx(2 / 3)},
                                    "plus": {"pass@1": pytest.approx(1 / 3)}}
    assert results["hash"] == "fe585eb4df8c88d844eeb463ea4d0302"
    assert list(results["eval"]) == list(TASKS)
    for task_id in TASKS:
        entries = results["eval"][task_id]
        assert [(e["base_status"], e["plus_status"]) for e in entries] == [
            ("pass", "pass"), ("pass", "fail"), ("fail", "fail")]
        assert entries[0]["base_fail_tests"] == entries[0]["plus_fail_tests"] == []
        assert len(entries[1]["plus_fail_tests"]) == len(entries[2]["base_fail_tests"]) == 1
    samples = (exported / "humaneval" / "coder_temp_0.jsonl").read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in samples] == [t for t in TASKS for _ in "abc"]

    # a finished output: nothing is scored again, and another export is written from it
    again = invoke("score", generations, "--tasks", release, "-o", out,
                   "--export", f"evalplus={tmp_path / 'again'}", env=WIDE)
    assert again.exit_code == 0, again.output
    assert "9 already scored, 0 to go" in flat(again.output)
    redone = json.loads((tmp_path / "again" / "humaneval" /
                         "coder_temp_0_eval_results.json").read_text())
    assert redone["eval"] == results["eval"]

    # BigCodeBench's files do not fit HumanEval+ tasks: refused before anything runs
    refused = invoke("score", generations, "--tasks", release, "-o", out,
                     "--export", f"bigcodebench={tmp_path / 'bcb'}", env=WIDE)
    assert refused.exit_code == 2
    assert "--export bigcodebench needs BigCodeBench tasks" in flat(refused.output)
    assert not (tmp_path / "bcb").exists()

    report = invoke("report", out, "--markdown", "-", "-o", tmp_path / "report.html",
                    "--bootstrap", "50")
    assert report.exit_code == 0, report.output
    assert "| coder_temp_0 | single-turn | base | 0.667 [0.667, 0.667] | 3 |" in report.output
    assert "| coder_temp_0 | single-turn | base + plus | 0.333 [0.333, 0.333] | 3 |" in (
        report.output)


def test_export_usage_errors(tmp_path: Path) -> None:
    generations = tmp_path / "g.jsonl"
    generations.write_text('{"task_id": "HumanEval/0", "solution": "x = 1\\n"}\n')
    bad = invoke("score", generations, "--export", "humaneval=out")
    assert bad.exit_code == 2 and "unknown format 'humaneval'" in flat(bad.output)
    shape = invoke("score", generations, "--export", "evalplus")
    assert shape.exit_code == 2 and "expected FORMAT=DIR" in flat(shape.output)
    untested = invoke("score", generations, "--no-tests", "--export", f"evalplus={tmp_path}")
    assert untested.exit_code == 2
    assert "--export needs the unit tests' verdicts: drop --no-tests" in flat(untested.output)
