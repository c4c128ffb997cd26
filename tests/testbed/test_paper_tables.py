"""The SWE-IF paper's per-model tables: loader, FR_k, and their place in the report."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from prefjudge.cli import main
from prefjudge.testbed import paper_tables
from prefjudge.testbed.report import build_report, render_html


@pytest.fixture(scope="module")
def paper_dir(shared_data) -> Path:
    path = shared_data / "paper" / "swe_if_scores"
    if not path.is_dir():
        pytest.skip(f"paper tables not available: {path} is absent")
    return path


@pytest.fixture(scope="module")
def scores(paper_dir):
    return paper_tables.load_paper_scores(paper_dir)


def _raw_func_rows(path: Path) -> dict[str, list[float]]:
    """Independent parse: model -> the 12 numbers of its line (6 single, 6 multi)."""
    lines = path.read_text(encoding="utf-8").splitlines()[2:]
    return {cells[0]: [float(c) for c in cells[1:]]
            for cells in (line.split(",") for line in lines)}


def test_loader_shapes(scores):
    models = scores.func.groupby("benchmark")["model"].nunique().to_dict()
    assert models == {"bigcodebench": 31, "livecodebench": 24}
    assert sorted(scores.func["k"].unique()) == [0, 1, 2, 3, 4, 5]
    assert set(scores.if_["level"]) == {"instruction", "task"}
    assert sorted(scores.position["position"].unique()) == [1, 2, 3, 4, 5]
    assert len(scores.if_) == 2 * 2 * 5 * (31 + 24)
    opus = scores.func.set_index(["benchmark", "model", "protocol", "k"])["score"]
    assert opus[("bigcodebench", "Claude 4 Opus", "single", 5)] == 52.11
    task_if = scores.if_.set_index(["benchmark", "model", "protocol", "level", "k"])["score"]
    assert task_if[("livecodebench", "GPT 5", "multi", "task", 5)] == 50.14


def test_claude_4_opus_single_turn_fr5_is_the_published_value(scores):
    fr = paper_tables.paper_functional_regression(scores.func)
    row = fr[(fr["benchmark"] == "bigcodebench") & (fr["model"] == "Claude 4 Opus")
             & (fr["protocol"] == "single") & (fr["k"] == 5)].iloc[0]
    assert round(row["fr"], 2) == -2.08  # the paper: FR_5 = -2.08 %
    assert row["fr"] == pytest.approx((51.05 - 52.11) / 51.05 * 100)


@pytest.mark.parametrize("benchmark", paper_tables.BENCHMARKS)
def test_every_fr_equals_the_definition_on_the_raw_csv(scores, paper_dir, benchmark):
    raw = _raw_func_rows(paper_dir / f"{benchmark}_func_results.csv")
    fr = paper_tables.paper_functional_regression(scores.func)
    fr = fr[fr["benchmark"] == benchmark].set_index(["model", "protocol", "k"])["fr"]
    assert len(fr) == len(raw) * 2 * 5
    for model, values in raw.items():
        s0 = values[0]  # single-turn, 0 instructions: the paper's baseline for both
        for k in range(1, 6):
            assert fr[(model, "single", k)] == pytest.approx((s0 - values[k]) / s0 * 100)
            assert fr[(model, "multi", k)] == pytest.approx((s0 - values[6 + k]) / s0 * 100)


def test_own_baseline_differs_only_where_the_zero_columns_differ(scores):
    single = paper_tables.paper_functional_regression(scores.func)
    own = paper_tables.paper_functional_regression(scores.func, baseline="own")
    merged = single.merge(own, on=["benchmark", "model", "protocol", "k"])
    differs = merged[(merged["fr_x"] - merged["fr_y"]).abs() > 1e-9]
    assert set(zip(differs["benchmark"], differs["model"], strict=True)) == {
        ("bigcodebench", "o3 mini high"), ("livecodebench", "Gemini 2.0 Flash Lite")}
    assert set(differs["protocol"]) == {"multi"}


def test_average_regression_follows_the_paper_figure_code(scores):
    average = paper_tables.paper_average_regression(scores.func).set_index(
        ["benchmark", "protocol", "k"])
    bcb = scores.func[scores.func["benchmark"] == "bigcodebench"]
    s0 = bcb[(bcb["protocol"] == "single") & (bcb["k"] == 0)]["score"].mean()
    s5 = bcb[(bcb["protocol"] == "multi") & (bcb["k"] == 5)]["score"].mean()
    assert average.loc[("bigcodebench", "multi", 5), "fr"] == pytest.approx((s0 - s5) / s0 * 100)
    assert average.loc[("bigcodebench", "single", 0), "fr"] == 0.0
    assert average.loc[("livecodebench", "single", 5), "n_models"] == 24


def test_report_shows_the_paper_values(paper_dir, tmp_path):
    report = build_report([], paper_dir=paper_dir)
    section = report.section("paper")
    wide = section.table("Paper FR_k (%) per model").display
    row = wide[(wide["benchmark"] == "bigcodebench") & (wide["model"] == "Claude 4 Opus")
               & (wide["protocol"] == "single-turn")].iloc[0]
    assert row["FR_5"] == "-2.08"
    assert section.figure is not None

    empty = tmp_path / "scores.jsonl"
    empty.write_text("")
    result = CliRunner().invoke(main, ["report", str(empty), "-o", str(tmp_path / "r.html"),
                                       "--paper", str(paper_dir)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert "<td>Claude 4 Opus</td><td>single-turn</td><td>-0.86</td>" in page
    assert "<td>-2.08</td>" in page
    assert page.count("<img ") == render_html(report).count("<img ") == 1


def test_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(paper_tables.PaperTableError, match="no func results for bigcodebench"):
        paper_tables.load_paper_scores(tmp_path)
    result = CliRunner().invoke(main, ["report", str(_empty(tmp_path)), "-o",
                                       str(tmp_path / "r.html"), "--paper", str(tmp_path)])
    assert result.exit_code != 0 and "no func results" in result.output


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path
