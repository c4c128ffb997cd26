"""Pair sources are resolved and fetched as task sources are; pair rows share their checks.

``open_preference_source`` fetches through :func:`prefjudge.scoring.sources.fetch_source`
(a file: itself; a dataset folder: its rows), and the CodePrefBench and BigCodeReward row
converters report a row's id and instruction problems through one :class:`RowIssues`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefjudge.io import InputIssue
from prefjudge.judge.pairs import load_pairs, open_preference_source
from prefjudge.judge.pairs.formats.base import RowIssues, convert_rows
from prefjudge.judge.pairs.formats.bigcodereward import bigcodereward_pairs
from prefjudge.judge.pairs.formats.codeprefbench import codeprefbench_pairs
from prefjudge.scoring.sources import fetch_source, resolve_source

ROWS = [
    {"task_id": f"HumanEval/{n}", "instruction": f"Write f{n}.",
     "choices": [f"def f{n}(): return 1", f"def f{n}(): return 2"], "gt_choice": n % 2}
    for n in range(4)
]


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_pair_file_is_fetched_as_a_task_file_is(tmp_path: Path) -> None:
    path = _write(tmp_path / "pairs.jsonl", ROWS)
    pairs, issues, origin = open_preference_source(path, limit=3)
    fetched = fetch_source(resolve_source(path, "pairs", 3))
    assert origin == fetched.origin and fetched.files == (path,)
    assert issues == [] and pairs == load_pairs(path)[0][:3]
    assert [p.label for p in pairs] == ["A", "B", "A"]


def test_a_dataset_folder_of_pairs_is_read_from_its_rows(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(folder))
    pairs, issues, origin = open_preference_source(folder)
    fetched = fetch_source(resolve_source(folder, "pairs"))
    assert fetched.rows is not None and origin == fetched.origin
    assert issues == [] and [p.task_id for p in pairs] == [r["task_id"] for r in ROWS]
    assert [p.response_b for p in pairs] == [r["choices"][1] for r in ROWS]


def test_both_converters_word_a_bad_id_and_instruction_alike() -> None:
    cpb = {"task_id": "", "instruction": 7, "choices": ["a", "b"], "gt_choice": 0}
    bcr = {"chat_session_id": None, "instruction": ["x"], "human_vote": "leftvote",
           "model_A": "m1", "model_B": "", "response_A": "a", "response_B": "b"}
    _, cpb_issues = codeprefbench_pairs([(3, cpb)], "f.jsonl", "codeprefbench:f")
    _, bcr_issues = bigcodereward_pairs([(5, bcr)], "g.jsonl", "bigcodereward:g")
    assert [(i.line, i.field, i.message) for i in cpb_issues] == [
        (3, "task_id", "expected a non-empty string"),
        (3, "instruction", "expected a string"),
    ]
    assert [(i.line, i.field, i.message) for i in bcr_issues][:3] == [
        (5, "chat_session_id", "expected a non-empty string"),
        (5, "instruction", "expected a string"),
        (5, "model_B", "expected a non-empty string"),
    ]


def test_convert_rows_keeps_order_and_earlier_issues() -> None:
    earlier = InputIssue("f", 1, "", "not JSON")

    def convert(number: int, data: dict[str, object]) -> list[InputIssue]:
        issues = RowIssues("f", number)
        issues.key(data, "id")
        return issues

    pairs, issues = convert_rows([(1, earlier), (2, {"id": ""}), (3, {"id": "ok"})], convert)
    assert pairs == [] and issues == [earlier, InputIssue("f", 2, "id",
                                                          "expected a non-empty string")]
