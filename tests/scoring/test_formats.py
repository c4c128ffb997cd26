"""Reading generator sample files (EvalPlus, BigCodeBench, SWE-IF) as generations."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from pj_files import write_jsonl

from prefjudge.io import InputIssue, read_records
from prefjudge.records import Generation, Task
from prefjudge.scoring.formats import (
    FORMATS,
    SampleFormatWarning,
    detect_format,
    model_from_path,
    read_generations,
)
from prefjudge.scoring.score import generation_keys
from prefjudge.scoring.taxonomy import load_taxonomy

EXPECTED_FORMATS = ("prefjudge generations", "EvalPlus", "BigCodeBench", "SWE-IF")


def read_quietly(path: Path, **kwargs: Any) -> tuple[list[tuple[int, Generation]],
                                                     list[InputIssue]]:
    """Read, failing the test on any warning (tests that expect one catch it themselves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_generations(path, **kwargs)


def fenced(code: str) -> str:
    return f"Here it is:\n\n```python\n{code}```\n"


# -- detect_format ------------------------------------------------------------------------


@pytest.mark.parametrize(("record", "expected"), [
    ({"task_id": "t", "model": "m", "response": "x"}, "prefjudge"),
    ({"task_id": "t", "response": "x"}, "prefjudge"),  # still prefjudge (then: model missing)
    ({"task_id": "t", "model": "m", "response": "x", "solution": "y"}, "prefjudge"),
    ({"task_id": "HumanEval/0", "solution": "def f(): pass"}, "evalplus"),
    ({"task_id": "Mbpp/2", "completion": "    return 1"}, "evalplus"),
    ({"task_id": "BigCodeBench/3", "solution": "x"}, "bigcodebench"),
    ({"task_id": "custom/3", "solution": "x", "raw_solution": "```x```"}, "bigcodebench"),
    ({"task_id": "BigCodeBench/3", "solution": "x", "full_response": "x", "if_info": {}},
     "swe-if"),
    ({"task_id": "t", "solution": "x", "full_response": "x", "if_info": {}, "edit_num": 1,
      "messages": []}, "swe-if-edit"),
    ({"task_id": "t", "code": "x"}, None),
    ({"task_id": "t", "response": "x", "solution": "y"}, None),  # ambiguous: no model
    ({}, None),
])
def test_detect_format_by_fields(record: dict[str, Any], expected: str | None) -> None:
    assert detect_format(record) == expected
    assert expected is None or expected in FORMATS


def test_detect_format_of_a_non_object_is_none() -> None:
    assert detect_format(["task_id", "solution"]) is None  # type: ignore[arg-type]


# -- model names --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "model"), [
    ("gpt-4o_0-instructions.jsonl", "gpt-4o_0-instructions"),
    ("model--bigcodebench-instruct--vllm-0-1-sanitized_calibrated.jsonl",
     "model--bigcodebench-instruct--vllm-0-1-sanitized_calibrated"),
    ("samples.jsonl.gz", "samples"),
    ("samples.JSONL.GZ", "samples"),
    ("Qwen2.5-7B.json", "Qwen2.5-7B"),
    ("noext", "noext"),
    ("a.b.jsonl", "a.b"),
    (".jsonl", ""),
])
def test_model_from_path_is_the_stem(name: str, model: str) -> None:
    assert model_from_path(Path("/some/dir") / name) == model


def test_model_from_argument_wins_over_file_name(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gpt-4o_0-instructions.jsonl",
                       [{"task_id": "HumanEval/0", "solution": "x = 1\n"}])
    (_, by_name), = read_quietly(path)[0]
    (_, by_argument), = read_quietly(path, model="openai/gpt-4o")[0]
    assert by_name.model == "gpt-4o_0-instructions"
    assert by_argument.model == "openai/gpt-4o"


def test_model_name_is_normalized_like_every_model_name(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "solution": "x"}])
    (_, gen), = read_quietly(path, model="cafe\u0301")[0]
    assert gen.model == "caf\u00e9"


def test_no_model_name_at_all_is_an_issue_on_each_sample_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / ".jsonl", [{"task_id": "HumanEval/0", "solution": "x"}])
    assert model_from_path(path) == ""
    records, issues = read_quietly(path)
    assert records == []
    assert [(i.line, i.field) for i in issues] == [(1, "model")]
    assert "--model" in issues[0].message
    records, issues = read_quietly(path, model="m")
    assert issues == [] and records[0][1].model == "m"


# -- EvalPlus -----------------------------------------------------------------------------


def test_evalplus_solutions_with_repeats_get_distinct_stable_ids(tmp_path: Path) -> None:
    rows = [
        {"task_id": "HumanEval/0", "solution": "def a():\n    return 0\n"},
        {"task_id": "HumanEval/1", "solution": "def b():\n    return 1\n"},
        {"task_id": "HumanEval/0", "solution": "def a():\n    return 2\n"},
        {"task_id": "HumanEval/0", "solution": "def a():\n    return 3\n"},
    ]
    path = write_jsonl(tmp_path / "codegen.jsonl", rows)
    records, issues = read_quietly(path, model="m")
    assert issues == []
    assert [line for line, _ in records] == [1, 2, 3, 4]
    gens = [gen for _, gen in records]
    assert [g.id for g in gens] == [
        "HumanEval/0::single::k0::s0",
        "HumanEval/1::single::k0::s0",
        "HumanEval/0::single::k0::s1",
        "HumanEval/0::single::k0::s2",
    ]
    assert [g.sample for g in gens] == [0, 0, 1, 2]
    assert [g.response for g in gens] == [row["solution"] for row in rows]
    assert {(g.task_id, g.model, g.protocol, g.k) for g in gens} == {
        ("HumanEval/0", "m", "single", 0), ("HumanEval/1", "m", "single", 0)}
    assert all(g.instructions == [] and g.turns is None and g.error is None for g in gens)
    assert all(g.model_dump()["source_format"] == "evalplus" for g in gens)
    again = [gen for _, gen in read_quietly(path, model="m")[0]]
    keys = generation_keys(gens)
    assert keys == generation_keys(again) and len(set(keys)) == len(keys)


def test_evalplus_completion_is_appended_to_the_task_prompt(tmp_path: Path) -> None:
    tasks = {
        "HumanEval/0": Task(task_id="HumanEval/0", prompt="def f(x):\n    \"\"\"Doc.\"\"\"\n"),
        "Mbpp/2": Task(task_id="Mbpp/2", prompt="Write f.", metadata={
            "raw_prompt": '"""\nWrite f.\n"""\n'}),
        "BigCodeBench/1": Task(task_id="BigCodeBench/1", prompt="Write a function.",
                               metadata={"complete_prompt": "import os\ndef task_func():\n"}),
    }
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    return x\n"},
        {"task_id": "Mbpp/2", "completion": "def f():\n    return 2\n"},
    ])
    records, issues = read_quietly(path, model="m", tasks=tasks)
    assert issues == []
    assert [gen.response for _, gen in records] == [
        "def f(x):\n    \"\"\"Doc.\"\"\"\n    return x\n",
        '"""\nWrite f.\n"""\ndef f():\n    return 2\n',
    ]
    bcb = write_jsonl(tmp_path / "bcb.jsonl",
                      [{"task_id": "BigCodeBench/1", "completion": "    pass\n"}])
    (_, gen), = read_quietly(bcb, model="m", tasks=tasks)[0]
    assert gen.response == "import os\ndef task_func():\n    pass\n"


def test_completion_without_tasks_is_scored_alone_and_said_once(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    return 0\n"},
        {"task_id": "HumanEval/1", "completion": "    return 1\n"},
        {"task_id": "HumanEval/2", "solution": "x = 2\n"},
    ])
    with pytest.warns(SampleFormatWarning) as caught:
        records, issues = read_generations(path, model="m")
    assert issues == []
    assert [gen.response for _, gen in records] == ["    return 0\n", "    return 1\n", "x = 2\n"]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert str(path) in message and "2 completion-style sample(s)" in message
    assert "--tasks" in message


def test_solution_wins_over_completion_as_in_evalplus(tmp_path: Path) -> None:
    tasks = {"HumanEval/0": Task(task_id="HumanEval/0", prompt="PROMPT\n")}
    path = write_jsonl(tmp_path / "s.jsonl",
                       [{"task_id": "HumanEval/0", "solution": "full\n", "completion": "tail\n"}])
    (_, gen), = read_quietly(path, model="m", tasks=tasks)[0]
    assert gen.response == "full\n"


def test_gzipped_samples_and_a_broken_line_are_read_like_any_input(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl.gz"
    text = (json.dumps({"task_id": "HumanEval/0", "solution": "x"}) + "\n{broken\n\n"
            + json.dumps({"task_id": "HumanEval/1", "solution": "y"}) + "\n")
    path.write_bytes(gzip.compress(text.encode()))
    records, issues = read_quietly(path)
    assert [(line, gen.model, gen.response) for line, gen in records] == [
        (1, "m", "x"), (4, "m", "y")]
    assert [(i.line, i.field) for i in issues] == [(2, "")]
    assert "not valid JSON" in issues[0].message


@pytest.mark.parametrize(("row", "field", "words"), [
    ({"solution": "x"}, "task_id", "missing"),
    ({"task_id": 7, "solution": "x"}, "task_id", "expected a string, got int"),
    ({"task_id": "", "solution": "x"}, "task_id", "empty"),
    ({"task_id": "HumanEval/0", "solution": ["x"]}, "solution", "expected a string, got list"),
    ({"task_id": "HumanEval/0", "completion": None}, "completion", "expected a string"),
])
def test_bad_sample_fields_are_located(tmp_path: Path, row: dict[str, Any], field: str,
                                       words: str) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "HumanEval/9", "solution": "ok"}, row])
    records, issues = read_quietly(path, model="m")
    assert [line for line, _ in records] == [1]
    assert [(i.path, i.line, i.field) for i in issues] == [(str(path), 2, field)]
    assert words in issues[0].message and "evalplus format" in issues[0].message


# -- BigCodeBench -------------------------------------------------------------------------


def test_bigcodebench_raw_solution_is_scored_when_present(tmp_path: Path) -> None:
    raw = fenced("import os\n\ndef task_func():\n    return os.sep\n")
    name = "model--bigcodebench-instruct--vllm-0-1-sanitized_calibrated.jsonl"
    path = write_jsonl(tmp_path / name, [
        {"task_id": "BigCodeBench/0", "solution": "import os\n", "raw_solution": raw},
        {"task_id": "BigCodeBench/1", "solution": "x = 1\n"},
        {"task_id": "BigCodeBench/0", "solution": "y = 2\n", "raw_solution": None},
    ])
    records, issues = read_quietly(path)
    assert issues == []
    gens = [gen for _, gen in records]
    assert [g.response for g in gens] == [raw, "x = 1\n", "y = 2\n"]
    assert {g.model for g in gens} == {
        "model--bigcodebench-instruct--vllm-0-1-sanitized_calibrated"}
    assert [g.id for g in gens] == ["BigCodeBench/0::single::k0::s0",
                                    "BigCodeBench/1::single::k0::s0",
                                    "BigCodeBench/0::single::k0::s1"]
    assert {g.model_dump()["source_format"] for g in gens} == {"bigcodebench"}


# -- SWE-IF -------------------------------------------------------------------------------


def swe_if_row(task_id: str, response: str, constraints: list[dict[str, Any]],
               **extra: Any) -> dict[str, Any]:
    info = {"prompt": "Also, ...", "constraints": constraints} if constraints else {}
    return {"task_id": task_id, "solution": "extracted", "full_response": response,
            "original_instance": {"task_id": task_id, "instruct_prompt": "Write it."},
            "if_info": info, **extra}


STYLE_3 = {"index": "style_3", "parameters": {"line_length": 88}}
DOC_1 = {"index": "doc_1", "parameters": {}}
LOGIC_1 = {"index": "logic_1", "parameters": {}}


def test_swe_if_generation_maps_response_and_constraints(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gpt-4o_2-instructions.jsonl", [
        swe_if_row("BigCodeBench/0", fenced("x = 1\n"), [STYLE_3, DOC_1]),
        swe_if_row("BigCodeBench/1", fenced("y = 1\n"), []),
    ])
    records, issues = read_quietly(path)
    assert issues == []
    first, plain = (gen for _, gen in records)
    assert first.model == "gpt-4o_2-instructions"
    assert first.response == fenced("x = 1\n")
    assert [(ref.id, ref.params) for ref in first.instructions] == [
        ("style_3", {"line_length": 88}), ("doc_1", {})]
    assert (first.protocol, first.k, first.id) == ("single", 2, "BigCodeBench/0::single::k2::s0")
    assert (plain.k, plain.instructions, plain.id) == (0, [], "BigCodeBench/1::single::k0::s0")
    dumped = first.model_dump()
    assert dumped["source_format"] == "swe-if"
    assert "original_instance" not in dumped and "if_info" not in dumped
    taxonomy = load_taxonomy()
    assert [taxonomy.problems(ref) for ref in first.instructions] == [[], []]


def test_swe_if_failed_generation_keeps_the_error_not_the_message_as_code(
        tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m_1-instructions.jsonl", [
        swe_if_row("BigCodeBench/0", "Failed after 3 attempts. Last error: 429", [STYLE_3],
                   status="failed_after_retries"),
        {"task_id": "BigCodeBench/1", "solution": "", "full_response": "",
         "original_instance": {}, "if_info": {}, "status": "processing_error",
         "processing_error": "Unexpected error during processing: KeyError"},
    ])
    records, issues = read_quietly(path)
    assert issues == []
    retried, broken = (gen for _, gen in records)
    assert retried.response == "" and retried.k == 1
    assert retried.error == "failed_after_retries: Failed after 3 attempts. Last error: 429"
    assert broken.response == "" and broken.k == 0
    assert broken.error == "processing_error: Unexpected error during processing: KeyError"


@pytest.mark.parametrize(("info", "field"), [
    ([1], "if_info"),
    ({"constraints": {"index": "style_3"}}, "if_info.constraints"),
    ({"constraints": [STYLE_3, "doc_1"]}, "if_info.constraints.1"),
    ({"constraints": [{"index": 3, "parameters": {}}]}, "if_info.constraints.0.index"),
    ({"constraints": [{"index": "style_3", "parameters": [88]}]},
     "if_info.constraints.0.parameters"),
])
def test_bad_swe_if_constraints_are_located(tmp_path: Path, info: Any, field: str) -> None:
    row = {**swe_if_row("BigCodeBench/0", "x", []), "if_info": info}
    path = write_jsonl(tmp_path / "m.jsonl", [row])
    records, issues = read_quietly(path)
    assert records == []
    assert [(i.line, i.field) for i in issues] == [(1, field)]
    assert "swe-if format" in issues[0].message


def edit_row(task_id: str, constraints: list[dict[str, Any]], replies: list[str],
             **extra: Any) -> dict[str, Any]:
    """An editing record as SWE-IF writes it: Gemini-style messages, one pair per turn."""
    prompts = ["Write it.", *(f"Now apply {c['index']}." for c in constraints)]
    messages = []
    for prompt, reply in zip(prompts, replies, strict=True):
        messages += [{"role": "user", "parts": [{"text": prompt}]},
                     {"role": "model", "parts": [{"text": reply}]}]
    return {"task_id": task_id, "solution": "code", "full_response": replies[-1],
            "original_instance": {}, "messages": messages,
            "current_edit_prompt": prompts[-1], "edit_num": len(constraints),
            "if_info": {"prompts": prompts[1:], "constraints": constraints}, **extra}


def test_swe_if_editing_becomes_multi_turn_with_turns_from_messages(tmp_path: Path) -> None:
    replies = [fenced("a = 1\n"), fenced("a = 2\n"), fenced("a = 3\n")]
    path = write_jsonl(tmp_path / "m_2-instructions.jsonl",
                       [edit_row("BigCodeBench/5", [DOC_1, LOGIC_1], replies)])
    records, issues = read_quietly(path)
    assert issues == []
    (_, gen), = records
    assert (gen.protocol, gen.k, gen.id) == ("multi", 2, "BigCodeBench/5::multi::k2::s0")
    assert gen.response == replies[-1]
    assert [ref.id for ref in gen.instructions] == ["doc_1", "logic_1"]
    assert gen.turns is not None
    assert [(t.index, t.prompt, t.response) for t in gen.turns] == [
        (1, "Write it.", replies[0]),
        (2, "Now apply doc_1.", replies[1]),
        (3, "Now apply logic_1.", replies[2]),
    ]
    assert [t.instruction and t.instruction.id for t in gen.turns] == [None, "doc_1", "logic_1"]
    assert gen.model_dump()["source_format"] == "swe-if-edit"


def test_openai_style_messages_map_too(tmp_path: Path) -> None:
    row = edit_row("t", [DOC_1], ["one", "two"])
    row["messages"] = [{"role": m["role"].replace("model", "assistant"),
                        "content": m["parts"][0]["text"]} for m in row["messages"]]
    (_, gen), = read_quietly(write_jsonl(tmp_path / "m.jsonl", [row]))[0]
    assert gen.turns is not None and [t.response for t in gen.turns] == ["one", "two"]


@pytest.mark.parametrize("spoil", [
    lambda row: row["messages"].pop(),  # one message short
    lambda row: row.update(full_response="something else"),  # last reply is not the response
    lambda row: row["messages"][0].update(role="model"),  # does not start with the user
    lambda row: row["messages"][1].update(parts=[{"text": 3}]),  # no text
    lambda row: row.update(messages="not a list"),
])
def test_editing_messages_that_do_not_map_give_no_turns(tmp_path: Path, spoil: Any) -> None:
    row = edit_row("t", [DOC_1], ["one", "two"])
    spoil(row)
    records, issues = read_quietly(write_jsonl(tmp_path / "m.jsonl", [row]))
    assert issues == []
    (_, gen), = records
    assert gen.turns is None and gen.protocol == "multi" and gen.k == 1


def test_editing_constraints_must_match_edit_num(tmp_path: Path) -> None:
    row = edit_row("t", [DOC_1, LOGIC_1], ["a", "b", "c"], edit_num=3)
    records, issues = read_quietly(write_jsonl(tmp_path / "m.jsonl", [row]))
    assert records == []
    assert [(i.line, i.field) for i in issues] == [(1, "if_info.constraints")]
    assert "2 constraint(s) but edit_num is 3" in issues[0].message


# -- what cannot be told, and mixed files -------------------------------------------------


def test_a_line_in_no_known_format_names_file_line_field_and_the_formats(
        tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "odd.jsonl", [{"task_id": "t", "code": "x"}])
    records, issues = read_quietly(path, model="m")
    assert records == []
    assert [(i.path, i.line, i.field) for i in issues] == [(str(path), 1, "response")]
    text = str(issues[0])
    assert text.startswith(f"{path}:1: field 'response': cannot tell the format")
    assert all(name in text for name in EXPECTED_FORMATS)
    assert "['code', 'task_id']" in text


def test_response_and_solution_without_model_is_ambiguous(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0", "solution": "x"},
        {"task_id": "HumanEval/1", "response": "y", "solution": "y"},
    ])
    records, issues = read_quietly(path, model="m")
    assert [line for line, _ in records] == [1]
    assert [(i.line, i.field) for i in issues] == [(2, "response")]
    assert "'solution'" in issues[0].message and "no 'model'" in issues[0].message


def test_lines_of_two_formats_in_one_file_are_issues_after_the_first(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [
        {"task_id": "HumanEval/0", "solution": "x"},
        {"task_id": "HumanEval/0", "model": "m", "response": "y"},
        {"task_id": "BigCodeBench/0", "solution": "z"},
        {"task_id": "HumanEval/1", "solution": "w"},
    ])
    records, issues = read_quietly(path, model="m")
    assert [line for line, _ in records] == [1, 4]
    assert [(i.line, i.field) for i in issues] == [(2, "response"), (3, "task_id")]
    assert "prefjudge format" in issues[0].message and "line 1 is in the evalplus" in \
        issues[0].message
    assert "bigcodebench format" in issues[1].message
    assert all("one file holds one format" in i.message for i in issues)


def test_the_format_comes_from_the_first_recognised_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0"},
        {"task_id": "HumanEval/1", "solution": "x"},
    ])
    records, issues = read_quietly(path, model="m")
    assert [line for line, _ in records] == [2]
    assert [(i.line, i.field) for i in issues] == [(1, "solution")]
    assert "evalplus format (line 2)" in issues[0].message
    swe = write_jsonl(tmp_path / "w.jsonl", [swe_if_row("t", "x", []), {"task_id": "t", "x": 1}])
    records, issues = read_quietly(swe)
    assert [(i.line, i.field) for i in issues] == [(2, "full_response")]


# -- prefjudge records: unchanged ---------------------------------------------------------


def test_prefjudge_sample_reads_exactly_as_read_records(project_root: Path) -> None:
    path = project_root / "datasets/sample/generations.jsonl"
    expected = read_records(path, Generation, collect=True)
    got = read_quietly(path)
    assert got == expected and len(got[0]) > 6 and got[1] == []
    assert [gen.model_dump_json() for _, gen in got[0]] == [
        gen.model_dump_json() for _, gen in expected[0]]


def test_prefjudge_problems_are_reported_as_before(tmp_path: Path) -> None:
    good = {"task_id": "t", "model": "m", "response": "x", "protocol": "single", "k": 0}
    path = write_jsonl(tmp_path / "g.jsonl", [
        good,
        {"task_id": "t", "model": "m"},  # no response: still read as prefjudge
        {**good, "k": -1},
        {**good, "instructions": [{"id": 3}]},
    ])
    with path.open("a") as handle:
        handle.write("[1]\n")
    expected = read_records(path, Generation, collect=True)
    got = read_quietly(path)
    assert got == expected
    assert [i.line for i in got[1]] == [2, 3, 4, 5]
    assert any(i.line == 2 and i.field == "response" for i in got[1])


def test_model_argument_fills_a_missing_model_and_refuses_another(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"task_id": "t", "response": "x"},
        {"task_id": "t", "model": "m", "response": "y"},
        {"task_id": "t", "model": "other", "response": "z"},
    ])
    records, issues = read_quietly(path, model="m")
    assert [(line, gen.model) for line, gen in records] == [(1, "m"), (2, "m")]
    assert [(i.line, i.field) for i in issues] == [(3, "model")]
    assert "'other'" in issues[0].message and "'m'" in issues[0].message
    records, issues = read_quietly(path)
    assert [line for line, _ in records] == [2, 3]
    assert [(i.line, i.field) for i in issues] == [(1, "model")]
    nfd = write_jsonl(tmp_path / "nfd.jsonl",
                      [{"task_id": "t", "model": "cafe\u0301", "response": "x"}])
    records, issues = read_quietly(nfd, model="caf\u00e9")
    assert issues == [] and records[0][1].model == "caf\u00e9"


# -- real data: EvalPerf solutions as EvalPlus samples ------------------------------------


EVALPERF = "generations/evalperf"


def evalperf_rows(brief: Path) -> list[dict[str, str]]:
    data = json.loads(brief.read_text())
    return [{"task_id": task_id, "solution": item["solution"]}
            for task_id, entry in data["eval"].items() for item in entry["profiled"]]


def evalperf_files(shared_data: Path) -> list[Path]:
    files = sorted((shared_data / EVALPERF).glob("*_evalperf_results.brief.json"))
    if not files:
        pytest.skip(f"no EvalPerf results in {shared_data / EVALPERF}")
    return files


@pytest.mark.shared_data
def test_evalperf_solutions_read_back_as_valid_generations(shared_data: Path,
                                                           tmp_path: Path) -> None:
    brief = shared_data / EVALPERF / "gpt-4o-2024-08-06_openai_temp_1.0_evalperf_results.brief.json"
    if not brief.exists():
        pytest.skip(f"{brief} is absent")
    rows = evalperf_rows(brief)
    stem = brief.name.removesuffix(".json")  # what a user would name the samples file
    path = write_jsonl(tmp_path / f"{stem}.jsonl", rows)
    records, issues = read_quietly(path)
    assert issues == []
    assert [line for line, _ in records] == list(range(1, len(rows) + 1))
    gens = [gen for _, gen in records]
    assert [(g.task_id, g.response) for g in gens] == [
        (row["task_id"], row["solution"]) for row in rows]
    assert {g.model for g in gens} == {stem}
    assert all(Generation.model_validate(g.model_dump()) == g for g in gens)
    per_task: dict[str, list[int]] = {}
    for g in gens:
        per_task.setdefault(g.task_id, []).append(g.sample)
        assert g.id == f"{g.task_id}::single::k0::s{g.sample}"
    assert all(samples == list(range(len(samples))) for samples in per_task.values())
    assert len(per_task) > 100 and max(len(s) for s in per_task.values()) > 1
    assert len({g.id for g in gens}) == len(gens)


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_evalperf_model_reads_back_in_one_file(shared_data: Path, tmp_path: Path) -> None:
    files = evalperf_files(shared_data)
    rows = [row for brief in files for row in evalperf_rows(brief)]
    path = write_jsonl(tmp_path / "all.jsonl", rows)
    records, issues = read_quietly(path, model="evalperf-all")
    assert issues == []
    assert len(records) == len(rows) > 50_000
    ids = [gen.id for _, gen in records]
    assert len(set(ids)) == len(ids)
    assert all(gen.response == row["solution"]
               for (_, gen), row in zip(records, rows, strict=True))


@pytest.mark.shared_data
def test_evalperf_completions_take_the_evalplus_prompt(shared_data: Path, tmp_path: Path) -> None:
    from prefjudge.scoring.tasks import load_tasks

    bench = shared_data / "benchmarks/evalplus"
    sources = [bench / "HumanEvalPlus-v0.1.10.jsonl.gz", bench / "MbppPlus-v0.2.0.jsonl.gz"]
    if not all(source.exists() for source in sources):
        pytest.skip(f"EvalPlus task files absent from {bench}")
    tasks = {tid: task for source in sources for tid, task in load_tasks(source).items()}
    raw_prompts = {}  # what EvalPlus concatenates: the release file's own 'prompt' field
    for source in sources:
        with gzip.open(source, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                raw_prompts[record["task_id"]] = record["prompt"]
    brief = evalperf_files(shared_data)[0]
    rows = [{"task_id": row["task_id"], "completion": row["solution"]}
            for row in evalperf_rows(brief)]
    path = write_jsonl(tmp_path / "completions.jsonl", rows)
    records, issues = read_quietly(path, model="m", tasks=tasks)
    assert issues == []
    assert {row["task_id"].split("/")[0] for row in rows} == {"HumanEval", "Mbpp"}
    for (_, gen), row in zip(records, rows, strict=True):
        assert gen.response == raw_prompts[row["task_id"]] + row["completion"]
