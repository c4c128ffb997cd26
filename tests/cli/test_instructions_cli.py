"""``prefjudge instructions`` through click's CliRunner."""

from __future__ import annotations

import json

from pj_cli import WIDE, invoke

from prefjudge.scoring.taxonomy import load_taxonomy


def instructions(*args: str):
    return invoke("instructions", *args, env=WIDE)


def test_table_lists_every_instruction_by_category_with_parameters():
    result = instructions()
    assert result.exit_code == 0, result.output
    for spec in load_taxonomy():
        assert spec.id in result.output
    for heading in (
        "style (9)",
        "logic (9)",
        "documentation (6)",
        "error_handling (4)",
        "library (2)",
    ):
        assert heading in result.output
    assert "line_length = 79 (79–120); recommended 79, 88" in result.output
    assert "convention = pep257 (google|numpy|pep257)" in result.output
    assert "Ruff PLR1702 (preview)" in result.output
    assert result.output.index("style (9)") < result.output.index("library (2)")


def test_category_filter():
    result = instructions("--category", "error_handling")
    assert result.exit_code == 0, result.output
    assert "error_1" in result.output and "error_4" in result.output
    assert "style_1" not in result.output and "doc_1" not in result.output


def test_json_gives_every_field():
    result = instructions("--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [entry["id"] for entry in data] == load_taxonomy().ids
    style_3 = data[2]
    assert set(style_3) == {
        "id",
        "category",
        "name",
        "description",
        "prompt_single",
        "prompt_multi",
        "params",
        "verifier",
        "conflicts",
    }
    assert style_3["params"][0] == {
        "name": "line_length",
        "type": "int",
        "default": 79,
        "min": 79,
        "max": 120,
        "choices": None,
        "recommended": [79, 88],
        "description": "Longest allowed line, in characters.",
        "aliases": [],
        "valid_min": 1,
        "valid_max": 320,
    }
    assert style_3["verifier"]["settings"] == {"lint.pycodestyle.max-line-length": "{line_length}"}
    assert data[29]["conflicts"] == [] and data[22]["conflicts"] == ["doc_2", "doc_3"]


def test_json_with_category():
    data = json.loads(instructions("--category", "library", "--format", "json").output)
    assert [entry["id"] for entry in data] == ["library_1", "library_2"]


def test_unknown_category_is_a_usage_error():
    result = instructions("--category", "nope")
    assert result.exit_code == 2
    assert "Invalid value for '--category'" in result.output
