"""The augment stage: permutation, applicability, rule selector, LLM selector repairs, CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pj_cli import invoke
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend

from prefjudge.backends import Backend, Request
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, Task
from prefjudge.scoring.tasks import load_tasks
from prefjudge.scoring.taxonomy import (
    Taxonomy,
    TaxonomyError,
    UnknownInstructionError,
    load_taxonomy,
)
from prefjudge.testbed.augment import (
    SelectorReply,
    applicable,
    function_metrics,
    rule_params,
    scan_order,
    select_llm,
    select_rule,
    selector_prompt,
    summarize,
    task_facts,
    tightened_limit,
)

TAX = load_taxonomy()

PANDAS_CODE = '''import os
import pandas as pd


def task_func(path, column):
    """Load a CSV and check a column."""
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    try:
        frame = pd.read_csv(path)
    except ValueError as exc:
        raise ValueError("bad csv") from exc
    total = 0
    for value in frame[column]:
        if value > 10 and value < 100 or value == 7:
            total += value
        elif value < 0:
            total -= 1
        else:
            total += 1
    return total
'''
PLAIN_CODE = '''def add(a, b):
    return a + b
'''
PANDAS_TASK = Task(
    task_id="T/pandas", prompt="Sum a DataFrame column read from a CSV file.",
    canonical_solution=PANDAS_CODE, libs=["pandas", "os"], entry_point="task_func",
)
PLAIN_TASK = Task(task_id="T/plain", prompt="Add two numbers.", canonical_solution=PLAIN_CODE)
STDIO_TASK = Task(task_id="T/stdio", prompt="Read N and print 2N.", test_format="stdio")


def _ids(task: AugmentedTask) -> list[str]:
    return [ref.id for ref in task.instructions]


def _assert_valid(task: AugmentedTask, k: int) -> None:
    ids = _ids(task)
    assert len(ids) == len(set(ids)) <= k
    order = task.metadata["augment"]["scan_order"]
    assert sorted(order) == sorted(TAX.ids)
    assert ids == sorted(ids, key=order.index)  # permutation order kept
    for i, a in enumerate(ids):
        assert not set(TAX.get(a).conflicts) & set(ids[i + 1 :])
    for ref in task.instructions:
        assert TAX.problems(ref) == []
        assert set(ref.params) == {p.name for p in TAX.get(ref.id).params}


def test_scan_order_is_seeded_per_task():
    a = scan_order(0, "T/1", TAX.ids)
    assert a == scan_order(0, "T/1", TAX.ids)
    assert sorted(a) == sorted(TAX.ids) and a != TAX.ids
    assert a != scan_order(1, "T/1", TAX.ids)
    assert a != scan_order(0, "T/2", TAX.ids)


def test_function_metrics_on_known_code():
    import ast

    func = ast.parse(PANDAS_CODE).body[-1]
    metrics = function_metrics(func)
    # if, try/except, for, if/elif/else -> 1 + 1 + 1 + (if + elif + else = 3)
    assert metrics["branches"] == 6
    assert metrics["nesting"] == 3  # for > if > elif(if)
    assert metrics["bool_terms"] == 3  # a and b or c
    assert metrics["locals"] == 3  # frame, total, value (exc is not a Name store)
    assert metrics["complexity"] == 1 + 1 + 1 + 1 + 1 + 1 + 2  # if, except, for, if, elif, bool


def test_tightened_limit():
    assert tightened_limit(10, 1, 10) == 8
    assert tightened_limit(5, 1, 10) == 4
    assert tightened_limit(2, 1, 10) == 1
    assert tightened_limit(0, 1, 10) == 1  # never below the minimum
    assert tightened_limit(40, 1, 10) == 10  # never above the maximum
    assert tightened_limit(6, 3, 50) == 4


def test_facts_and_applicability():
    facts = task_facts(PANDAS_TASK)
    assert facts.uses_pandas and facts.uses_files and facts.raises and facts.catches
    assert not facts.uses_open
    plain = task_facts(PLAIN_TASK)
    assert not (plain.uses_pandas or plain.uses_files or plain.raises or plain.catches)
    assert not plain.branches_any and plain.has_function


@pytest.mark.parametrize("seed", range(15))
def test_rule_selector_respects_applicability(seed):
    plain = select_rule(PLAIN_TASK, k=5, seed=seed)
    _assert_valid(plain, 5)
    assert len(plain.instructions) == 5
    forbidden = {"library_1", "library_2", "style_7", "error_1", "error_2", "error_3",
                 "error_4", "style_2", "style_8", "style_9", "logic_2", "logic_3",
                 "logic_7", "logic_8", "logic_9"}
    assert not set(_ids(plain)) & forbidden
    stdio = select_rule(STDIO_TASK, k=5, seed=seed)
    _assert_valid(stdio, 5)
    assert not set(_ids(stdio)) & {"error_1", "error_2", "error_3", "error_4", "library_2"}


def test_rule_selector_keeps_pandas_and_errors_somewhere():
    seen = set()
    for seed in range(30):
        task = select_rule(PANDAS_TASK, k=5, seed=seed)
        _assert_valid(task, 5)
        seen |= set(_ids(task))
    assert {"library_2", "library_1", "error_1", "error_2"} <= seen


def test_rule_params_are_tighter_than_the_reference():
    facts = task_facts(PANDAS_TASK)
    assert rule_params(TAX.get("logic_3"), facts) == {"max_branches": 4}  # 6 -> 4
    assert rule_params(TAX.get("logic_2"), facts) == {"max_nested_blocks": 2}  # 3 -> 2
    assert rule_params(TAX.get("logic_9"), facts) == {"max_bool_expr": 2}
    assert rule_params(TAX.get("style_3"), facts) == {"line_length": 79}
    assert rule_params(TAX.get("doc_3"), facts) == {"convention": "google"}
    long_line = Task(task_id="L", canonical_solution="x = '" + "a" * 90 + "'\n")
    assert rule_params(TAX.get("style_3"), task_facts(long_line)) == {"line_length": 88}
    no_code = task_facts(STDIO_TASK)
    assert rule_params(TAX.get("logic_4"), no_code) == {"max_statements": 6}


def test_rule_selector_is_reproducible():
    a = select_rule(PANDAS_TASK, k=5, seed=3)
    b = select_rule(PANDAS_TASK, k=5, seed=3)
    assert a.instructions == b.instructions
    assert a.selector == "rule" and a.selector_seed == 3 and a.param_repairs == []


def _reply(*items) -> str:
    return json.dumps({"instructions": [
        {"id": i, "params": [{"name": n, "value": v} for n, v in p.items()]} for i, p in items
    ]})


def test_scripted_backend_is_a_backend():
    assert isinstance(ScriptedBackend(lambda r: None), Backend)


def test_llm_selector_repairs():
    order = scan_order(0, PANDAS_TASK.task_id, TAX.ids)
    later, earlier = sorted(["style_3", "logic_3"], key=order.index, reverse=True)
    doc_first, doc_second = sorted(["doc_4", "doc_6"], key=order.index)
    reply = _reply(
        ("nonsense_9", {}),                                     # unknown id -> dropped
        (later, {}),                                            # out of scan order
        (earlier, {}),
        (doc_first, {}),
        (doc_second, {}),                                       # conflicts -> dropped
        (doc_first, {}),                                        # duplicate -> dropped
        ("logic_4", {"max_statements": 999, "colour": "red"}),  # invalid value, unknown key
        ("style_5", {}),
        ("style_1", {}),                                        # beyond k=5 -> dropped
    )
    backend = ScriptedBackend(lambda request: reply, model_id="scripted-model")
    [task] = select_llm([PANDAS_TASK], backend, k=5, seed=0)
    _assert_valid(task, 5)
    assert task.selector == "llm:scripted-model"
    kept = {earlier, later, doc_first, "logic_4", "style_5"}
    assert set(_ids(task)) == kept
    logic_4 = next(r for r in task.instructions if r.id == "logic_4")
    assert logic_4.params == {"max_statements": 6}  # reverted to the default
    repairs = "\n".join(task.param_repairs)
    for expected in ("'nonsense_9': unknown instruction id -> dropped",
                     f"'{doc_second}': conflicts with {doc_first} -> dropped",
                     f"'{doc_first}': duplicate -> dropped",
                     "'style_1': beyond k=5 -> dropped",
                     "logic_4.params.max_statements", "logic_4.params.colour",
                     "reverted to default 6", "removed", "reordered"):
        assert expected in repairs
    stats = task.metadata["augment"]
    # assignments: style_3 (1) + logic_3 (1) + logic_4 (max_statements + colour) = 4
    assert stats["param_assignments"] == 4 and stats["param_repaired"] == 2
    assert summarize([task])["invalid_param_rate"] == pytest.approx(0.5)
    prompt = backend.requests[0].messages[0].content
    assert prompt.index(order[0]) < prompt.index(order[-1]) and "max_statements" in prompt
    assert backend.requests[0].schema_model is SelectorReply


def test_llm_selector_fills_short_replies_and_falls_back():
    def replies(request: Request) -> str | None:
        if request.id.endswith("T/plain"):
            return _reply(("doc_4", {}))
        return None  # the stdio task's call fails

    backend = ScriptedBackend(replies, failure="timed out")
    plain, stdio = select_llm([PLAIN_TASK, STDIO_TASK], backend, k=4, seed=1)
    _assert_valid(plain, 4)
    assert len(plain.instructions) == 4 and "doc_4" in _ids(plain)
    assert any("filled by rule" in line for line in plain.param_repairs)
    assert stdio.selector == "rule"
    assert stdio.param_repairs[0].startswith("llm selector failed (timed out)")
    assert stdio.instructions == select_rule(STDIO_TASK, k=4, seed=1).instructions


def test_selector_prompt_lists_every_instruction():
    order = scan_order(0, "x", TAX.ids)
    prompt = selector_prompt(PANDAS_TASK, order, 5, TAX)
    assert all(f". {i} (" in prompt for i in TAX.ids)
    assert "keep" in prompt.lower() and "Reference solution" in prompt


def test_cli_rule_run_resume_and_summary(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, [PANDAS_TASK, PLAIN_TASK])
    out = tmp_path / "aug.jsonl"
    first = invoke("augment", str(tasks), "--k", "3", "--seed", "7", "-o", str(out))
    assert first.exit_code == 0, first.output
    assert "invalid-parameter rate: 0.00%" in first.output and "error_handling" in first.output
    records = [AugmentedTask.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [r.task_id for r in records] == ["T/pandas", "T/plain"]
    assert all(len(r.instructions) == 3 and r.selector_seed == 7 for r in records)
    summary = json.loads((tmp_path / "aug.summary.json").read_text())
    assert summary["tasks"] == 2 and summary["instructions"] == 6 and summary["seed"] == 7
    assert sum(summary["categories"].values()) == 6
    write_jsonl(tasks, [PANDAS_TASK, PLAIN_TASK, STDIO_TASK])
    changed = invoke("augment", str(tasks), "--k", "3", "--seed", "7",
                     "-o", str(out))
    assert changed.exit_code != 0 and "input tasks" in changed.output
    assert "has changed since" in changed.output
    grown = tmp_path / "grown.jsonl"
    first = invoke("augment", str(tasks), "--k", "3", "--seed", "7", "--limit", "2",
                   "-o", str(grown))
    assert first.exit_code == 0, first.output
    again = invoke("augment", str(tasks), "--k", "3", "--seed", "7",
                   "-o", str(grown))
    assert again.exit_code == 0, again.output
    assert "resuming: 2 tasks already" in " ".join(again.output.split())
    lines = grown.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["task_id"] == "T/stdio"
    assert lines[:2] == out.read_text().splitlines()
    clash = invoke("augment", str(tasks), "--k", "3", "--seed", "8",
                   "-o", str(grown))
    assert clash.exit_code != 0 and "setting seed: 7 then, 8 now" in clash.output


def test_cli_llm_selector_with_scripted_backend(tmp_path, monkeypatch):
    from prefjudge.cli import augment_cmd

    reply = _reply(("doc_4", {}), ("style_3", {"line_length": 7}))
    backend = ScriptedBackend(lambda request: reply, model_id="scripted-model")
    monkeypatch.setattr(augment_cmd, "create_backend", lambda config: backend)
    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, [PLAIN_TASK])
    out = tmp_path / "aug.jsonl"
    result = invoke("augment", str(tasks), "--selector", "llm", "--k", "2",
                    "--no-cache", "-o", str(out))
    assert result.exit_code == 0, result.output
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["selector"] == "llm:scripted-model"
    assert {r["id"] for r in record["instructions"]} == {"doc_4", "style_3"}
    assert "invalid-parameter rate: 100.00%" in result.output  # 7 is below style_3's minimum


def test_rule_selector_on_real_bigcodebench(shared_data):
    path = shared_data / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
    tasks = list(load_tasks(path).values())[:200]
    augmented = [select_rule(task, k=5, seed=0) for task in tasks]
    for task in augmented:
        _assert_valid(task, 5)
    summary = summarize(augmented)
    assert summary["short_tasks"] == [] and summary["instructions"] == 1000
    assert summary["invalid_param_rate"] == 0.0
    by_id = {t.task_id: t for t in augmented}
    for task in tasks:
        ids = set(_ids(by_id[task.task_id]))
        if "library_2" in ids:
            assert task_facts(task).uses_pandas
        if ids & {"error_2", "error_4"}:
            assert task_facts(task).raises
    assert all(summary["categories"][c] > 0 for c in summary["categories"])


# ---------------------------------------------------------------- applicability from the taxonomy


def _taxonomy_variant(tmp_path: Path, old: str, new: str) -> Taxonomy:
    text = (data_dir("rubrics") / "vericode.yaml").read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return load_taxonomy(path)


def test_applicability_is_read_from_the_taxonomy(tmp_path):
    facts = task_facts(PLAIN_TASK)
    assert not applicable("library_2", facts)
    assert applicable("library_2", task_facts(PANDAS_TASK))
    assert applicable("doc_4", facts) and applicable("doc_4", task_facts(STDIO_TASK))
    variant = _taxonomy_variant(tmp_path, "applies_when: uses_pandas", "applies_when: always")
    assert applicable("library_2", facts, variant)
    shipped_ids, variant_ids = set(), set()
    for seed in range(30):
        shipped_ids |= set(_ids(select_rule(PLAIN_TASK, k=5, seed=seed)))
        variant_ids |= set(_ids(select_rule(PLAIN_TASK, k=5, seed=seed, taxonomy=variant)))
    assert "library_2" not in shipped_ids and "library_2" in variant_ids


def test_the_llm_selectors_fill_reads_the_same_applicability(tmp_path):
    variant = _taxonomy_variant(tmp_path, "applies_when: uses_pandas", "applies_when: always")
    backend = ScriptedBackend(lambda request: _reply())
    tasks = [PLAIN_TASK.model_copy(update={"task_id": f"T/plain{i}"}) for i in range(10)]
    filled = select_llm(tasks, backend, k=5, seed=0, taxonomy=variant)
    rule = [select_rule(task, k=5, seed=0, taxonomy=variant) for task in tasks]
    assert [t.instructions for t in filled] == [t.instructions for t in rule]
    assert any("library_2" in _ids(t) for t in filled)


def test_without_reference_code_structural_rules_apply_and_error_rules_do_not():
    facts = task_facts(STDIO_TASK)
    assert not facts.has_code
    kept = {i for i in TAX.ids if applicable(i, facts)}
    unknown = {"error_1", "error_2", "error_3", "error_4", "library_1", "library_2", "style_7"}
    assert kept == set(TAX.ids) - unknown
    files = STDIO_TASK.model_copy(update={"prompt": "Read a CSV file name, print its size."})
    assert {"library_1", "style_7"} <= {i for i in TAX.ids if applicable(i, task_facts(files))}


def test_an_unknown_instruction_id_never_silently_applies():
    with pytest.raises(UnknownInstructionError, match="'stlye_2'"):
        applicable("stlye_2", task_facts(PANDAS_TASK))


def test_a_taxonomy_without_applicability_cannot_select():
    with pytest.raises(TaxonomyError, match="no applicability"):
        select_rule(PLAIN_TASK, k=5, seed=0, taxonomy=Taxonomy(list(TAX)))


# The rule selector's choices for the first 200 BigCodeBench tasks, seeds 0 and 7, saved
# before augment.py became a package and applicability became data: one line per task and
# seed with the k = 5 selection (k < 5 keeps its first k) and a digest of the scan order.
# doc_2's parameter was named max_doc_length then; it is SWE-IF's line_length now (same
# value), and the saved rows are read with that one rename.
SAVED_SELECTIONS = (
    Path(__file__).resolve().parents[1] / "data" / "augment_rule_bigcodebench200.jsonl"
)


@pytest.mark.slow
@pytest.mark.shared_data
def test_rule_selections_on_real_bigcodebench_are_unchanged(shared_data):
    path = shared_data / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
    tasks = list(load_tasks(path).values())[:200]
    saved = [
        json.loads(line.replace('"max_doc_length"', '"line_length"'))
        for line in SAVED_SELECTIONS.read_text("utf-8").splitlines()
    ]
    assert len(saved) == 2 * len(tasks)
    expected = {(row["task_id"], row["seed"]): row for row in saved}
    for seed in (0, 7):
        for task in tasks:
            row = expected[(task.task_id, seed)]
            for k in range(1, 6):
                got = select_rule(task, k=k, seed=seed)
                assert [[r.id, r.params] for r in got.instructions] == row["k5"][:k], (
                    task.task_id, seed, k,
                )
                stats = got.metadata["augment"]
                assert got.param_repairs == [] and stats["k"] == k
                order = ",".join(stats["scan_order"]).encode()
                assert hashlib.sha256(order).hexdigest()[:12] == row["order"]
