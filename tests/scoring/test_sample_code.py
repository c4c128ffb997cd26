"""A sample file's ``solution`` is code, never Markdown to find code in (issue 30).

HumanEval/87, grok-beta's EvalPerf solution with a ```` ```python ```` example in its
docstring: ``score`` used to extract the fenced example and report "does not compile".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import invoke, rows
from pj_files import write_jsonl

from prefjudge.judge.facts.correctness import response_code
from prefjudge.judge.facts.security import security_facts
from prefjudge.judge.pairs.join import join_generations
from prefjudge.records import Generation, InstructionRef
from prefjudge.scoring.formats import SampleFormatWarning, read_generations
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.extract import code_of
from prefjudge.scoring.verify.process import VerifyProcess

EVALPERF = "generations/evalperf"
GROK = "grok-beta_openai_temp_1.0_evalperf_results.brief.json"
FENCED_DOCSTRING = '''def f():
    """Say one.

    ```python
    f()  # 1
    ```
    """
    return 1
'''


def test_a_solution_is_code_and_a_raw_solution_is_markdown(tmp_path: Path) -> None:
    evalplus = write_jsonl(tmp_path / "m.jsonl", [
        {"task_id": "HumanEval/0", "solution": FENCED_DOCSTRING},
        {"task_id": "HumanEval/0", "completion": FENCED_DOCSTRING},
    ])
    bigcodebench = write_jsonl(tmp_path / "b.jsonl", [
        {"task_id": "BigCodeBench/0", "solution": FENCED_DOCSTRING},
        {"task_id": "BigCodeBench/0", "solution": "x = 1\n",
         "raw_solution": "Here:\n```python\nx = 2\n```\n"},
    ])
    with pytest.warns(SampleFormatWarning):  # a completion without its task's prompt
        read = [[gen for _, gen in read_generations(path, model="m")[0]]
                for path in (evalplus, bigcodebench)]
    flags = [gen.response_is_code for records in read for gen in records]
    assert flags == [True, True, True, False]
    assert [code_of(gen.response, is_code=gen.response_is_code)
            for gen in read[0]] == [FENCED_DOCSTRING, FENCED_DOCSTRING]
    assert code_of(read[1][1].response, is_code=read[1][1].response_is_code) == "x = 2\n"
    # and a Markdown reply (prefjudge's own records) is still searched for its code
    reply = Generation(task_id="t", model="m", response="Sure:\n```python\nx = 3\n```\nDone.")
    assert reply.response_is_code is False
    assert code_of(reply.response, is_code=reply.response_is_code) == "x = 3\n"


def test_the_flag_is_written_only_when_given() -> None:
    assert "response_is_code" not in Generation(task_id="t", model="m",
                                                 response="x").model_dump(mode="json")
    given = Generation(task_id="t", model="m", response="x", response_is_code=True)
    assert given.model_dump(mode="json")["response_is_code"] is True
    with pytest.raises(ValueError, match="response_is_code"):
        Generation(task_id="t", model="m", response="x", response_is_code="yes")


def grok_87(shared_data: Path) -> tuple[str, Path]:
    """grok-beta's HumanEval/87 solution with a fenced docstring example, and HumanEval+."""
    brief = shared_data / EVALPERF / GROK
    tasks = shared_data / "benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
    if not (brief.exists() and tasks.exists()):
        pytest.skip(f"{brief} or {tasks} is absent")
    profiled = json.loads(brief.read_text())["eval"]["HumanEval/87"]["profiled"]
    fenced = [item["solution"] for item in profiled if "```python" in item["solution"]]
    assert fenced, "the EvalPerf file no longer holds the fenced-docstring solution"
    return fenced[0], tasks


@pytest.mark.shared_data
def test_humaneval_87_with_a_fenced_docstring_example_passes(shared_data: Path,
                                                             tmp_path: Path) -> None:
    fenced, tasks = grok_87(shared_data)
    samples = write_jsonl(tmp_path / "grok-beta.jsonl",
                          [{"task_id": "HumanEval/87", "solution": fenced}])
    out = tmp_path / "scores.jsonl"
    invoke("score", samples, "--tasks", tasks, "-o", out, "--workers", 1, ok=True)
    (record,) = rows(out)
    assert record["func"]["status"] == "pass", record["func"]
    assert record["response_is_code"] is True


# -- the same rule everywhere a sample's code is read: instruction checks and the judge --------

PYFLAKES = [InstructionRef(id="logic_1")]  # the docstring's example alone does not parse
WRONG_87 = "def get_row(lst, x):\n    return []\n"


def test_instruction_checks_read_a_solution_whole() -> None:
    """A solution's own code is checked, not the example fenced in its docstring."""
    results = verify_batch([(FENCED_DOCSTRING, PYFLAKES, True), (FENCED_DOCSTRING, PYFLAKES),
                            (FENCED_DOCSTRING, PYFLAKES, False)], workers=1)
    assert [row[0].status for row in results] == ["pass", "fail", "fail"]
    assert results[1][0].reason.startswith("does not parse"), results[1][0].reason
    with VerifyProcess(workers=1) as process:  # the same through the verification process
        sent = process.submit([(FENCED_DOCSTRING, PYFLAKES, True), (FENCED_DOCSTRING, PYFLAKES)])
        assert [row[0].status for row in sent.result()] == ["pass", "fail"]


def test_score_checks_code_given_whole_as_code(tmp_path: Path) -> None:
    """A record marked ``response_is_code`` (as ``score`` writes a sample back) with checks."""
    given = write_jsonl(tmp_path / "m.jsonl", [
        {"task_id": "HumanEval/0", "model": "m", "response": FENCED_DOCSTRING,
         "instructions": [{"id": "logic_1"}], "response_is_code": is_code}
        for is_code in (True, False)
    ])
    out = tmp_path / "scores.jsonl"
    invoke("score", given, "--no-tests", "-o", out, "--workers", 1, ok=True)
    assert [[result["status"] for result in record["instruction_results"]]
            for record in rows(out)] == [["pass"], ["fail"]]


def test_pairs_joined_from_sample_files_keep_their_code_whole(tmp_path: Path) -> None:
    side_a = write_jsonl(tmp_path / "a.jsonl", [{"task_id": "HumanEval/0",
                                                 "solution": FENCED_DOCSTRING}])
    side_b = write_jsonl(tmp_path / "b.jsonl", [{"task_id": "HumanEval/0", "model": "b",
                                                 "response": "Here:\n```python\nx = 2\n```\n"}])
    read = [(str(path), read_generations(path, model=path.stem)[0]) for path in (side_a, side_b)]
    (pair,), _, _, _ = join_generations(read[0], read[1], prompts={"HumanEval/0": "Say one."})
    assert (pair.response_a_is_code, pair.response_b_is_code) == (True, False)
    assert response_code(pair, "A") == FENCED_DOCSTRING
    assert response_code(pair, "B") == "x = 2\n"
    dumped = pair.model_dump(mode="json")
    assert dumped["response_a_is_code"] is True and "response_b_is_code" not in dumped
    (security,) = security_facts([pair])  # bandit reads the code, not the example
    assert security.detail["status_a"] != "error", security.detail


@pytest.mark.shared_data
def test_judge_runs_a_solution_with_a_fenced_docstring_example(shared_data: Path,
                                                              tmp_path: Path) -> None:
    """HumanEval/87 through ``judge``'s evidence: the right solution beats a wrong one."""
    fenced, tasks = grok_87(shared_data)
    side_a = write_jsonl(tmp_path / "grok.jsonl", [{"task_id": "HumanEval/87", "solution": fenced}])
    side_b = write_jsonl(tmp_path / "wrong.jsonl",
                         [{"task_id": "HumanEval/87", "solution": WRONG_87}])
    out = tmp_path / "verdicts.jsonl"
    invoke("judge", side_a, side_b, "--tasks", tasks, "--tests", tasks, "--method", "evidence",
           "--criterion", "correctness", "-o", out, ok=True)
    (verdict,) = rows(out)
    assert verdict["winner"] == "model_a", verdict
