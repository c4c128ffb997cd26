"""End-to-end tests of ``prefjudge score`` on the bundled sample and real benchmark data."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from pj_cli import invoke
from pj_files import write_jsonl

from prefjudge.records import CheckResult
from prefjudge.scoring.score import summarise_checks

SAMPLE = "datasets/sample/generations.jsonl"


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sample_run(project_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("score") / "scores.jsonl"
    result = invoke("score", str(project_root / SAMPLE), "-o", str(out))
    assert result.exit_code == 0, result.output
    return out, result.output


def test_sample_scores_every_generation_with_provenance(sample_run, project_root):
    out, _ = sample_run
    records = read_jsonl(out)
    inputs = read_jsonl(project_root / SAMPLE)
    assert [r["id"] for r in records] == [g["id"] for g in inputs]
    for record, given in zip(records, inputs, strict=True):
        checked = [c["id"] for c in record["instruction_results"]]
        assert checked == [i["id"] for i in given["instructions"]]
        assert record["meta"]["ruff_version"] == "0.17.6"
        assert record["func"]["status"] in {"pass", "fail", "timeout", "error"}
    statuses = {r["func"]["status"] for r in records}
    assert "error" not in statuses, [r["func"] for r in records if r["func"]["status"] == "error"]


def test_sample_ranks_the_three_models_by_quality(sample_run):
    out, output = sample_run
    summary = pd.read_csv(out.with_name("scores.summary.csv")).set_index("model")
    assert summary.loc["sample-strong", "pass1"] == 1.0
    assert summary.loc["sample-strong", "if_task"] == 1.0
    for other in ("sample-medium", "sample-weak"):
        assert summary.loc[other, "if_task"] < 0.5
        assert summary.loc[other, "if_instruction"] < summary.loc["sample-strong", "if_instruction"]
    assert 1.0 > summary.loc["sample-medium", "pass1"] > summary.loc["sample-weak", "pass1"]
    assert summary.loc["sample-weak", "pass1"] < 0.5
    assert out.with_name("scores.summary.png").stat().st_size > 5000
    assert "sample-strong" in output and "pass@1" in output
    payload = json.loads(out.with_name("scores.summary.json").read_text())
    assert {m["model"] for m in payload["models"]} == set(summary.index)


def test_rerun_resumes_without_redoing_finished_records(sample_run, tmp_path, project_root):
    out, _ = sample_run
    lines = out.read_text().splitlines()
    partial = tmp_path / "scores.jsonl"
    kept = [json.loads(line) for line in lines[:10]]
    kept[0]["instruction_results"][0]["reason"] = "sentinel: must survive the resume"
    partial.write_text("".join(json.dumps(r) + "\n" for r in kept) + lines[10][:40])
    binding = out.with_name(out.name + ".journal.json")  # the run that made these lines
    partial.with_name(partial.name + ".journal.json").write_text(binding.read_text())
    result = invoke("score", str(project_root / SAMPLE), "-o", str(partial))
    assert result.exit_code == 0, result.output
    records = read_jsonl(partial)
    assert len(records) == len(lines)
    assert len({r["meta"]["key"] for r in records}) == len(lines)
    assert records[0]["instruction_results"][0]["reason"] == "sentinel: must survive the resume"


@pytest.mark.slow
def test_killed_run_resumes_to_completion(tmp_path, project_root):
    out = tmp_path / "scores.jsonl"
    cmd = [sys.executable, "-m", "prefjudge.cli", "score", str(project_root / SAMPLE), "-o",
           str(out), "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or not out.read_text().strip()):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = len(read_jsonl(out)) if out.exists() else 0
    assert first < 42, "the run finished before it could be killed; make the sample larger"
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = read_jsonl(out)
    assert len(records) == 42 and len({r["meta"]["key"] for r in records}) == 42


def test_bad_input_names_file_line_and_field_and_scores_nothing(tmp_path, project_root):
    tasks = project_root / "datasets/sample/tasks.jsonl"
    gens = tmp_path / "gens.jsonl"
    good = {"task_id": "sample/fizzbuzz", "model": "m", "response": "x = 1"}
    write_jsonl(gens, [
        good,
        {**good, "instructions": [{"id": "style_99"}]},
        {**good, "instructions": [{"id": "style_3", "params": {"line_length": 500}}]},
        {**good, "task_id": "nope"},
    ])
    with gens.open("a") as handle:
        handle.write("{broken\n")
    out = tmp_path / "out.jsonl"
    result = invoke("score", str(gens), "--tasks", str(tasks), "-o", str(out))
    assert result.exit_code != 0
    assert f"{gens}:2: field 'instructions.0" in result.output
    assert f"{gens}:3: field 'instructions.0.params.line_length'" in result.output
    assert f"{gens}:4: field 'task_id'" in result.output
    assert f"{gens}:5:" in result.output and "not valid JSON" in result.output
    assert not out.exists() or not out.read_text()

    result = invoke("score", str(gens), "--tasks", str(tasks), "-o", str(out),
                    "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert len(read_jsonl(out)) == 1 and "skipped" in result.output


def test_summarise_checks_keeps_errors_apart():
    def results(*statuses):
        return [CheckResult(id="style_1", status=s) for s in statuses]

    assert summarise_checks(results("pass", "pass")) == (1.0, True)
    assert summarise_checks(results("pass", "fail")) == (0.5, False)
    assert summarise_checks(results("pass", "error")) == (1.0, None)
    assert summarise_checks(results("fail", "error")) == (0.0, False)
    assert summarise_checks(results("error")) == (None, None)
    assert summarise_checks([]) == (None, None)


@pytest.mark.shared_data
def test_bigcodebench_canonical_solutions_score_as_passing(shared_data, tmp_path):
    from prefjudge.scoring.tasks import load_tasks

    path = shared_data / "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz"
    tasks = load_tasks(path)
    stdlib = [t for t in tasks.values() if set(t.libs) <= sys.stdlib_module_names][:6]
    assert len(stdlib) == 6
    gens = tmp_path / "gens.jsonl"
    write_jsonl(gens, [
        {"task_id": t.task_id, "model": "canonical",
         "response": f"```python\n{t.canonical_solution}\n```",
         "instructions": [{"id": "logic_1"}, {"id": "style_3", "params": {"line_length": 120}}]}
        for t in stdlib
    ])
    out = tmp_path / "scores.jsonl"
    result = invoke("score", str(gens), "--tasks", str(path), "-o", str(out))
    assert result.exit_code == 0, result.output
    records = read_jsonl(out)
    assert [r["func"]["status"] for r in records] == ["pass"] * 6, [r["func"] for r in records]


def test_multi_turn_generations_get_per_turn_checks(tmp_path):
    def fenced(code):
        return f"```python\n{code}```"

    plain = "import os\n\n\ndef add(a, b):\n    return a + b\n"
    annotated = "import os\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n"
    refs = [{"id": "doc_1", "params": {}}, {"id": "logic_1", "params": {}}]
    turns = [
        {"index": 1, "prompt": "write add", "response": fenced(plain), "instruction": None},
        {"index": 2, "prompt": "annotate", "response": fenced(annotated), "instruction": refs[0]},
        {"index": 3, "prompt": "pyflakes", "response": fenced(plain.replace("import os\n", "")),
         "instruction": refs[1]},
    ]
    gens = tmp_path / "gens.jsonl"
    write_jsonl(gens, [
        {"id": "multi", "task_id": "t", "model": "m", "response": turns[-1]["response"],
         "instructions": refs, "protocol": "multi", "k": 2, "turns": turns},
        {"id": "single", "task_id": "t", "model": "m", "response": fenced(annotated),
         "instructions": refs, "protocol": "single", "k": 2},
    ])
    out = tmp_path / "scores.jsonl"
    result = invoke("score", str(gens), "-o", str(out))
    assert result.exit_code == 0, result.output
    multi, single = read_jsonl(out)
    statuses = [[(c["id"], c["status"]) for c in turn] for turn in multi["turn_results"]]
    assert statuses == [[], [("doc_1", "pass")], [("doc_1", "fail"), ("logic_1", "pass")]]
    assert [c["status"] for c in multi["instruction_results"]] == ["fail", "pass"]
    assert multi["turns"] == turns and multi["protocol"] == "multi"
    assert single["turn_results"] is None
    assert [c["status"] for c in single["instruction_results"]] == ["pass", "fail"]
