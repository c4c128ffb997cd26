"""Benchmark loaders: format detection, conversion to Task, and located input errors."""

from __future__ import annotations

import pytest
from pj_files import write_jsonl

from prefjudge.io import InputError
from prefjudge.records import Task
from prefjudge.scoring.tasks import detect_format, load_tasks, missing_libraries, parse_libs

BCB = {
    "task_id": "BigCodeBench/0",
    "complete_prompt": 'import math\ndef task_func(x):\n    """Doc."""\n',
    "instruct_prompt": "Write task_func.",
    "canonical_solution": "    return math.sqrt(x)\n",
    "code_prompt": "import math\ndef task_func(x):\n",
    "test": "import unittest\nclass TestCases(unittest.TestCase):\n    pass\n",
    "entry_point": "task_func",
    "doc_struct": "{}",
    "libs": "['math']",
}
HUMANEVAL = {
    "task_id": "HumanEval/0",
    "prompt": 'def f(x):\n    """Double."""\n',
    "entry_point": "f",
    "canonical_solution": "    return 2 * x\n",
    "test": "def check(candidate):\n    assert candidate(1) == 2\n",
}
HUMANEVAL_PLUS = {
    **HUMANEVAL,
    "contract": "",
    "base_input": [[1]],
    "plus_input": [[2], [3]],
    "atol": 0,
}
MBPP_PLUS = {
    "task_id": "Mbpp/2",
    "prompt": '"""\nWrite a function f.\nassert f(1) == 2\n"""\n',
    "entry_point": "f",
    "canonical_solution": "\ndef f(x):\n    return 2 * x\n",
    "base_input": [[1]],
    "plus_input": {},
    "atol": 0,
    "contract": "",
    "assertion": "\nassert f(1) == 2\n",
}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (BCB, "bigcodebench"),
        (HUMANEVAL, "humaneval"),
        (HUMANEVAL_PLUS, "humanevalplus"),
        (MBPP_PLUS, "mbppplus"),
        ({"task_id": "x", "test_format": "stdio"}, "prefjudge"),
        ({"foo": 1}, None),
    ],
)
def test_detect_format_by_fields(record, expected):
    assert detect_format(record) == expected


def test_bigcodebench_record(tmp_path):
    # The file name says HumanEval: detection must not care.
    (task,) = load_tasks(write_jsonl(tmp_path / "HumanEval.jsonl.gz", [BCB], gz=True)).values()
    assert task.test_format == "bigcodebench" and task.source == "bigcodebench"
    assert task.prompt == "Write task_func."
    assert task.canonical_solution == BCB["complete_prompt"] + BCB["canonical_solution"]
    assert task.tests == BCB["test"] and task.libs == ["math"]
    assert task.metadata["code_prompt"] == BCB["code_prompt"]


def test_humaneval_and_evalplus_records(tmp_path):
    he = load_tasks(write_jsonl(tmp_path / "a.jsonl", [HUMANEVAL]))["HumanEval/0"]
    assert he.test_format == "humaneval" and he.tests == HUMANEVAL["test"]
    assert he.canonical_solution == HUMANEVAL["prompt"] + HUMANEVAL["canonical_solution"]
    hep = load_tasks(write_jsonl(tmp_path / "b.jsonl", [HUMANEVAL_PLUS]))["HumanEval/0"]
    assert hep.test_format == "evalplus" and hep.source == "humanevalplus"
    assert hep.base_inputs == [[1]] and hep.plus_inputs == [[2], [3]]
    assert hep.metadata["evalplus_dataset"] == "humaneval"
    mbpp = load_tasks(write_jsonl(tmp_path / "c.jsonl", [MBPP_PLUS]))["Mbpp/2"]
    assert mbpp.source == "mbppplus" and mbpp.metadata["evalplus_dataset"] == "mbpp"
    assert mbpp.prompt == "Write a function f.\nassert f(1) == 2"
    assert mbpp.plus_inputs == []  # upstream stores one empty plus_input as {}
    assert mbpp.tests == MBPP_PLUS["assertion"]


def test_project_task_jsonl_round_trips(tmp_path):
    task = Task(
        task_id="own/1",
        prompt="p",
        entry_point="f",
        test_format="humaneval",
        tests="def check(c):\n    pass\n",
        metadata={"k": 1},
    )
    path = tmp_path / "tasks.jsonl"
    path.write_text(task.model_dump_json() + "\n")
    assert load_tasks(path) == {"own/1": task}


def test_libs_as_string_or_list():
    assert parse_libs("['pandas', 'numpy']") == ["numpy", "pandas"]
    assert parse_libs(["os"]) == ["os"]
    assert parse_libs("") == []


def test_bad_lines_are_located(tmp_path):
    bad_libs = {**BCB, "task_id": "BigCodeBench/1", "libs": "import os"}
    no_test = {k: v for k, v in BCB.items() if k != "test"} | {"task_id": "BigCodeBench/2"}
    path = write_jsonl(tmp_path / "bad.jsonl", [BCB, bad_libs, no_test])
    with path.open("a") as handle:
        handle.write("{not json\n[1, 2]\n")
    with pytest.raises(InputError) as info:
        load_tasks(path)
    found = {(i.line, i.field) for i in info.value.issues}
    assert found == {(2, "libs"), (3, "test"), (4, ""), (5, "")}
    assert all(i.path == str(path) for i in info.value.issues)
    assert "bad.jsonl:3: field 'test'" in str(info.value)


def test_duplicate_task_ids_are_an_error(tmp_path):
    path = write_jsonl(tmp_path / "dup.jsonl", [HUMANEVAL, HUMANEVAL])
    with pytest.raises(InputError, match="duplicate task_id 'HumanEval/0' \\(first on line 1\\)"):
        load_tasks(path)


def test_wrong_types_and_unknown_formats(tmp_path):
    with pytest.raises(InputError) as info:
        load_tasks(write_jsonl(tmp_path / "x.jsonl", [{**HUMANEVAL_PLUS, "base_input": 3}]))
    assert info.value.issues[0].field == "base_input"
    with pytest.raises(InputError, match="cannot tell the benchmark"):
        load_tasks(write_jsonl(tmp_path / "y.jsonl", [{"foo": 1}]))
    with pytest.raises(InputError) as info:
        load_tasks(write_jsonl(tmp_path / "z.jsonl", [{"task_id": "a", "test_format": "nope"}]))
    assert info.value.issues[0].field == "test_format"
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no tasks"):
        load_tasks(tmp_path / "empty.jsonl")


def test_missing_libraries_include_imports_of_tests():
    task = Task(
        task_id="t",
        libs=["os", "surely_missing_lib"],
        canonical_solution="import json\nimport another_missing_lib.sub\n",
        tests="from third_missing_lib import x\nimport unittest\n",
    )
    assert missing_libraries(task) == [
        "another_missing_lib",
        "surely_missing_lib",
        "third_missing_lib",
    ]


@pytest.mark.parametrize(
    ("name", "count", "source"),
    [
        ("bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz", 1140, "bigcodebench"),
        ("humaneval/HumanEval.jsonl.gz", 164, "humaneval"),
        ("evalplus/HumanEvalPlus-v0.1.10.jsonl.gz", 164, "humanevalplus"),
        ("evalplus/HumanEvalPlus-Mini-v0.1.10.jsonl.gz", 164, "humanevalplus"),
        ("evalplus/MbppPlus-v0.2.0.jsonl.gz", 378, "mbppplus"),
    ],
)
def test_real_files_load(shared_data, name, count, source):
    tasks = load_tasks(shared_data / "benchmarks" / name)
    assert len(tasks) == count
    assert {t.source for t in tasks.values()} == {source}
    assert all(t.canonical_solution and t.entry_point for t in tasks.values())
