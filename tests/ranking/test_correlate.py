"""The α-composite sweep, correlations, model matching and bootstrap (ranking.correlate)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from prefjudge.ranking import correlate as corr

# Optimal IF weight per (benchmark, Elo column, correlation) on the paper's table with IF at
# one instruction. The main-text figure (Fig. 5) shows Pearson and Spearman with the default
# LMArena coding Elo (style control on); the appendix adds Kendall and the Elo with style
# control removed. These are the argmax values of the paper's own script
# (SWE-IF swe_if/correlations.py) on this file; see scripts/correlate_paper.sh.
PAPER_OPTIMA = {
    ("bcb", "arena_default"): {"pearson": 0.4, "spearman": 0.7, "kendall": 0.7},
    ("bcb", "arena_remove_style_control"): {"pearson": 0.4, "spearman": 0.8, "kendall": 0.8},
    ("lcb", "arena_default"): {"pearson": 0.4, "spearman": 0.6, "kendall": 0.6},
    ("lcb", "arena_remove_style_control"): {"pearson": 0.3, "spearman": 0.6, "kendall": 0.6},
}


@pytest.fixture(scope="module")
def paper_table(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "paper/swe_if_scores/model_scores_with_arena.csv")


def paper_script_curve(func, if_score, elo, *, exact_ties: bool):
    """The paper's formulation: ratio r on Func, np.arange grid, scipy correlations.

    With ``exact_ties`` the composite is rounded to 9 decimals first (the inputs have two
    decimals and α one, so this recovers exact decimal values): composites that are
    equal in exact arithmetic then tie, as they do in prefjudge. The paper's script
    compares raw floats, where such ties come out in an arbitrary order.
    """
    rows = []
    for ratio in np.arange(0.0, 1.0 + 0.1, 0.1):
        weighted = ratio * func + (1 - ratio) * if_score
        ranked = np.round(weighted, 9) if exact_ties else weighted
        rows.append((1 - ratio, pearsonr(weighted, elo)[0], spearmanr(ranked, elo)[0],
                     kendalltau(ranked, elo)[0]))
    return rows


@pytest.mark.shared_data
@pytest.mark.parametrize(("bench", "elo_col"), sorted(PAPER_OPTIMA))
def test_reproduces_paper_optimal_weights(paper_table, bench, elo_col):
    data = paper_table.dropna(subset=[f"{bench}_func", f"{bench}_if_1"])
    assert len(data) == (30 if bench == "bcb" else 23)
    func, if_score = data[f"{bench}_func"].to_numpy(), data[f"{bench}_if_1"].to_numpy()
    elo = data[elo_col].to_numpy()
    result = corr.correlate(data["model"].tolist(), func, if_score, elo, n_resamples=0)
    got = {kind: result.best[kind]["alpha"] for kind in corr.CORRELATIONS}
    assert got == PAPER_OPTIMA[(bench, elo_col)]
    # The paper's script, run as written, picks the same α (its argmax order: Func weight
    # ascending, so ties go to the largest IF weight).
    raw = sorted(paper_script_curve(func, if_score, elo, exact_ties=False), reverse=True)
    for column, kind in enumerate(corr.CORRELATIONS, start=1):
        values = [row[column] for row in raw]
        assert round(raw[int(np.argmax(values))][0], 1) == got[kind]
    # The whole curve equals the exact-tie computation point by point.
    reference = sorted(paper_script_curve(func, if_score, elo, exact_ties=True))
    for (alpha, p, s, k), row in zip(reference, result.curve.itertuples(), strict=True):
        assert row.alpha == pytest.approx(alpha, abs=1e-12)
        assert (row.pearson, row.spearman, row.kendall) == pytest.approx((p, s, k), abs=1e-12)


def test_exactly_equal_composites_tie_for_rank_correlations():
    # 0.5·50.18 + 0.5·67.89 == 0.5·44.39 + 0.5·73.68 == 59.035 in exact arithmetic
    # (deepseek-v3-0324 and qwen2.5-72b-instruct on BigCodeBench).
    x = corr.composite(np.array([50.18, 44.39, 40.0]), np.array([67.89, 73.68, 70.0]),
                       np.array([0.5]))[0]
    assert x[0] != x[1]  # floating point disagrees in the last bit
    y = np.array([1.0, 2.0, 0.0])
    got = corr.correlations(x, y)
    assert got["kendall"] == pytest.approx(kendalltau([59.035, 59.035, 55.0], y)[0])
    assert got["spearman"] == pytest.approx(spearmanr([59.035, 59.035, 55.0], y)[0])


@pytest.mark.shared_data
def test_composite_beats_either_score_alone_on_the_paper_table(paper_table):
    data = paper_table
    result = corr.correlate(data["model"].tolist(), data["bcb_func"], data["bcb_if_1"],
                            data["arena_default"], n_resamples=0)
    curve = result.curve.set_index("alpha")
    for kind in ("pearson", "spearman"):
        assert result.best[kind]["r"] > max(curve.at[0.0, kind], curve.at[1.0, kind])


def test_sweep_finds_the_blend_that_generated_the_elo():
    rng = np.random.default_rng(0)
    func = rng.uniform(20, 80, 25)
    if_score = rng.uniform(40, 90, 25)
    elo = 1000 + 5 * (0.3 * if_score + 0.7 * func)
    result = corr.correlate([f"m{i}" for i in range(25)], func, if_score, elo, n_resamples=0)
    assert result.best["pearson"]["alpha"] == 0.3
    assert result.best["pearson"]["r"] == pytest.approx(1.0)
    assert result.best["spearman"]["r"] == pytest.approx(1.0)
    # Swapping the roles of Func and IF moves the optimum to 0.7: the sweep is not symmetric.
    swapped = corr.correlate([f"m{i}" for i in range(25)], if_score, func, elo, n_resamples=0)
    assert swapped.best["pearson"]["alpha"] == 0.7


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_correlations_equal_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=(3, 12)).astype(float)  # many ties
    y = rng.normal(size=(3, 12)).round(1)
    got = corr.correlations(x, y)
    for i in range(3):
        assert got["pearson"][i] == pytest.approx(pearsonr(x[i], y[i])[0], abs=1e-12)
        assert got["spearman"][i] == pytest.approx(spearmanr(x[i], y[i])[0], abs=1e-12)
        assert got["kendall"][i] == pytest.approx(kendalltau(x[i], y[i])[0], abs=1e-12)


def test_constant_input_gives_nan_not_an_error():
    values = corr.correlations(np.ones((1, 5)), np.arange(5.0))
    assert all(np.isnan(v[0]) for v in values.values())


def test_ties_in_the_best_correlation_go_to_the_largest_alpha():
    curves = np.array([[0.1, 0.5, 0.5, 0.2], [np.nan, np.nan, np.nan, np.nan]])
    assert corr.best_alpha_index(curves).tolist() == [2, -1]


def test_alpha_grid():
    grid = corr.alpha_grid(0.1)
    assert len(grid) == 11 and grid[3] == 0.3 and grid[-1] == 1.0
    assert corr.alpha_grid(0.25).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    with pytest.raises(ValueError, match="divide"):
        corr.alpha_grid(0.3)


def test_match_models_exact_then_alias_and_lists_the_rest():
    match = corr.match_models(["a", "b", "c", "d"], ["a", "B-long", "e"], {"b": "B-long",
                                                                          "d": "zzz"})
    assert match.pairs == [("a", "a", "exact"), ("b", "B-long", "alias")]
    assert match.unmatched_scores == ["c", "d"]
    assert match.unmatched_elo == ["e"]
    with pytest.raises(corr.CorrelateError, match="both match"):
        corr.match_models(["a", "x"], ["a"], {"x": "a"})


@pytest.mark.shared_data
def test_bootstrap_over_models_is_seeded_and_brackets_the_estimate(paper_table):
    data = paper_table
    args = (data["model"].tolist(), data["bcb_func"], data["bcb_if_1"], data["arena_default"])
    first = corr.correlate(*args, n_resamples=300, seed=1)
    again = corr.correlate(*args, n_resamples=300, seed=1)
    pd.testing.assert_frame_equal(first.curve, again.curve)
    for kind in corr.CORRELATIONS:
        best = first.best[kind]
        assert best["ci"][0] < best["r"] < best["ci"][1]
        assert 0.0 <= best["alpha_ci"][0] <= best["alpha"] <= best["alpha_ci"][1] <= 1.0
    curve = first.curve
    assert (curve["pearson_lower"] <= curve["pearson"]).all()
    assert (curve["pearson"] <= curve["pearson_upper"]).all()


def test_too_few_models_and_nan_are_rejected():
    with pytest.raises(corr.CorrelateError, match="at least three"):
        corr.correlate(["a", "b"], [1, 2], [1, 2], [1, 2])
    with pytest.raises(corr.CorrelateError, match="NaN"):
        corr.correlate(["a", "b", "c"], [1, np.nan, 2], [1, 2, 3], [1, 2, 3])
    with pytest.raises(corr.CorrelateError, match="same Elo"):
        corr.correlate(["a", "b", "c"], [1, 2, 3], [1, 2, 3], [5, 5, 5])


def test_scores_from_records():
    records = [
        {"model": "m1", "func_pass": True, "if_instruction": 1.0, "n_instructions": 1},
        {"model": "m1", "func_pass": False, "if_instruction": 0.5, "n_instructions": 2},
        {"model": "m1", "func_pass": None, "if_instruction": None, "n_instructions": 2},
        {"model": "m2", "func_pass": True, "if_instruction": 0.0, "n_instructions": 1},
    ]
    table = corr.scores_from_records(records).set_index("model")
    assert table.at["m1", "func"] == 0.5 and table.at["m1", "n_func"] == 2
    assert table.at["m1", "if"] == 0.75 and table.at["m1", "n_if"] == 2
    assert table.at["m1", "if_1"] == 1.0 and table.at["m1", "if_2"] == 0.5
    assert table.at["m2", "func"] == 1.0 and np.isnan(table.at["m2", "if_2"])


def test_bootstrap_numbers_are_pinned():
    """Intervals of the bootstrap over models before prefjudge.stats, bit for bit."""
    result = corr.correlate([f"x{i}" for i in range(6)], [0.2, 0.5, 0.4, 0.9, 0.7, 0.1],
                            [0.6, 0.3, 0.8, 0.5, 0.9, 0.2], [1000, 1100, 1150, 1200, 1250, 990],
                            n_resamples=150, seed=7)
    assert result.curve["pearson_lower"].tolist() == [
        0.68464568439764, 0.7887788244913232, 0.877957258473697, 0.8977552371960565,
        0.8652149592172427, 0.7542538960887801, 0.5962717209635081, 0.395856891829625,
        0.1767292615697646, -0.03627887936453473, -0.16648348404037938]
    assert result.curve["kendall_lower"].tolist() == [
        0.3333333333333333, 0.3333333333333333, 0.3705128205128207, 0.3705128205128207, 1.0,
        0.7969329191100825, 0.2722222222222229, -0.09090909090909091, -0.09090909090909091,
        -0.09090909090909091, -0.09090909090909091]
    assert result.best == {
        "pearson": {"alpha": 0.3, "r": 0.9558758587951026,
                    "ci": [0.8977552371960565, 0.9999999999999999], "alpha_ci": [0.0, 0.8]},
        "spearman": {"alpha": 0.4, "r": 1.0, "ci": [1.0, 1.0], "alpha_ci": [0.4, 1.0]},
        "kendall": {"alpha": 0.4, "r": 1.0, "ci": [1.0, 1.0], "alpha_ci": [0.4, 1.0]},
    }
    # three models: resamples that repeat one model are undefined and left out
    result = corr.correlate(["a", "b", "c"], [0.2, 0.6, 0.5], [0.7, 0.1, 0.9],
                            [1000, 1100, 1200], n_resamples=90, seed=1, level=0.9)
    assert result.undefined_resamples == {"pearson": 10, "spearman": 29, "kendall": 29}
    assert result.curve["pearson_lower"].tolist() == [
        -0.9999999999999999, -1.0000000000000002, 0.9707253433941512, 0.9889822382736463,
        0.33333333333333487, -1.0, -0.9999999999999999, -1.0000000000000002, -1.0, -1.0,
        -1.0000000000000002]
    assert result.curve["spearman_lower"].tolist() == [
        -1.0, -1.0, 1.0, 1.0, 0.8660254037844387, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert result.best["pearson"] == {"alpha": 0.3, "r": 0.9889822382736463,
                                      "ci": [0.9889822382736463, 1.0000000000000002],
                                      "alpha_ci": [0.1, 1.0]}
    assert result.best["kendall"]["alpha_ci"] == [0.3, 1.0]
