"""What ``rank`` and ``correlate`` say about an input they cannot use: one clear message.

Columns that are not mapped, a ``--tasks`` file with junk, a model name holding a lone
surrogate in a JSON table, a CSV whose last quote is never closed, a fit that needs
regularising: each ends with exit status 1 and a message naming the file, the line or
field and the option to use.
"""

from __future__ import annotations

import json
from pathlib import Path

from pj_cli import flat, invoke
from pj_files import write_jsonl
from test_rank_cli import round_robin


def test_unmapped_columns_name_the_option_once_not_every_line(tmp_path: Path) -> None:
    battles = tmp_path / "b.csv"
    battles.write_text("a,b,w\nx,y,a\nx,z,b\ny,z,a\n", encoding="utf-8")
    result = invoke("rank", battles, "--bootstrap", 0, ok=False)
    text = flat(result.output)
    assert "missing model name" not in text
    assert text.count("no such column in any row (columns: a, b, w)") == 3
    for flag in ("--model-a-col", "--model-b-col", "--winner-col"):
        assert f"name the column that holds it with {flag}" in text
    mapped = invoke(
        "rank",
        battles,
        "--bootstrap",
        0,
        "--alpha",
        0.01,
        "--model-a-col",
        "a",
        "--model-b-col",
        "b",
        "--winner-col",
        "w",
        "--winner-map",
        "a=model_a,b=model_b",
        ok=True,
    )
    assert "leaderboard" in mapped.output


def _suggest(tmp_path: Path, tasks: Path, ok: bool):
    battles = write_jsonl(
        tmp_path / "b.jsonl",
        [{**row, "task_id": f"t{i % 3}"} for i, row in enumerate(round_robin())],
    )
    return invoke("rank", battles, "--bootstrap", 0, "--suggest", 2, "--tasks", tasks, ok=ok)


def test_suggest_tasks_with_junk_after_valid_lines_is_an_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t1"}\n{"task_id": "t7"}\nJUNK junk\n', encoding="utf-8")
    text = flat(_suggest(tmp_path, tasks, ok=False).output)
    assert f"{tasks}:3: not valid JSON" in text
    tasks.write_text('{"task_id": "t1"}\n{"task_id": "t7"}\n', encoding="utf-8")
    assert "Pairs worth judging next" in flat(_suggest(tmp_path, tasks, ok=True).output)


def test_suggest_takes_the_union_of_repeated_tasks_files(tmp_path: Path) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first.write_text('{"task_id": "t8"}\n{"task_id": "t1"}\n', encoding="utf-8")
    second.write_text('{"task_id": "t1"}\n', encoding="utf-8")
    battles = write_jsonl(
        tmp_path / "b.jsonl",
        [{**row, "task_id": f"t{i % 3}"} for i, row in enumerate(round_robin())],
    )
    json_path = tmp_path / "r.json"
    invoke("rank", battles, "--bootstrap", 0, "--suggest", 2, "--tasks", first, "--tasks",
           second, "--json", json_path, ok=True)
    untried = {t for s in json.loads(json_path.read_text())["suggestions"]
               for t in s["untried_tasks"]}
    assert "t8" in untried  # only the first file has it: both files were read


def test_suggest_tasks_without_a_text_task_id_is_an_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t1"}\n{"name": "t2"}\n{"task_id": ["t3"]}\n', encoding="utf-8")
    text = flat(_suggest(tmp_path, tasks, ok=False).output)
    assert f"{tasks}:2: field 'task_id': missing" in text
    assert f"{tasks}:3: field 'task_id': must be text, got ['t3']" in text


def test_correlate_on_a_json_name_with_a_lone_surrogate_says_which(tmp_path: Path) -> None:
    table = tmp_path / "t.json"
    rows = [
        {"model": name, "func": 0.1 * i, "if": (0.3 * i) % 1, "rating": 1000 + 17 * i}
        for i, name in enumerate(["m\udcff", "a", "b", "c", "d"])
    ]
    table.write_text(json.dumps(rows), encoding="utf-8")  # json writes the escape \udcff
    text = flat(invoke("correlate", table, "--bootstrap", 0, ok=False).output)
    assert f"{table}: field '[0].model': not valid Unicode (lone surrogate \\udcff)" in text


def test_rank_on_a_json_battle_with_a_lone_surrogate_says_which(tmp_path: Path) -> None:
    battles = tmp_path / "b.json"
    rows = [
        {**row, "model_a": row["model_a"] + "\udcff"} if i == 4 else row
        for i, row in enumerate(round_robin())
    ]
    battles.write_text(json.dumps(rows), encoding="utf-8")
    text = flat(invoke("rank", battles, "--bootstrap", 0, ok=False).output)
    assert "field '[4].model_a': not valid Unicode (lone surrogate \\udcff)" in text


def test_a_csv_whose_last_quote_is_never_closed_is_an_error(tmp_path: Path) -> None:
    elo = tmp_path / "elo.csv"
    elo.write_text('model,rating\na,1000\nb,1010\nc,990\n"unterminated\n', encoding="utf-8")
    scores = tmp_path / "scores.csv"
    scores.write_text("model,func,if\na,0.1,0.2\nb,0.5,0.4\nc,0.3,0.9\n", encoding="utf-8")
    text = flat(invoke("correlate", scores, "--elo", elo, "--bootstrap", 0, ok=False).output)
    assert f"{elo}:5: malformed CSV (unexpected end of data)" in text


def test_a_fit_that_needs_regularising_names_the_option(tmp_path: Path) -> None:
    battles = write_jsonl(
        tmp_path / "b.jsonl",
        [{"model_a": "a", "model_b": "b", "winner": "model_a"}] * 3
        + [{"model_a": "b", "model_b": "c", "winner": "model_a"}] * 3,
    )
    text = flat(invoke("rank", battles, "--bootstrap", 0, ok=False).output)
    assert "regularise the fit with --alpha > 0 (e.g. --alpha 0.01" in text
    assert "with alpha > 0" not in text


def test_a_csv_row_with_another_number_of_cells_is_an_error(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "model,func,if,rating\na,0.1,0.2,1000\nb,0.5,0.4,1010\nc,0.3,0.9,990\njunk\n",
        encoding="utf-8",
    )
    text = flat(invoke("correlate", scores, "--bootstrap", 0, ok=False).output)
    assert f"{scores}:5: 1 cell(s) where the header has 4" in text


def test_a_feature_count_beyond_any_float_is_a_message(tmp_path: Path) -> None:
    rows = [
        {**row, "features_a": {"token_len": 10}, "features_b": {"token_len": 12}}
        for row in round_robin()
    ]
    rows[2]["features_a"]["token_len"] = -(10**400)
    battles = tmp_path / "b.jsonl"
    battles.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    text = flat(invoke("rank", battles, "--bootstrap", 0, ok=False).output)
    assert f"{battles}:3: field 'features_a.token_len': must be a number >= 0" in text
    assert len(text) < 1000


def test_the_forest_plot_draws_an_interval_that_misses_its_point(tmp_path: Path) -> None:
    import pandas as pd

    from prefjudge.plots.ranking import forest_plot

    table = pd.DataFrame(
        {
            "model": ["a", "b"],
            "rating": [1193.0, 900.0],
            "lower": [1200.0, 850.0],
            "upper": [1250.0, 950.0],
        }
    )  # a regularised fit's bootstrap interval need not hold the point estimate
    forest_plot({"Elo": table}, tmp_path / "f.png", xlabel="Elo")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
