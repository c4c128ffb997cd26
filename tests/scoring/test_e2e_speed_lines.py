"""``prefjudge score``'s fast path writes what the records would: line for line, row for row.

The command takes each record's line and summary row straight from scoring
(:class:`prefjudge.scoring.rows.Scored`) instead of building and dumping a
:class:`~prefjudge.records.ScoredSample`; these tests hold the two ways equal on real
files, real Ruff runs and every shape of generation the readers accept.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from prefjudge.journal import Journal, JournalError, record_line
from prefjudge.records import CheckResult, FuncResult, Generation, ScoredSample, SetResult
from prefjudge.reporting import SilentReporter
from prefjudge.scoring.rows import Scored, sample_row
from prefjudge.scoring.run import ScoreSettings, score_file
from prefjudge.scoring.score import prepare_job, score_stream, scored_batches

CODE = "import os\n\n\ndef add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b\n"
REFS = [{"id": "doc_1"}, {"id": "logic_1", "params": {}}]

LINES = [
    {"id": "plain", "task_id": "t1", "model": "m", "response": CODE, "instructions": REFS},
    {"task_id": "t1", "model": "m", "response": f"Here:\n```python\n{CODE}```\nÉté ✓",
     "instructions": REFS},
    {"zeta": [1, {"b": 2, "a": None}], "id": "extras", "model": "m", "task_id": "t2",
     "k": 2.0, "response": CODE, "sample": 3, "alpha": "é", "instructions": REFS,
     "protocol": "single"},
    {"id": "stale", "task_id": "t2", "model": "m", "response": CODE, "instructions": REFS,
     "meta": {"old": 1}, "instruction_results": [], "if_task": True, "status": "ok",
     "func": None, "note": "kept"},
    {"id": "multi", "task_id": "t3", "model": "m", "response": CODE, "protocol": "multi",
     "k": 2, "instructions": REFS, "turns": [
         {"index": 1, "prompt": "p", "response": CODE, "extra": "x"},
         {"prompt": "q", "index": 2, "response": CODE, "instruction": REFS[0]},
         {"index": 3, "prompt": "r", "response": CODE, "instruction": REFS[1]}]},
    {"id": "failed", "task_id": "t3", "model": "m", "response": "", "instructions": REFS,
     "error": "HTTP 500", "protocol": "single", "k": 2},
    {"id": "code", "task_id": "t4", "model": "m2", "response": CODE, "instructions": [],
     "response_is_code": True},
]


def _job(tmp_path: Path):
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in LINES),
                    encoding="utf-8")
    return path, prepare_job(path, {})


def _same_row(fast: tuple, slow: tuple) -> bool:
    return len(fast) == len(slow) and all(
        (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        or (a == b and type(a) is type(b)) for a, b in zip(fast, slow, strict=True))


@pytest.mark.parametrize("separate_process", [False, True])
def test_each_line_and_row_is_the_records_own(tmp_path, separate_process):
    _, job = _job(tmp_path)
    items = [item for batch in scored_batches(job, workers=2, chunk_size=3,
                                              separate_process=separate_process)
             for item in batch]
    assert [item.key for item in items] == job.keys
    for item in items:
        record = item.sample()
        line = item.line()
        assert line == record_line(record), item.key
        assert ScoredSample.model_validate_json(line) == record
        assert _same_row(item.row(), sample_row(record)), item.key
    written = {item.key: json.loads(item.line()) for item in items}
    assert list(written["m::stale"])[-1] == "note" and written["m::stale"]["meta"]["key"]
    assert written["m::failed"]["status"] == "error"
    assert written["m::multi"]["turn_results"] is not None
    assert list(written["m::extras"])[-4:] == ["k", "sample", "alpha", "protocol"]


def test_tests_results_and_packed_checks_are_written_as_records(tmp_path):
    _, job = _job(tmp_path)
    gen = job.generations[0][1]
    packed = [("doc_1", {}, "pass", ""), ("logic_1", {"n": [1, 2]}, "error", "ruff: é")]
    models = [CheckResult(id=i, params=p, status=s, reason=r) for i, p, s, r in packed]
    func = FuncResult(status="fail", detail="1 failed",
                      sets={"base": SetResult(status="pass"),
                            "plus": SetResult(status="fail", failed=[3])})
    meta = {"ruff_version": "x", "sandbox": "bwrap"}
    for checks in (packed, models):
        item = Scored("m::plain", gen, checks, 1.0, None, func, None, meta)
        assert item.line() == record_line(item.sample())
        assert _same_row(item.row(), sample_row(item.sample()))
        assert item.row()[7] == 1, "one check ended in error"
    without_sets = Scored("m::plain", gen, packed, 0.5, False, FuncResult(status="pass"),
                          None, meta)
    assert '"sets"' not in without_sets.line()
    assert without_sets.line() == record_line(without_sets.sample())


def test_a_number_json_cannot_hold_is_written_as_the_record_writes_it(tmp_path):
    gen = Generation(id="g", task_id="t", model="m", response="x = 1\n", instructions=[])
    item = Scored("m::g", gen, [("doc_1", {"ratio": float("nan")}, "pass", "")], 1.0, True,
                  None, None, {})
    line = item.line()
    assert line == record_line(item.sample())
    assert "NaN" not in line and json.loads(line)["instruction_results"][0]["params"] == {
        "ratio": None}


def test_score_file_writes_the_records_score_stream_makes(tmp_path):
    path, job = _job(tmp_path)
    out = tmp_path / "scores.jsonl"
    outcome = score_file(ScoreSettings(path, output=out, workers=2, bootstrap=20),
                         SilentReporter())
    expected = "".join(record_line(rec) + "\n" for rec in score_stream(job, workers=2))
    assert out.read_text(encoding="utf-8") == expected
    assert outcome.records == outcome.scored == len(LINES)
    again = score_file(ScoreSettings(path, output=out, workers=2, bootstrap=20),
                       SilentReporter())
    assert (again.resumed, again.scored) == (len(LINES), 0)
    assert again.table.rows == outcome.table.rows, "the resumed records give the same summary"


def test_write_lines_holds_keys_refuses_repeats_and_reads_back(tmp_path):
    gen = Generation(id="g", task_id="t", model="m", response="x", instructions=[])
    records = [ScoredSample(**gen.model_dump(), meta={"key": key}) for key in ("a", "b")]
    out = tmp_path / "out.jsonl"
    key = lambda rec: str(rec.meta["key"])  # noqa: E731
    with Journal(out, ScoredSample, key, stage="score") as journal:
        journal.write_lines([("a", record_line(records[0]))])
        with pytest.raises(JournalError, match="already there"):
            journal.write_lines([("b", record_line(records[1])), ("a", "{}")])
        journal.write_lines([("b", record_line(records[1]))])
        assert journal.records() == records and journal.written == 2
    with Journal(out, ScoredSample, key, stage="score") as journal:
        assert list(journal.done) == ["a", "b"]


def test_a_parameter_checked_once_is_not_taken_for_an_equal_value_of_another_type(tmp_path):
    lines = [{"id": f"g{index}", "task_id": "t", "model": "m", "response": CODE,
              "instructions": [{"id": "style_3", "params": {"line_length": value}}]}
             for index, value in enumerate([100, 1, True, 1.0, 100])]
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    job = prepare_job(path, {}, skip_invalid=True)
    assert [gen.id for _, gen in job.generations] == ["g0", "g1", "g4"]
    assert [(issue.line, issue.field) for issue in job.skipped] == [
        (3, "instructions.0.params.line_length"), (4, "instructions.0.params.line_length")]
    assert "bool" in job.skipped[0].message and "float" in job.skipped[1].message
    values = [gen.instructions[0].params["line_length"] for _, gen in job.generations]
    assert values == [100, 1, 100] and [type(value) for value in values] == [int, int, int]
