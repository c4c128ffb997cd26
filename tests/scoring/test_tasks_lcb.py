"""LiveCodeBench loading (stdio and functional problems) and the hub path."""

from __future__ import annotations

import base64
import json
import pickle
import sys
import types
import zlib
from pathlib import Path

import pytest

from prefjudge.io import InputError
from prefjudge.sandbox import run_functional
from prefjudge.scoring.sources import load_hub
from prefjudge.scoring.tasks import (
    HUB_DATASETS,
    HubUnavailableError,
    decode_lcb_cases,
    detect_format,
    load_tasks,
    missing_libraries,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "lcb_sample.jsonl"


def _compressed(cases: list[dict]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def _records() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines()]


def test_detects_livecodebench():
    assert {detect_format(r) for r in _records()} == {"livecodebench"}


def test_stdio_problem_public_then_private_cases():
    task = load_tasks(DATA)["LiveCodeBench/abc000_a"]
    assert task.test_format == "stdio"
    assert task.entry_point is None
    assert [(c.input, c.output) for c in task.stdio_cases] == [
        ("1 2\n", "3\n"),  # public, plain JSON
        ("5 7\n", "12\n"),  # private, base64+zlib+pickle
        ("-1 1\n", "0\n"),
    ]
    assert task.metadata["public_cases"] == 1 and task.metadata["private_cases"] == 2
    assert task.prompt.startswith("Read two integers A and B")
    assert "standard input" in task.prompt
    assert task.source == "livecodebench"
    assert missing_libraries(task) == []


def test_plain_json_private_cases():
    task = load_tasks(DATA)["LiveCodeBench/abc000_b"]
    assert [c.input for c in task.stdio_cases] == ["4\n", "0\n"]


def test_functional_problem_is_marked_not_runnable():
    task = load_tasks(DATA)["LiveCodeBench/1"]
    assert task.test_format == "none"
    assert task.stdio_cases == []
    assert task.entry_point == "twoSum"
    assert "no adapter" in task.metadata["not_runnable"]
    assert task.metadata["lcb_functional_cases"] == [
        {"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]"},
        {"input": "[3, 3]\n6", "output": "[0, 1]"},
    ]
    assert "class Solution" in task.prompt and "def twoSum" in task.prompt


def test_functional_problem_never_passes():
    task = load_tasks(DATA)["LiveCodeBench/1"]
    [result] = run_functional([(task, "class Solution:\n    pass\n")], workers=1)
    assert result.status == "error"


def test_stdio_problem_runs_in_the_sandbox():
    task = load_tasks(DATA)["LiveCodeBench/abc000_a"]
    good = "a, b = map(int, input().split())\nprint(a + b)\n"
    wrong = "a, b = map(int, input().split())\nprint(a * b)\n"  # 2 != 3
    results = run_functional([(task, good), (task, wrong)], workers=2)
    assert [r.status for r in results] == ["pass", "fail"]


def test_decode_rejects_pickled_objects():
    class Evil:
        def __reduce__(self):
            return (print, ("owned",))

    blob = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(ValueError, match="neither JSON nor"):
        decode_lcb_cases(blob)


def test_decode_accepts_lists_and_empty():
    cases = [{"input": "1", "output": "2", "testtype": "stdin"}]
    assert decode_lcb_cases(cases) == cases
    assert decode_lcb_cases(_compressed(cases)) == cases
    assert decode_lcb_cases("") == []


def test_bad_records_are_located(tmp_path):
    records = _records()
    records[0]["private_test_cases"] = "not json, not base64!"
    records[1]["public_test_cases"] = json.dumps([{"input": 1}])
    path = tmp_path / "lcb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(InputError) as info:
        load_tasks(path)
    text = str(info.value)
    assert ":1:" in text and "private_test_cases" in text
    assert ":2:" in text and "public_test_cases" in text


def test_mixed_test_types_rejected(tmp_path):
    record = _records()[0]
    record["public_test_cases"] = json.dumps(
        [{"input": "1", "output": "1", "testtype": "functional"}]
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match="mixed test types"):
        load_tasks(path)


def test_hub_without_datasets_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails
    with pytest.raises(HubUnavailableError, match="pip install datasets"):
        load_hub("openai/openai_humaneval")


def test_hub_through_a_fake_datasets_module(monkeypatch):
    calls = []

    def load_dataset(name, split, **kwargs):
        calls.append((name, split, kwargs))
        return _records()

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    tasks = load_hub(
        "livecodebench/code_generation_lite", "test", version_tag="release_v5"
    )
    assert calls == [("hf://datasets/livecodebench/code_generation_lite", "test",
                      {"version_tag": "release_v5"})]
    assert list(tasks) == ["LiveCodeBench/abc000_a", "LiveCodeBench/abc000_b", "LiveCodeBench/1"]
    assert "livecodebench/code_generation_lite" in HUB_DATASETS


def test_hub_load_failure_is_clear(monkeypatch):
    def load_dataset(name, split, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    with pytest.raises(HubUnavailableError, match="no network"):
        load_hub("bigcode/bigcodebench", "v0.1.4")


def test_hub_mbppplus_shape_is_not_runnable(monkeypatch):
    row = {
        "task_id": 2,
        "prompt": "Write a function to find the shared elements.",
        "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
        "test_list": ["assert True"],
        "test": "inputs = []\n",
        "source_file": "x",
        "test_imports": [],
    }
    monkeypatch.setitem(
        sys.modules, "datasets", types.SimpleNamespace(load_dataset=lambda *a, **k: [row])
    )
    [task] = load_hub("evalplus/mbppplus").values()
    assert task.task_id == "Mbpp/2"
    assert task.test_format == "none"
    assert "MbppPlus" in task.metadata["not_runnable"]


def test_hub_rows_of_real_bigcodebench(monkeypatch, shared_data):
    """Real BigCodeBench rows served as if from the hub convert like the local file."""
    from prefjudge.io import iter_objects

    path = shared_data / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
    rows = [record for _, record in iter_objects(path)][:20]
    monkeypatch.setitem(
        sys.modules, "datasets", types.SimpleNamespace(load_dataset=lambda *a, **k: rows)
    )
    hub = load_hub("bigcode/bigcodebench", "v0.1.0_hf")
    local = load_tasks(path)
    assert list(hub) == list(local)[:20]
    assert all(hub[t] == local[t] for t in hub)
