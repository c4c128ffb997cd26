"""Reading battles, score tables, Elo tables and aliases (prefjudge.ranking.inputs)."""

from __future__ import annotations

import gzip
import json

import pytest
from pj_files import write_jsonl

from prefjudge.io import InputError
from prefjudge.ranking.inputs import (
    BattleColumns,
    is_scored_records,
    parse_winner_map,
    read_aliases,
    read_battles,
    read_model_table,
    read_scored_records,
)


def test_csv_line_numbers_count_multiline_fields(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(
        'prompt,model_a,model_b,winner\n'
        '"two\nlines",x,y,model_a\n'
        'one,x,y,sideways\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        read_battles(path)
    assert str(info.value.issues[0]).startswith(f"{path}:4: field 'winner': unknown winner label")


def test_gzipped_jsonl_and_json_array_and_bom_csv(tmp_path):
    rows = [{"model_a": "x", "model_b": "y", "winner": "tie", "weight": 2}]
    gz = tmp_path / "b.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(rows[0]) + "\n")
    frame, _ = read_battles(gz)
    assert frame.loc[0, "weight"] == 2.0 and frame.loc[0, "line"] == 1
    array = tmp_path / "b.json"
    array.write_text(json.dumps([*rows, {"model_a": "x", "winner": "tie"}]), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_battles(array)
    assert "field '[1].model_b': missing model name" in str(info.value)
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffmodel_a,model_b,winner\nx,y,model_b\n".encode())
    assert read_battles(bom)[0].loc[0, "winner"] == "model_b"


def test_winner_map_and_numeric_labels(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("a,b,accepted\nx,y,0.0\nx,y,1\n", encoding="utf-8")
    frame, _ = read_battles(path, columns=BattleColumns("a", "b", "accepted"),
                            winner_map=parse_winner_map("0=model_a, 1=model_b"))
    assert frame["winner"].tolist() == ["model_a", "model_b"]
    with pytest.raises(ValueError, match="must be one of"):
        parse_winner_map("left=a")
    with pytest.raises(ValueError, match="LABEL=TARGET"):
        parse_winner_map("left")


def test_bad_weight_and_skip_invalid(tmp_path):
    path = tmp_path / "b.jsonl"
    lines = [{"model_a": "x", "model_b": "y", "winner": "tie", "weight": -1},
             {"model_a": "x", "model_b": "y", "winner": "model_a", "weight": "heavy"},
             {"model_a": "x", "model_b": "y", "winner": "model_a"}]
    write_jsonl(path, lines)
    with pytest.raises(InputError) as info:
        read_battles(path)
    assert len(info.value.issues) == 2
    frame, issues = read_battles(path, skip_invalid=True)
    assert len(frame) == 1 and [i.line for i in issues] == [1, 2]


def test_model_table_errors_are_located(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("model,func,if\na,1,2\nb,x,3\na,4,5\nc,,6\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_model_table(path, "model", ["func", "if"])
    text = str(info.value)
    assert f"{path}:3: field 'func': not a number: 'x'" in text
    assert f"{path}:4: field 'model': model 'a' appears twice (first at 2)" in text
    path.write_text("model,func,if\na,1,2\nc,,6\n", encoding="utf-8")
    table = read_model_table(path, "model", ["func", "if"])
    assert table["func"].isna().tolist() == [False, True]
    with pytest.raises(InputError, match="no such column"):
        read_model_table(path, "model", ["elo"])


def test_rank_json_output_reads_as_an_elo_table(tmp_path):
    path = tmp_path / "ratings.json"
    path.write_text(json.dumps({"scale": "elo", "ratings": [{"model": "a", "rating": 1010},
                                                            {"model": "b", "rating": 990}]}),
                    encoding="utf-8")
    table = read_model_table(path, "model", ["rating"])
    assert table["rating"].tolist() == [1010.0, 990.0]


def test_scored_records_and_aliases(tmp_path):
    path = tmp_path / "scored.jsonl"
    path.write_text(
        json.dumps({"model": "m", "if_instruction": 0.5, "func": {"status": "pass"},
                    "instructions": [{}, {}]}) + "\n"
        + json.dumps({"model": "m", "if_instruction": None, "func": None}) + "\n",
        encoding="utf-8",
    )
    assert is_scored_records(path)
    records = read_scored_records(path)
    assert records[0] == {"model": "m", "if_instruction": 0.5, "func_pass": True,
                          "n_instructions": 2}
    assert records[1]["func_pass"] is None
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"model": "m", "if_instruction": "high"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="if_instruction"):
        read_scored_records(bad)
    aliases = tmp_path / "aliases.csv"
    aliases.write_text("score_model,elo_model\na,A\na,B\n", encoding="utf-8")
    with pytest.raises(InputError, match="mapped twice"):
        read_aliases(aliases)
    aliases.write_text("score_model,elo_model\na,A\n", encoding="utf-8")
    assert read_aliases(aliases) == {"a": "A"}
