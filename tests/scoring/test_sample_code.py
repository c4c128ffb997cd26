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

from prefjudge.records import Generation
from prefjudge.scoring.formats import SampleFormatWarning, read_generations
from prefjudge.scoring.verify.extract import code_of

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


@pytest.mark.shared_data
def test_humaneval_87_with_a_fenced_docstring_example_passes(shared_data: Path,
                                                             tmp_path: Path) -> None:
    brief = shared_data / EVALPERF / GROK
    tasks = shared_data / "benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
    if not (brief.exists() and tasks.exists()):
        pytest.skip(f"{brief} or {tasks} is absent")
    profiled = json.loads(brief.read_text())["eval"]["HumanEval/87"]["profiled"]
    fenced = [item["solution"] for item in profiled if "```python" in item["solution"]]
    assert fenced, "the EvalPerf file no longer holds the fenced-docstring solution"
    samples = write_jsonl(tmp_path / "grok-beta.jsonl",
                          [{"task_id": "HumanEval/87", "solution": fenced[0]}])
    out = tmp_path / "scores.jsonl"
    invoke("score", samples, "--tasks", tasks, "-o", out, "--workers", 1, ok=True)
    (record,) = rows(out)
    assert record["func"]["status"] == "pass", record["func"]
    assert record["response_is_code"] is True
