"""``prefjudge score`` on generator sample files (EvalPlus, SWE-IF) through click's CliRunner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from click.testing import Result
from pj_cli import WIDE, invoke, rows
from pj_files import write_jsonl


def score(*args: str | Path) -> Result:
    return invoke("score", *args, env=WIDE)


def fenced(code: str) -> str:
    return f"Sure, here is the code:\n\n```python\n{code}```\n"


CLEAN = "def add(a: int, b: int) -> int:\n    return a + b\n"
LONG_COMMENT = "# a comment that makes this line longer than seventy-nine characters"
SLOPPY = f"import os\n\n\ndef add(a, b):\n    return a + b  {LONG_COMMENT}\n"


def test_evalplus_samples_are_scored_under_the_given_model(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "HumanEval/0", "solution": CLEAN},
        {"task_id": "HumanEval/1", "solution": SLOPPY},
        {"task_id": "HumanEval/0", "solution": SLOPPY},
    ])
    out = tmp_path / "scores.jsonl"
    result = score(samples, "--model", "org/coder-7b", "--no-tests", "-o", out)
    assert result.exit_code == 0, result.output
    records = rows(out)
    assert [r["id"] for r in records] == [
        "HumanEval/0::single::k0::s0", "HumanEval/1::single::k0::s0",
        "HumanEval/0::single::k0::s1"]
    assert {r["model"] for r in records} == {"org/coder-7b"}
    assert [r["response"] for r in records] == [CLEAN, SLOPPY, SLOPPY]
    assert all(r["instruction_results"] == [] and r["func"] is None for r in records)
    assert all(r["protocol"] == "single" and r["k"] == 0 for r in records)
    summary = pd.read_csv(out.with_name("scores.summary.csv"))
    assert summary["model"].tolist() == ["org/coder-7b"]
    assert summary["n"].tolist() == [3]

    again = score(samples, "--model", "org/coder-7b", "--no-tests", "-o", out)
    assert again.exit_code == 0, again.output
    assert "3 already scored, 0 to go" in " ".join(again.output.split())
    assert len(rows(out)) == 3


def test_model_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "coder-7b_temp_0.8.jsonl",
                          [{"task_id": "Mbpp/2", "solution": CLEAN}])
    out = tmp_path / "scores.jsonl"
    result = score(samples, "--no-tests", "-o", out)
    assert result.exit_code == 0, result.output
    assert [r["model"] for r in rows(out)] == ["coder-7b_temp_0.8"]


def swe_if(task_id: str, response: str, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    return {"task_id": task_id, "solution": "ignored", "full_response": response,
            "original_instance": {"task_id": task_id},
            "if_info": {"prompt": "Also, ...", "constraints": constraints}}


CONSTRAINTS = [
    {"index": "doc_1", "parameters": {}},
    {"index": "logic_1", "parameters": {}},
    {"index": "style_3", "parameters": {"line_length": 79}},
]


def test_swe_if_generations_have_their_constraints_checked(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "gpt-4o_3-instructions.jsonl", [
        swe_if("BigCodeBench/1", fenced(CLEAN), CONSTRAINTS),
        swe_if("BigCodeBench/2", fenced(SLOPPY), CONSTRAINTS),
        swe_if("BigCodeBench/3", fenced(CLEAN), CONSTRAINTS[2:]),
    ])
    out = tmp_path / "scores.jsonl"
    result = score(samples, "--model", "gpt-4o", "--no-tests", "-o", out)
    assert result.exit_code == 0, result.output
    clean, sloppy, short = rows(out)
    assert {r["model"] for r in (clean, sloppy, short)} == {"gpt-4o"}
    assert [r["id"] for r in (clean, sloppy, short)] == [
        "BigCodeBench/1::single::k3::s0", "BigCodeBench/2::single::k3::s0",
        "BigCodeBench/3::single::k1::s0"]
    assert clean["response"] == fenced(CLEAN)
    assert [(c["id"], c["status"]) for c in clean["instruction_results"]] == [
        ("doc_1", "pass"), ("logic_1", "pass"), ("style_3", "pass")]
    assert [(c["id"], c["status"]) for c in sloppy["instruction_results"]] == [
        ("doc_1", "fail"), ("logic_1", "fail"), ("style_3", "fail")]
    assert [(c["id"], c["status"]) for c in short["instruction_results"]] == [("style_3", "pass")]
    assert (clean["if_task"], sloppy["if_task"]) == (True, False)
    assert (clean["if_instruction"], sloppy["if_instruction"]) == (1.0, 0.0)
    assert [r["k"] for r in (clean, sloppy, short)] == [3, 3, 1]
    assert clean["instructions"][2] == {"id": "style_3", "params": {"line_length": 79}}
    assert "original_instance" not in clean


def test_swe_if_editing_files_get_per_turn_checks(tmp_path: Path) -> None:
    plain = "import os\n\n\ndef add(a, b):\n    return a + b\n"
    annotated = "import os\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n"
    replies = [fenced(plain), fenced(annotated), fenced(plain.replace("import os\n\n\n", ""))]
    prompts = ["Write add.", "Annotate it.", "Make it pyflakes-clean."]
    messages = []
    for prompt, reply in zip(prompts, replies, strict=True):
        messages += [{"role": "user", "parts": [{"text": prompt}]},
                     {"role": "model", "parts": [{"text": reply}]}]
    edit = {"task_id": "BigCodeBench/7", "solution": "ignored", "full_response": replies[-1],
            "original_instance": {}, "messages": messages, "current_edit_prompt": prompts[-1],
            "edit_num": 2, "if_info": {"prompts": prompts[1:], "constraints": CONSTRAINTS[:2]}}
    samples = write_jsonl(tmp_path / "gpt-4o_2-instructions.jsonl", [edit])
    out = tmp_path / "scores.jsonl"
    result = score(samples, "--model", "gpt-4o", "--no-tests", "-o", out)
    assert result.exit_code == 0, result.output
    (record,) = rows(out)
    assert (record["protocol"], record["k"], record["id"]) == (
        "multi", 2, "BigCodeBench/7::multi::k2::s0")
    statuses = [[(c["id"], c["status"]) for c in turn] for turn in record["turn_results"]]
    assert statuses == [[], [("doc_1", "pass")], [("doc_1", "fail"), ("logic_1", "pass")]]
    assert [c["status"] for c in record["instruction_results"]] == ["fail", "pass"]


def test_a_file_mixing_formats_is_refused_with_file_line_and_field(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "mixed.jsonl", [
        {"task_id": "HumanEval/0", "solution": CLEAN},
        {"task_id": "HumanEval/1", "model": "m", "response": CLEAN},
    ])
    out = tmp_path / "scores.jsonl"
    result = score(samples, "--model", "m", "--no-tests", "-o", out)
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert f"{samples}:2: field 'response':" in text and "one file holds one format" in text
    assert not out.exists() or not out.read_text()


def test_zygote_and_fresh_process_runs_score_alike_and_say_which_ran(tmp_path: Path) -> None:
    check = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    write_jsonl(tmp_path / "tasks.jsonl", [
        {"task_id": f"T/{n}", "prompt": "add", "entry_point": "add", "test_format": "humaneval",
         "tests": check} for n in (0, 1)])
    samples = write_jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "T/0", "solution": CLEAN},
        {"task_id": "T/1", "solution": CLEAN.replace("a + b", "a - b")},
    ])
    outcomes = {}
    for flag in ("--zygote", "--no-zygote"):
        out = tmp_path / f"scores{flag}.jsonl"
        result = score(samples, "--model", "m", flag, "-o", out)
        assert result.exit_code == 0, result.output
        records = rows(out)
        outcomes[flag] = [(r["func"]["status"], r["func"]["detail"]) for r in records]
        sandbox = {r["meta"]["sandbox"] for r in records}
        assert len(sandbox) == 1
        said = "runs forked from zygotes" if flag == "--zygote" else "a fresh process per run"
        assert said in sandbox.pop()
    assert outcomes["--zygote"] == outcomes["--no-zygote"]
    assert [status for status, _ in outcomes["--zygote"]] == ["pass", "fail"]
