import gzip
import json

import pytest

from prefjudge.io import InputError, read_existing, read_records
from prefjudge.records import Generation


def test_read_records_reports_file_line_and_field(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(
        json.dumps({"task_id": "t", "model": "m", "response": "x"}) + "\n"
        "\n"
        "{not json\n"
        + json.dumps({"task_id": "t", "response": "x"}) + "\n"
    )
    with pytest.raises(InputError) as info:
        read_records(path, Generation)
    text = str(info.value)
    assert f"{path}:3:" in text and "not valid JSON" in text
    assert f"{path}:4: field 'model'" in text
    records, issues = read_records(path, Generation, collect=True)
    assert [line for line, _ in records] == [1] and len(issues) == 2


def test_gzip_is_detected_by_content(tmp_path):
    path = tmp_path / "plain-name.jsonl"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps({"task_id": "t", "model": "m", "response": "r", "extra": 1}) + "\n")
    (line, record), = read_records(path, Generation)[0]
    assert line == 1 and record.model_extra == {"extra": 1}


def test_read_existing_ignores_a_partial_last_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"a": 1}\n{"a": 2')  # a crash mid-line
    assert read_existing(path) == [{"a": 1}]
