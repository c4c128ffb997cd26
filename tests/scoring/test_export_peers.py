"""``--export``: the result files EvalPlus 0.3.1 and BigCodeBench 0.2.5 write, field for field.

The shapes asserted here are read off the peers' ``evaluate.py``: EvalPlus writes
``{"date", "hash", "eval": {task_id: [{"task_id", "solution", "base_status", "plus_status",
"base_fail_tests", "plus_fail_tests"}]}, "pass_at_k": {"base": {"pass@1"...}, "plus":
{"pass@1"...}}}`` with ``json.dump`` (no indent) to
``X_eval_results.json`` for samples ``X.jsonl``; BigCodeBench writes ``{"date", "eval":
{task_id: [{"task_id", "solution", "status", "details"}]}}`` and ``{"pass@k"...,
"model", "split", "subset", "calibrated", "gt_pass_rate", "failed_tasks"}`` indented by 2,
``model`` being the samples file's name up to ``--bigcodebench-``. Both name statuses
``pass``, ``fail``, ``timeout``; an EvalPlus input over its time limit is ``fail``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from prefjudge.records import FuncResult, ScoredSample, SetResult, Task
from prefjudge.reporting import SilentReporter
from prefjudge.scoring import export
from prefjudge.scoring.export import (
    ExportError,
    ExportSettings,
    ExportTarget,
    bigcodebench_entry,
    evalplus_entry,
    export_scores,
)

EVALPLUS_KEYS = ["task_id", "solution", "base_status", "plus_status", "base_fail_tests",
                 "plus_fail_tests"]
BIGCODEBENCH_KEYS = ["task_id", "solution", "status", "details"]
PASS_AT_K_TAIL = ["model", "split", "subset", "calibrated", "gt_pass_rate", "failed_tasks"]
WHEN = datetime(2025, 3, 4, 5, 6)
CODE = "def f(x):\n    return x\n"


def he_task(number: int = 7) -> Task:
    return Task(task_id=f"HumanEval/{number}", entry_point="f", test_format="evalplus",
                canonical_solution=CODE, base_inputs=[[1], [2], [3]],
                plus_inputs=[[4], [5]], metadata={"evalplus_dataset": "humaneval"})


def bcb_task(number: int) -> Task:
    return Task(task_id=f"BigCodeBench/{number}", test_format="bigcodebench",
                tests="class TestCases: ...", entry_point="task_func")


def sample(task: str, status: str, *, sets: dict[str, tuple[str, list[int]]] | None = None,
           model: str = "org/coder", detail: str = "", n: int = 0, **extra) -> ScoredSample:
    func_sets = ({name: SetResult(status=s, failed=failed) for name, (s, failed) in sets.items()}
                 if sets is not None else None)
    return ScoredSample(task_id=task, model=model, response=CODE, response_is_code=True,
                        sample=n, func=FuncResult(status=status, detail=detail, sets=func_sets),
                        **extra)


def write_scores(path: Path, records: list[ScoredSample]) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in records))
    return path


def run_export(tmp_path: Path, fmt: str, records: list[ScoredSample], tasks: dict[str, Task],
               **settings) -> tuple[export.ExportOutcome, SilentReporter]:
    scores = write_scores(tmp_path / "scores.jsonl", records)
    reporter = SilentReporter()
    outcome = export_scores(ExportSettings(scores, ExportTarget(fmt, tmp_path / "out"), tasks,
                                           date=WHEN, **settings), reporter)
    return outcome, reporter


# --------------------------------------------------------------------------- EvalPlus


def test_evalplus_entry_has_the_peers_fields_in_order_and_its_statuses() -> None:
    task = he_task()
    both = evalplus_entry(sample(task.task_id, "pass", sets={"base": ("pass", []),
                                                            "plus": ("pass", [])}), task)
    assert list(both) == EVALPLUS_KEYS
    assert both == {"task_id": "HumanEval/7", "solution": CODE, "base_status": "pass",
                    "plus_status": "pass", "base_fail_tests": [], "plus_fail_tests": []}
    # the input each set stopped at (EvalPlus's default run lists that one only)
    mixed = evalplus_entry(sample(task.task_id, "fail", sets={"base": ("fail", [1, 2]),
                                                             "plus": ("timeout", [0])}), task)
    assert (mixed["base_status"], mixed["base_fail_tests"]) == ("fail", [[2]])
    # an input over its time limit is EvalPlus's "fail" (only a whole run over budget is
    # "timeout" there; prefjudge's set timeouts are per input)
    assert (mixed["plus_status"], mixed["plus_fail_tests"]) == ("fail", [[4]])
    # a set prefjudge could not judge is the peer's "fail" (it has no other word)
    unjudged = evalplus_entry(sample(task.task_id, "fail", sets={"base": ("fail", []),
                                                                "plus": ("error", [])}), task)
    assert (unjudged["base_status"], unjudged["plus_status"]) == ("fail", "fail")
    assert unjudged["base_fail_tests"] == unjudged["plus_fail_tests"] == []
    no_reference = evalplus_entry(sample(task.task_id, "error"), task)
    assert (no_reference["base_status"], no_reference["plus_status"]) == ("fail", "fail")


def test_evalplus_refuses_records_without_per_set_verdicts() -> None:
    with pytest.raises(ExportError, match=r"no base/plus verdicts.*--force-new"):
        evalplus_entry(sample("HumanEval/7", "fail"), he_task())


def test_the_solution_is_the_code_prefjudge_ran() -> None:
    reply = ScoredSample(task_id="HumanEval/7", model="m", meta={"profile": "reference"},
                         response=f"Here:\n```python\n{CODE}```\nDone.",
                         func=FuncResult(status="pass", sets={"base": SetResult(status="pass"),
                                                              "plus": SetResult(status="pass")}))
    assert evalplus_entry(reply, he_task())["solution"] == CODE
    whole = f'def g():\n    """Example:\n    ```python\n    g()\n    ```\n    """\n{CODE}'
    as_code = sample("BigCodeBench/1", "pass").model_copy(update={"response": whole})
    assert bigcodebench_entry(as_code)["solution"] == whole


def test_mbpp_failing_inputs_are_written_as_evalplus_serializes_them() -> None:
    def mbpp(number: int, inputs: list) -> Task:
        return Task(task_id=f"Mbpp/{number}", entry_point="f", test_format="evalplus",
                    canonical_solution=CODE, base_inputs=inputs, plus_inputs=inputs,
                    metadata={"evalplus_dataset": "mbpp"})

    failing = {"base": ("fail", [0]), "plus": ("pass", [])}
    # 124: (float(a), complex(b)) then (str(a), str(b)); 252: complex(a) then str(a)
    assert evalplus_entry(sample("Mbpp/124", "fail", sets=failing),
                          mbpp(124, [["0", "1j"]]))["base_fail_tests"] == [["0.0", "1j"]]
    assert evalplus_entry(sample("Mbpp/252", "fail", sets=failing),
                          mbpp(252, [[1]]))["base_fail_tests"] == [["(1+0j)"]]
    # tuples elsewhere are written back as the same JSON lists
    assert evalplus_entry(sample("Mbpp/2", "fail", sets=failing),
                          mbpp(2, [[[3, 4], [5, 6]]]))["base_fail_tests"] == [[[3, 4], [5, 6]]]


def test_evalplus_files_are_named_and_written_as_the_peer_writes_them(tmp_path: Path) -> None:
    task_file = tmp_path / "HumanEvalPlus.jsonl.gz"
    lines = b'{"task_id": "HumanEval/7", "base_input": [[1]]}\n{"task_id": "HumanEval/8"}\n'
    task_file.write_bytes(gzip.compress(lines))
    tasks = {"HumanEval/7": he_task(7), "HumanEval/8": he_task(8)}
    ok = {"base": ("pass", []), "plus": ("pass", [])}
    records = [sample("HumanEval/8", "pass", sets=ok, n=1),
               sample("HumanEval/7", "fail", sets={"base": ("pass", []), "plus": ("fail", [1])}),
               sample("HumanEval/8", "fail", sets={"base": ("fail", [0]), "plus": ("fail", [])}),
               sample("HumanEval/7", "timeout", sets={"base": ("timeout", []),
                                                      "plus": ("error", [])}, n=1),
               sample("HumanEval/7", "pass", sets=ok, model="other model (v2)")]
    outcome, reporter = run_export(tmp_path, "evalplus", records, tasks,
                                   task_files=[task_file])
    folder = tmp_path / "out" / "humaneval"
    assert outcome.files == [folder / "org--coder.jsonl", folder / "org--coder_eval_results.json",
                             folder / "other_model__v2_.jsonl",
                             folder / "other_model__v2__eval_results.json"]
    text = (folder / "org--coder_eval_results.json").read_text()
    assert "\n" not in text  # json.dump without indent, as EvalPlus
    results = json.loads(text)
    assert list(results) == ["date", "hash", "eval", "pass_at_k"]
    # base: 1 of 2 on each task; base and plus: 1 of 2 on HumanEval/8, none on HumanEval/7
    assert results["pass_at_k"] == {"base": {"pass@1": 0.5}, "plus": {"pass@1": 0.25}}
    other = json.loads((folder / "other_model__v2__eval_results.json").read_text())
    assert other["pass_at_k"] == {"base": {"pass@1": 1.0}, "plus": {"pass@1": 1.0}}
    assert results["date"] == "2025-03-04 05:06"
    assert results["hash"] == hashlib.md5(lines).hexdigest()  # of the decompressed file
    assert list(results["eval"]) == ["HumanEval/8", "HumanEval/7"]  # as first seen
    eight = results["eval"]["HumanEval/8"]
    assert [(e["base_status"], e["plus_status"]) for e in eight] == [("fail", "fail"),
                                                                     ("pass", "pass")]
    seven = results["eval"]["HumanEval/7"]
    assert [(e["base_status"], e["plus_status"]) for e in seven] == [("pass", "fail"),
                                                                     ("fail", "fail")]
    assert seven[0]["plus_fail_tests"] == [[5]]
    assert all(list(entry) == EVALPLUS_KEYS for entries in results["eval"].values()
               for entry in entries)
    samples = [json.loads(line) for line in (folder / "org--coder.jsonl").read_text().splitlines()]
    assert samples == [{"task_id": "HumanEval/8", "solution": CODE}] * 2 + [
        {"task_id": "HumanEval/7", "solution": CODE}] * 2
    assert (outcome.samples, outcome.errors, outcome.left_out) == (5, 0, 0)
    assert reporter.messages[-1] == ("note", f"export evalplus: wrote 5 sample(s) to 4 file(s) "
                                             f"in {tmp_path / 'out'}")


def test_evalplus_hash_of_the_real_release_files(tmp_path: Path, shared_data: Path) -> None:
    folder = shared_data / "benchmarks" / "evalplus"
    files = [folder / "MbppPlus-v0.2.0.jsonl.gz", folder / "HumanEvalPlus-v0.1.10.jsonl.gz"]
    if not all(path.exists() for path in files):
        pytest.skip(f"the EvalPlus release files are not in {folder}")
    # md5sum of `zcat FILE`, as evalplus's get_*_plus_hash reads its decompressed cache file
    assert export.dataset_hash(files, "humaneval") == "fe585eb4df8c88d844eeb463ea4d0302"
    assert export.dataset_hash(files, "mbpp") == "ee43ecabebf20deef4bb776a405ac5b1"
    assert export.dataset_hash(files[:1], "humaneval") is None


# --------------------------------------------------------------------------- BigCodeBench


def peer_pass_at_k(results: dict, problems: list[str], ks: tuple[int, ...]) -> dict:
    """bigcodebench.evaluate's pass@k lines, as its source computes them."""
    def estimator(n: int, c: int, k: int) -> float:
        if n - c < k:
            return 1.0
        return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))

    total = np.array([len(r) for key, r in results["eval"].items() if key in problems])
    correct = [sum(r["status"] == "pass" for r in res)
               for key, res in results["eval"].items() if key in problems]
    return {f"pass@{k}": np.array([estimator(int(n), int(c), k)
                                   for n, c in zip(total, correct, strict=True)]).mean()
            for k in ks if total.min() >= k}


def test_bigcodebench_entry_fields_statuses_and_details() -> None:
    first = "3 of 5 tests failed; first: __test__.TestCases.test_case_2\nAssertionError: 1 != 2"
    entry = bigcodebench_entry(sample("BigCodeBench/3", "fail", detail=first))
    assert list(entry) == BIGCODEBENCH_KEYS
    assert entry == {"task_id": "BigCodeBench/3", "solution": CODE, "status": "fail",
                     "details": {"test_case_2": first}}
    broken = bigcodebench_entry(sample("BigCodeBench/3", "fail", detail="failed at import: X"))
    assert broken["details"] == {"ALL": "failed at import: X"}
    missing = "missing module 'seaborn' (not installed here)"
    error = bigcodebench_entry(sample("BigCodeBench/3", "error", detail=missing))
    assert (error["status"], error["details"]) == ("fail", {"ALL": missing})
    assert bigcodebench_entry(sample("BigCodeBench/3", "timeout"))["status"] == "timeout"
    assert bigcodebench_entry(sample("BigCodeBench/3", "pass"))["details"] == {}


def test_bigcodebench_files_and_pass_at_k_as_the_peer_computes_it(tmp_path: Path) -> None:
    tasks = {f"BigCodeBench/{n}": bcb_task(n) for n in range(4)}
    statuses = {0: ["pass"] * 5 + ["fail"] * 5, 1: ["fail"] * 9 + ["pass"],
                2: ["error"] + ["timeout"] * 9}
    records = [sample(f"BigCodeBench/{t}", s, n=i, model="org/coder--bigcodebench-hard-complete"
                      "--vllm-0-1-sanitized_calibrated")
               for t, runs in statuses.items() for i, s in enumerate(runs)]
    outcome, reporter = run_export(
        tmp_path, "bigcodebench", records, tasks,
        generations="x/org--coder--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl")
    name = "org--coder--bigcodebench-hard-complete--prefjudge"
    out = tmp_path / "out"
    assert outcome.files == [out / f"{name}.jsonl", out / f"{name}_eval_results.json",
                             out / f"{name}_pass_at_k.json"]
    text = (out / f"{name}_eval_results.json").read_text()
    assert text.startswith('{\n  "date": "2025-03-04 05:06",\n  "eval": {')  # indent=2
    results = json.loads(text)
    assert list(results) == ["date", "eval"]
    assert all(list(e) == BIGCODEBENCH_KEYS for es in results["eval"].values() for e in es)
    assert [e["status"] for e in results["eval"]["BigCodeBench/2"]] == ["fail"] + ["timeout"] * 9
    pass_at_k = json.loads((out / f"{name}_pass_at_k.json").read_text())
    assert list(pass_at_k) == ["pass@1", "pass@5", "pass@10", *PASS_AT_K_TAIL]
    want = peer_pass_at_k(results, list(tasks), (1, 5, 10))
    assert {k: pass_at_k[k] for k in want} == want  # bit for bit
    assert pass_at_k["model"] == outcome.files[2].name.split("--bigcodebench-")[0]
    assert (pass_at_k["split"], pass_at_k["subset"], pass_at_k["calibrated"]) == (
        "complete", "hard", False)
    # prefjudge runs no reference solution: what the peer writes with --no_gt
    assert pass_at_k["gt_pass_rate"] == 0.0 and pass_at_k["failed_tasks"] == list(tasks)
    assert outcome.errors == 1
    assert any(level == "warn" and "1 sample(s) whose test run ended in error are written "
               "as 'fail'" in message for level, message in reporter.messages)


def test_bigcodebench_split_and_subset_from_the_samples_name() -> None:
    assert export.bigcodebench_split("m--bigcodebench-complete--vllm-0-1.jsonl") == (
        "complete", "full")
    assert export.bigcodebench_split("m--bigcodebench-hard-instruct--x.jsonl") == (
        "instruct", "hard")
    assert export.bigcodebench_split("gens.jsonl") == ("instruct", "full")


# --------------------------------------------------------------------------- refusals, groups


def test_a_format_that_fits_no_task_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"needs BigCodeBench tasks.*evalplus tasks"):
        export.check_fits("bigcodebench", {"HumanEval/7": he_task()})
    with pytest.raises(ExportError, match=r"needs HumanEval\+/MBPP\+ tasks"):
        export.check_fits("evalplus", {"BigCodeBench/1": bcb_task(1)})
    export.check_fits("evalplus", {"HumanEval/7": he_task(), "BigCodeBench/1": bcb_task(1)})
    records = [sample("BigCodeBench/1", "pass")]
    with pytest.raises(ExportError, match="none of the 1 record"):
        run_export(tmp_path, "evalplus", records, {"BigCodeBench/1": bcb_task(1)})


def test_mixed_outputs_export_their_part_and_say_what_was_left_out(tmp_path: Path) -> None:
    ok = {"base": ("pass", []), "plus": ("pass", [])}
    records = [sample("HumanEval/7", "pass", sets=ok), sample("BigCodeBench/1", "pass")]
    tasks = {"HumanEval/7": he_task(), "BigCodeBench/1": bcb_task(1)}
    outcome, reporter = run_export(tmp_path, "evalplus", records, tasks)
    assert (outcome.samples, outcome.left_out) == (1, 1)
    assert ("warn", "export evalplus: left out 1 record(s) whose task is not a "
                    "HumanEval+/MBPP+ task") in reporter.messages


def test_records_without_a_test_verdict_are_refused(tmp_path: Path) -> None:
    untested = ScoredSample(task_id="BigCodeBench/1", model="m", response=CODE)
    with pytest.raises(ExportError, match="no unit-test verdict"):
        run_export(tmp_path, "bigcodebench", [untested], {"BigCodeBench/1": bcb_task(1)})


def test_each_protocol_and_k_of_a_model_gets_its_own_files(tmp_path: Path) -> None:
    records = [sample("BigCodeBench/1", "pass", k=0, protocol="single"),
               sample("BigCodeBench/1", "fail", k=3, protocol="single"),
               sample("BigCodeBench/1", "fail", model="solo")]
    outcome, _ = run_export(tmp_path, "bigcodebench", records, {"BigCodeBench/1": bcb_task(1)})
    assert [p.name for p in outcome.files if p.name.endswith("_pass_at_k.json")] == [
        "org--coder_single-k0--bigcodebench-instruct--prefjudge_pass_at_k.json",
        "org--coder_single-k3--bigcodebench-instruct--prefjudge_pass_at_k.json",
        "solo--bigcodebench-instruct--prefjudge_pass_at_k.json"]


def test_two_models_with_the_same_file_name_are_refused(tmp_path: Path) -> None:
    records = [sample("BigCodeBench/1", "pass", model="a/b"),
               sample("BigCodeBench/1", "pass", model="a--b")]
    with pytest.raises(ExportError, match="would both be exported as 'a--b'"):
        run_export(tmp_path, "bigcodebench", records, {"BigCodeBench/1": bcb_task(1)})


def test_parse_target() -> None:
    assert export.parse_target("EvalPlus=out/x") == ExportTarget("evalplus", Path("out/x"))
    for bad, why in (("evalplus", "FORMAT=DIR"), ("humaneval=out", "unknown format"),
                     ("bigcodebench=", "FORMAT=DIR")):
        with pytest.raises(ValueError, match=why):
            export.parse_target(bad)
