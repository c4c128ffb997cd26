"""``prefjudge rank`` and ``prefjudge correlate`` through click's CliRunner."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest
from pj_cli import invoke
from pj_files import write_jsonl

CONTRACT = ["model", "rating", "lower", "upper", "rank", "rank_lower", "rank_upper", "battles",
            "win_rate"]


def round_robin(models=("alpha", "beta", "gamma", "delta"), category=None) -> list[dict]:
    """Every pair plays both ways; earlier models win more often."""
    rows = []
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            if i >= j:
                continue
            rows += [{"model_a": a, "model_b": b, "winner": "model_a"}] * (3 + j - i)
            rows += [{"model_a": b, "model_b": a, "winner": "model_a"}] * 2
            rows += [{"model_a": a, "model_b": b, "winner": "tie"}]
    if category:
        for row in rows:
            row["category"] = category
    return rows


# --------------------------------------------------------------------------- rank


def test_rank_writes_contract_csv_json_and_png(tmp_path):
    battles = write_jsonl(tmp_path / "battles.jsonl", round_robin())
    out, js, png = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.png"
    result = invoke("rank", battles, "-o", out, "--json", js, "--plot", png, "--bootstrap", 100)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert list(table.columns) == CONTRACT
    assert table["model"].tolist() == ["alpha", "beta", "gamma", "delta"]
    assert table["rating"].mean() == pytest.approx(1000)
    assert (table["lower"] <= table["rating"]).all() and (table["rating"] <= table["upper"]).all()
    payload = json.loads(js.read_text())
    assert payload["formula"].startswith("rating = BASE + 400/ln(10)")
    assert [r["model"] for r in payload["ratings"]] == table["model"].tolist()
    assert payload["n_battles"] == sum(1 for _ in battles.open())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "alpha" in result.output and "95% CI" in result.output


def test_rank_scale_bt_sums_to_one_and_anchor_pins_a_model(tmp_path):
    battles = write_jsonl(tmp_path / "b.jsonl", round_robin())
    out = tmp_path / "bt.csv"
    assert invoke("rank", battles, "--scale", "bt", "-o", out, "--bootstrap", 20).exit_code == 0
    assert pd.read_csv(out)["rating"].sum() == pytest.approx(1.0)
    anchored = tmp_path / "anchored.csv"
    result = invoke("rank", battles, "--anchor", "gamma=1500", "-o", anchored, "--bootstrap", 20)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(anchored).set_index("model")
    assert table.at["gamma", "rating"] == pytest.approx(1500)
    assert table.at["gamma", "lower"] == pytest.approx(1500)  # the anchor has no spread


def test_rank_help_documents_the_elo_formula():
    result = invoke("rank", "--help")
    assert "400/ln(10) * (theta - mean(theta))" in result.output
    assert "theta_M" in result.output


def test_unknown_winner_label_is_reported_with_file_and_line(tmp_path):
    rows = round_robin()
    rows[4] = {"model_a": "alpha", "model_b": "beta", "winner": "left"}
    battles = write_jsonl(tmp_path / "bad.jsonl", rows)
    result = invoke("rank", battles)
    assert result.exit_code != 0
    assert f"{battles}:5: field 'winner': unknown winner label 'left'" in result.output
    assert "--winner-map" in result.output
    mapped = invoke("rank", battles, "--winner-map", "left=model_a", "--bootstrap", 10)
    assert mapped.exit_code == 0, mapped.output


def test_empty_file_and_single_model_get_clear_messages(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    result = invoke("rank", empty)
    assert result.exit_code != 0 and "no battles in the file (it is empty)" in result.output
    single = write_jsonl(tmp_path / "single.jsonl",
                         [{"model_a": "solo", "model_b": "solo", "winner": "tie"}])
    result = invoke("rank", single)
    assert result.exit_code != 0
    assert "model_a and model_b are the same model 'solo'" in result.output


def test_disconnected_graph_lists_components_unless_opted_in(tmp_path):
    rows = round_robin(("a", "b")) + round_robin(("c", "d", "e"))
    battles = write_jsonl(tmp_path / "split.jsonl", rows)
    result = invoke("rank", battles)
    assert result.exit_code != 0
    assert "2 disconnected components" in result.output and "[c, d, e]" in result.output
    joined = invoke("rank", battles, "--allow-disconnected", "--alpha", "0.01", "--bootstrap", 20)
    assert joined.exit_code == 0, joined.output
    assert "joined only by the regulariser" in joined.output


def test_never_lost_model_needs_regularisation(tmp_path):
    rows = [*round_robin(("b", "c")), {"model_a": "a", "model_b": "b", "winner": "model_a"}]
    battles = write_jsonl(tmp_path / "top.jsonl", rows)
    result = invoke("rank", battles)
    assert result.exit_code != 0 and "never lost" in result.output and "alpha" in result.output
    assert invoke("rank", battles, "--alpha", "0.05", "--bootstrap", 10).exit_code == 0


def test_anchor_model_missing_is_an_error(tmp_path):
    battles = write_jsonl(tmp_path / "b.jsonl", round_robin())
    result = invoke("rank", battles, "--anchor", "omega=1200")
    assert result.exit_code != 0 and "'omega' does not appear in the battles" in result.output


def test_rank_by_category_and_failed_category_is_listed(tmp_path):
    rows = round_robin(category="python") + round_robin(("x", "y"), category="sql")
    rows.append({"model_a": "p", "model_b": "q", "winner": "model_a", "category": "rust"})
    battles = write_jsonl(tmp_path / "cats.jsonl", rows)
    out, js = tmp_path / "cats.csv", tmp_path / "cats.json"
    result = invoke("rank", battles, "--by", "category", "-o", out, "--json", js,
                    "--bootstrap", 20)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert list(table.columns) == ["category", *CONTRACT]
    assert sorted(table["category"].unique()) == ["python", "sql"]
    payload = json.loads(js.read_text())
    assert "rust" in payload["failed"] and "never lost" in payload["failed"]["rust"]
    assert "category 'rust' not ranked" in result.output


def test_rank_reads_csv_with_custom_columns_and_weights(tmp_path):
    path = tmp_path / "votes.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["left", "right", "verdict", "w"])
        for row in round_robin():
            label = {"model_a": "left", "model_b": "right", "tie": "tie"}[row["winner"]]
            writer.writerow([row["model_a"], row["model_b"], label, "2"])
    out = tmp_path / "r.csv"
    result = invoke("rank", path, "--model-a-col", "left", "--model-b-col", "right",
                    "--winner-col", "verdict", "--weight-col", "w",
                    "--winner-map", "left=model_a,right=model_b", "-o", out, "--bootstrap", 0)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert table["model"].iloc[0] == "alpha"
    assert table["battles"].sum() == 2 * 2 * sum(1 for _ in round_robin())


def test_rank_davidson_reports_tie_strength(tmp_path):
    battles = write_jsonl(tmp_path / "b.jsonl", round_robin())
    js = tmp_path / "d.json"
    result = invoke("rank", battles, "--ties", "davidson", "--json", js, "--bootstrap", 20)
    assert result.exit_code == 0, result.output
    assert json.loads(js.read_text())["tie_strength"] > 0
    assert "Davidson tie strength" in result.output


@pytest.mark.shared_data
def test_rank_copilot_arena_real_battles(shared_data, tmp_path):
    path = shared_data / "preferences/copilot_arena/copilot_arena_examples_v1.csv"
    strict = invoke("rank", path, "--winner-col", "acceptedIndex",
                    "--winner-map", "0=model_a,1=model_b")
    assert strict.exit_code != 0
    assert f"{path}:2484: 1 cell(s) where the header has 7" in strict.output
    out = tmp_path / "copilot.csv"
    result = invoke("rank", path, "--winner-col", "acceptedIndex",
                    "--winner-map", "0=model_a,1=model_b", "--skip-invalid", "-o", out,
                    "--bootstrap", 100)
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output
    assert len(pd.read_csv(out)) == 11


# --------------------------------------------------------------------------- correlate


@pytest.mark.shared_data
def test_correlate_paper_table_json_contract(shared_data, tmp_path):
    scores = shared_data / "paper/swe_if_scores/model_scores_with_arena.csv"
    js, out, png = tmp_path / "c.json", tmp_path / "c.csv", tmp_path / "c.png"
    result = invoke("correlate", scores, "--func-col", "bcb_func", "--if-col", "bcb_if_1",
                    "--if-col", "bcb_if_5", "--elo-col", "arena_default", "--bootstrap", 200,
                    "--json", js, "-o", out, "--plot", png)
    assert result.exit_code == 0, result.output
    payload = json.loads(js.read_text())
    assert payload["alpha_is"] == "weight on IF"
    assert {k: payload["best"][k]["alpha"] for k in ("pearson", "spearman", "kendall")} == {
        "pearson": 0.4, "spearman": 0.7, "kendall": 0.7}
    best = payload["best"]["pearson"]
    assert best["ci"][0] < best["r"] < best["ci"][1]
    assert [round(p["alpha"], 1) for p in payload["curve"]] == [i / 10 for i in range(11)]
    assert set(payload["curve"][0]) >= {"alpha", "pearson", "spearman", "kendall"}
    assert len(payload["models"]) == 30
    assert payload["unmatched"] == {"scores": [], "elo": []}
    assert [p["if_col"] for p in payload["per_if"]] == ["bcb_if_1", "bcb_if_5"]
    assert len(pd.read_csv(out)) == 22
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.shared_data
def test_correlate_lists_incomplete_models(shared_data, tmp_path):
    scores = shared_data / "paper/swe_if_scores/model_scores_with_arena.csv"
    js = tmp_path / "lcb.json"
    result = invoke("correlate", scores, "--func-col", "lcb_func", "--if-col", "lcb_if_1",
                    "--elo-col", "arena_remove_style_control", "--bootstrap", 0, "--json", js)
    assert result.exit_code == 0, result.output
    payload = json.loads(js.read_text())
    assert len(payload["models"]) == 23 and "grok-4-0709" in payload["incomplete"]
    assert payload["best"]["pearson"]["alpha"] == 0.3
    assert "left out of the lcb_if_1 sweep" in result.output


def test_correlate_separate_elo_file_aliases_and_unmatched(tmp_path):
    scores = tmp_path / "scores.csv"
    pd.DataFrame({
        "name": ["m1", "m2", "m3", "m4", "m5"],
        "func": [0.2, 0.4, 0.5, 0.7, 0.9],
        "if": [0.9, 0.5, 0.6, 0.8, 0.3],
    }).to_csv(scores, index=False)
    elo = tmp_path / "elo.csv"
    pd.DataFrame({"name": ["m1", "m2", "model-three", "m4", "other"],
                  "rating": [1000, 1010, 1040, 1100, 1200]}).to_csv(elo, index=False)
    aliases = tmp_path / "aliases.json"
    aliases.write_text(json.dumps({"m3": "model-three"}), encoding="utf-8")
    js = tmp_path / "out.json"
    result = invoke("correlate", scores, "--elo", elo, "--model-col", "name", "--aliases",
                    aliases, "--bootstrap", 50, "--json", js)
    assert result.exit_code == 0, result.output
    payload = json.loads(js.read_text())
    assert payload["unmatched"] == {"scores": ["m5"], "elo": ["other"]}
    assert [m["match"] for m in payload["models"]] == ["exact", "exact", "alias", "exact"]
    assert "no Elo rating" in result.output and "m5" in result.output
    strict = invoke("correlate", scores, "--elo", elo, "--model-col", "name", "--aliases",
                    aliases, "--require-all")
    assert strict.exit_code != 0 and "missing from the Elo file: m5" in strict.output


def test_correlate_from_scored_records(tmp_path):
    rows = []
    for model, passes, if_values in (("a", [1, 1, 0, 1], [1.0, 1.0, 0.5, None]),
                                     ("b", [0, 0, 1, 0], [0.5, 0.0, 0.0, 1.0]),
                                     ("c", [1, 0, 1, 0], [1.0, 0.5, 1.0, 0.5]),
                                     ("d", [1, 1, 1, 1], [0.0, 0.5, 0.5, 0.0])):
        for k, (passed, value) in enumerate(zip(passes, if_values, strict=True)):
            rows.append({"id": f"{model}{k}", "task_id": f"t{k}", "model": model,
                         "response": "", "instructions": [{"id": "x"}] * (1 + k % 2),
                         "if_instruction": value,
                         "func": {"status": "pass" if passed else "fail"}})
    records = write_jsonl(tmp_path / "scored.jsonl", rows)
    elo = tmp_path / "elo.csv"
    pd.DataFrame({"model": ["a", "b", "c", "d"], "rating": [1100, 950, 1020, 1000]}).to_csv(
        elo, index=False)
    js = tmp_path / "r.json"
    result = invoke("correlate", records, "--elo", elo, "--if-col", "if", "--if-col", "if_2",
                    "--bootstrap", 20, "--json", js)
    assert result.exit_code == 0, result.output
    models = {m["model"]: m for m in json.loads(js.read_text())["models"]}
    assert models["a"]["func"] == 0.75 and models["a"]["if"] == pytest.approx(2.5 / 3)
    no_elo = invoke("correlate", records)
    assert no_elo.exit_code != 0 and "pass --elo" in no_elo.output


def test_correlate_too_few_models_and_bad_column(tmp_path):
    scores = tmp_path / "s.csv"
    pd.DataFrame({"model": ["a", "b"], "func": [1, 2], "if": [2, 1],
                  "rating": [1, 2]}).to_csv(scores, index=False)
    result = invoke("correlate", scores)
    assert result.exit_code != 0 and "at least three models" in result.output
    result = invoke("correlate", scores, "--func-col", "nope")
    assert result.exit_code != 0 and "field 'nope': no such column" in result.output


def test_rank_output_feeds_correlate(tmp_path):
    battles = write_jsonl(tmp_path / "b.jsonl", round_robin())
    ratings = tmp_path / "ratings.csv"
    assert invoke("rank", battles, "-o", ratings, "--bootstrap", 0).exit_code == 0
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"model": ["alpha", "beta", "gamma", "delta"], "func": [0.9, 0.6, 0.5, 0.1],
                  "if": [0.2, 0.8, 0.4, 0.3]}).to_csv(scores, index=False)
    js = tmp_path / "c.json"
    result = invoke("correlate", scores, "--elo", ratings, "--bootstrap", 0, "--json", js)
    assert result.exit_code == 0, result.output
    payload = json.loads(js.read_text())
    assert payload["best"]["spearman"]["r"] == pytest.approx(1.0)
    assert payload["best"]["spearman"]["alpha"] == 0.3  # largest α that keeps Func's order
