"""Bradley–Terry fitting, Elo scale, bootstrap and graph checks (ranking.bradley_terry)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.stats import kendalltau, spearmanr

from prefjudge.ranking import bradley_terry as rank
from prefjudge.ranking.inputs import BattleColumns, read_battles

# --------------------------------------------------------------------------- helpers


def battles(rows: list[tuple[str, str, str]]) -> rank.PairCounts:
    a, b, w = zip(*rows, strict=True)
    return rank.aggregate(list(a), list(b), list(w))


def simulate(theta: np.ndarray, size: int, seed: int, tie_nu: float = 0.0):
    """Battles from Bradley–Terry (tie_nu = 0) or Davidson (tie_nu > 0) with known θ."""
    rng = np.random.default_rng(seed)
    n = len(theta)
    a = rng.integers(0, n, size)
    b = rng.integers(0, n - 1, size)
    b = b + (b >= a)
    pa, pb = np.exp(theta[a]), np.exp(theta[b])
    tie = tie_nu * np.sqrt(pa * pb)
    total = pa + pb + tie
    u = rng.random(size) * total
    winner = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
    names = np.array([f"m{i}" for i in range(n)], dtype=object)
    return names[a], names[b], winner


def independent_bt_mle(a, b, winner, models) -> np.ndarray:
    """Per-battle maximum likelihood with scipy (ties: half a win each way), θ mean 0."""
    index = {m: i for i, m in enumerate(models)}
    ia = np.array([index[m] for m in a])
    ib = np.array([index[m] for m in b])
    score = np.where(winner == 0, 1.0, np.where(winner == 1, 0.0, 0.5))

    def nll(free):
        theta = np.append(free, -free.sum())
        d = theta[ia] - theta[ib]
        return -(score * -np.logaddexp(0, -d) + (1 - score) * -np.logaddexp(0, d)).sum()

    res = optimize.minimize(nll, np.zeros(len(models) - 1), method="BFGS",
                            options={"gtol": 1e-9})
    return np.append(res.x, -res.x.sum())


# --------------------------------------------------------------------------- real references


@pytest.mark.shared_data
def test_llmfao_matches_evalica_golden_bradley_terry(shared_data):
    """Our BT strengths, normalised to sum 1, match evalica's golden scores.

    Tolerance reached: relative error < 1e-9 (observed ~2e-11). Both solve the same
    maximum-likelihood problem with ties as half a win each way; evalica iterates MM
    until a 1e-6 step, we iterate I-LSR to 1e-10, so what is left is solver stopping.
    """
    frame = pd.read_csv(shared_data / "preferences/llmfao/llmfao.csv", dtype=str)
    golden = pd.read_csv(shared_data / "preferences/llmfao/llmfao-golden.csv")
    golden = golden[golden["algorithm"] == "bradley_terry"].set_index("item")["score"]
    winner = frame["winner"].map({"left": "model_a", "right": "model_b", "tie": "tie"})
    counts = rank.aggregate(frame["left"], frame["right"], winner)
    assert counts.n_battles == 8931 and counts.n_models == 59
    fit = rank.fit_strengths(counts, "half")
    ours = pd.Series(rank.to_scale(fit.theta, counts.models, "bt"), index=counts.models)
    expected = golden.reindex(ours.index)
    assert expected.notna().all()
    relative = ((ours - expected).abs() / expected).max()
    assert relative < 1e-9, relative
    assert list(ours.sort_values().index) == list(expected.sort_values().index)
    # A wrong tie policy is far off: dropping ties moves strengths by percents.
    dropped = rank.to_scale(rank.fit_strengths(counts, "drop").theta, counts.models, "bt")
    assert (np.abs(dropped - expected.to_numpy()) / expected.to_numpy()).max() > 0.05


COPILOT_NAMES = {  # battle name → name on the published Copilot Arena leaderboard (2024-11-12)
    "deepseek-coder-fim": "Deepseek V2.5",
    "claude-3-5-sonnet-20240620": "Claude Sonnet 3.5 (06/20)",
    "codestral-2405": "Codestral (05/24)",
    "llama-3.1-405b-instruct": "Meta-Llama-3.1-405B-Instruct",
    "gpt-4o-2024-08-06": "GPT-4o (08/06)",
    "gemini-1.5-pro-002": "Gemini-1.5-Pro-002",
    "llama-3.1-70b-instruct": "Meta-Llama-3.1-70B-Instruct",
    "gemini-1.5-flash-002": "Gemini-1.5-Flash-002",
    "gpt-4o-mini-2024-07-18": "GPT-4o-mini (07/18)",
}


@pytest.mark.shared_data
def test_copilot_arena_ordering_vs_published_leaderboard(shared_data):
    """113 real battles (one malformed row) against the published Copilot Arena scores.

    With ~20 battles per model the intervals are hundreds of Elo points wide, so only a
    weak agreement is expected: Spearman 0.47, Kendall 0.39 over the 9 shared models.
    """
    path = shared_data / "preferences/copilot_arena/copilot_arena_examples_v1.csv"
    frame, skipped = read_battles(
        path, columns=BattleColumns(winner="acceptedIndex"),
        winner_map={"0": "model_a", "1": "model_b"}, skip_invalid=True,
    )
    assert len(frame) == 112 and {i.line for i in skipped} == {2484}
    counts = rank.aggregate(frame["model_a"], frame["model_b"], frame["winner"])
    board = rank.leaderboard(counts, n_resamples=300, seed=0).table.set_index("model")
    blog = shared_data / "leaderboards/lmarena_blog"
    published = pd.read_csv(
        blog / "copilot_arena_autocomplete_leaderboard_2024-11-12.csv"
    ).set_index("Model")["Arena Score"]
    ours = board["rating"].reindex(list(COPILOT_NAMES))
    theirs = published.reindex(list(COPILOT_NAMES.values())).to_numpy()
    rho = spearmanr(ours, theirs).statistic
    tau = kendalltau(ours, theirs).statistic
    assert rho == pytest.approx(7 / 15, abs=1e-9)  # 0.4667
    assert tau == pytest.approx(14 / 36, abs=1e-9)  # 0.3889
    widths = (board["upper"] - board["lower"]).to_numpy()
    assert np.median(widths) > 250  # wide, as expected from 112 battles
    assert (board["rank_upper"] - board["rank_lower"]).min() >= 6


# --------------------------------------------------------------------------- the fit itself


def test_two_models_closed_form():
    # A beats B 3 times out of 4: θ_A − θ_B = ln 3, so 400·log10(3) ≈ 190.85 Elo points.
    counts = battles([("A", "B", "model_a")] * 3 + [("B", "A", "model_a")])
    fit = rank.fit_strengths(counts)
    assert fit.theta[0] - fit.theta[1] == pytest.approx(math.log(3), abs=1e-9)
    elo = rank.to_scale(fit.theta, counts.models)
    assert elo[0] - elo[1] == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert elo.mean() == pytest.approx(1000)


def test_recovers_known_strengths_and_matches_independent_mle():
    theta = np.array([-1.2, -0.5, 0.0, 0.3, 0.9, 1.5])
    theta -= theta.mean()
    a, b, winner = simulate(theta, 40_000, seed=3)
    # Add some ties so the half policy is exercised too.
    winner = winner.copy()
    winner[::17] = 2
    counts = rank.aggregate(a, b, winner)
    fit = rank.fit_strengths(counts, "half")
    independent = independent_bt_mle(a, b, winner, counts.models)
    assert np.abs(fit.theta - independent).max() < 1e-5
    no_ties = winner != 2
    clean = rank.aggregate(a[no_ties], b[no_ties], winner[no_ties])
    recovered = rank.fit_strengths(clean).theta
    assert np.abs(recovered - theta).max() < 0.06
    assert np.argsort(recovered).tolist() == np.argsort(theta).tolist()


def test_davidson_recovers_strengths_and_tie_parameter():
    theta = np.array([-0.8, -0.2, 0.1, 0.4, 0.7])
    theta -= theta.mean()
    nu = 0.8
    a, b, winner = simulate(theta, 60_000, seed=5, tie_nu=nu)
    counts = rank.aggregate(a, b, winner)
    fit = rank.fit_strengths(counts, "davidson")
    assert np.abs(fit.theta - theta).max() < 0.05
    assert fit.tie_strength == pytest.approx(nu, abs=0.04)

    # Independent per-battle likelihood (scipy BFGS on raw battles) gives the same MLE.
    index = {m: i for i, m in enumerate(counts.models)}
    ia = np.array([index[m] for m in a])
    ib = np.array([index[m] for m in b])

    def nll(x):  # x = free θ (last one is minus their sum), then log ν
        t = np.append(x[:-1], -x[:-1].sum())
        log_nu = x[-1]
        pa, pb = t[ia], t[ib]
        log_d = np.logaddexp(np.logaddexp(pa, pb), log_nu + (pa + pb) / 2)
        ll = np.where(winner == 0, pa, np.where(winner == 1, pb, log_nu + (pa + pb) / 2))
        return -(ll - log_d).sum() / len(ia)

    res = optimize.minimize(nll, np.zeros(len(theta)), method="BFGS", options={"gtol": 1e-10})
    independent = np.append(res.x[:-1], -res.x[:-1].sum())
    assert np.abs(fit.theta - independent).max() < 1e-4
    assert math.log(fit.tie_strength) == pytest.approx(res.x[-1], abs=1e-4)


def test_davidson_without_ties_matches_bradley_terry():
    a, b, winner = simulate(np.array([-0.5, 0.0, 0.5, 1.0]), 5_000, seed=1)
    counts = rank.aggregate(a, b, winner)
    bt = rank.fit_strengths(counts, "half").theta
    dav = rank.fit_strengths(counts, "davidson")
    assert np.abs(bt - dav.theta).max() < 1e-4
    assert dav.tie_strength < 1e-6


def test_drop_ignores_ties_and_half_pulls_together():
    rows = [("A", "B", "model_a")] * 6 + [("A", "B", "model_b")] * 2
    with_ties = rows + [("A", "B", "tie")] * 8
    drop = rank.fit_strengths(battles(with_ties), "drop").theta
    assert drop[0] - drop[1] == pytest.approx(math.log(3), abs=1e-9)
    half = rank.fit_strengths(battles(with_ties), "half").theta
    assert half[0] - half[1] == pytest.approx(math.log(10 / 6), abs=1e-9)


# --------------------------------------------------------------------------- aggregation


def test_aggregate_is_orientation_invariant_and_sums_weights():
    forward = rank.aggregate(["A", "B", "A"], ["B", "A", "C"], ["model_a", "model_a", "tie"],
                             [1.0, 2.0, 0.5])
    assert forward.models == ("A", "B", "C")
    ab = (forward.first == 0) & (forward.second == 1)
    assert forward.counts[ab].tolist() == [[1, 1, 0]]
    assert forward.weights[ab].tolist() == [[1.0, 2.0, 0.0]]
    mirrored = rank.aggregate(["B", "A", "C"], ["A", "B", "A"], ["model_b", "model_b", "tie"],
                              [1.0, 2.0, 0.5])
    assert np.array_equal(forward.counts, mirrored.counts)
    assert np.allclose(forward.weights, mirrored.weights)
    assert forward.model_battles().tolist() == [3.5, 3.0, 0.5]
    assert forward.model_win_rate()[2] == pytest.approx(0.5)


def test_aggregate_rejects_self_battles_and_bad_labels():
    with pytest.raises(ValueError, match="against itself"):
        rank.aggregate(["A"], ["A"], ["tie"])
    with pytest.raises(ValueError, match="unknown winner"):
        rank.aggregate(["A"], ["B"], ["left"])


def test_weights_act_like_repeated_battles():
    weighted = rank.aggregate(["A", "A"], ["B", "B"], ["model_a", "model_b"], [3.0, 1.0])
    repeated = battles([("A", "B", "model_a")] * 3 + [("A", "B", "model_b")])
    assert np.allclose(rank.fit_strengths(weighted).theta, rank.fit_strengths(repeated).theta)


# --------------------------------------------------------------------------- identifiability


def test_disconnected_graph_is_reported_not_fitted():
    counts = battles([("A", "B", "model_a"), ("B", "A", "model_a"),
                      ("C", "D", "model_a"), ("D", "C", "model_a"), ("E", "C", "tie")])
    with pytest.raises(rank.DisconnectedGraphError) as info:
        rank.leaderboard(counts, n_resamples=0)
    assert info.value.components == [["C", "D", "E"], ["A", "B"]]
    assert "disconnected" in str(info.value)
    with pytest.raises(ValueError, match="alpha > 0"):
        rank.leaderboard(counts, allow_disconnected=True, n_resamples=0)
    board = rank.leaderboard(counts, allow_disconnected=True, alpha=0.01, n_resamples=20)
    assert len(board.components) == 2 and len(board.table) == 5


def test_ties_only_model_is_disconnected_under_drop():
    counts = battles([("A", "B", "model_a"), ("B", "A", "model_a"), ("C", "A", "tie")])
    assert rank.comparison_components(counts, "half") == [["A", "B", "C"]]
    assert rank.comparison_components(counts, "drop") == [["A", "B"], ["C"]]


def test_unbounded_strength_is_reported_unless_regularised():
    counts = battles([("A", "B", "model_a"), ("A", "C", "model_a"),
                      ("B", "C", "model_a"), ("C", "B", "model_a")])
    with pytest.raises(rank.UnboundedStrengthError) as info:
        rank.leaderboard(counts, n_resamples=0)
    assert info.value.groups == [["A"], ["B", "C"]]
    assert "never lost" in str(info.value)
    board = rank.leaderboard(counts, alpha=0.1, n_resamples=0)
    assert board.table["model"].iloc[0] == "A"
    assert np.isfinite(board.table["rating"]).all()


def test_single_model_is_rejected():
    empty = rank.aggregate([], [], np.array([], dtype=np.int64))
    with pytest.raises(rank.TooFewModelsError):
        rank.leaderboard(empty, n_resamples=0)


# --------------------------------------------------------------------------- scale and bootstrap


def test_elo_scale_anchor_and_bt_normalization():
    theta = np.array([-0.5, 0.0, 1.0])
    models = ("x", "y", "z")
    elo = rank.to_scale(theta, models)
    # A 400-point gap is 10:1 odds, exactly the BT probability.
    p_bt = 1 / (1 + math.exp(-(theta[2] - theta[0])))
    p_elo = 1 / (1 + 10 ** (-(elo[2] - elo[0]) / 400))
    assert p_elo == pytest.approx(p_bt)
    anchored = rank.to_scale(theta, models, anchor=("y", 1200.0))
    assert anchored[1] == 1200.0 and anchored[2] - anchored[1] == pytest.approx(rank.ELO_PER_LOGIT)
    bt = rank.to_scale(theta, models, "bt")
    assert bt.sum() == pytest.approx(1.0) and bt[2] / bt[0] == pytest.approx(math.exp(1.5))
    with pytest.raises(ValueError, match="not among"):
        rank.to_scale(theta, models, anchor=("w", 1.0))


def test_bootstrap_is_seeded_and_intervals_bracket_the_estimate():
    a, b, winner = simulate(np.array([-1.0, -0.3, 0.2, 0.4, 1.1]), 3_000, seed=9)
    counts = rank.aggregate(a, b, winner)
    first = rank.leaderboard(counts, n_resamples=200, seed=4).table
    again = rank.leaderboard(counts, n_resamples=200, seed=4).table
    other = rank.leaderboard(counts, n_resamples=200, seed=5).table
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["lower"], other["lower"])
    assert ((first["lower"] <= first["rating"]) & (first["rating"] <= first["upper"])).all()
    assert ((first["rank_lower"] <= first["rank"]) & (first["rank"] <= first["rank_upper"])).all()
    assert list(first.columns) == ["model", "rating", "lower", "upper", "rank", "rank_lower",
                                   "rank_upper", "battles", "win_rate"]


def test_multinomial_resample_keeps_total_and_cells():
    counts = battles([("A", "B", "model_a")] * 5 + [("B", "C", "tie")] * 3)
    sample = counts.resample(np.random.default_rng(0))
    assert sample.counts.sum() == counts.counts.sum()
    assert (sample.counts[counts.counts == 0] == 0).all()


def test_bootstrap_interval_width_shrinks_with_data():
    theta = np.array([-0.5, 0.0, 0.5])
    small = rank.aggregate(*simulate(theta, 600, seed=1))
    large = rank.aggregate(*simulate(theta, 60_000, seed=1))
    width = {name: (board.table["upper"] - board.table["lower"]).mean()
             for name, board in (("small", rank.leaderboard(small, n_resamples=200)),
                                 ("large", rank.leaderboard(large, n_resamples=200)))}
    # Standard errors scale as 1/sqrt(N): 100x the data, about a tenth of the width.
    assert 6 < width["small"] / width["large"] < 14


def test_degenerate_resamples_are_counted():
    counts = battles([("A", "B", "model_a"), ("B", "A", "model_a"), ("B", "C", "model_a"),
                      ("C", "B", "model_a"), ("A", "C", "tie")])
    board = rank.leaderboard(counts, n_resamples=200)
    assert 0 < board.degenerate_resamples < 200
    assert np.isfinite(board.table[["lower", "upper"]].to_numpy()).all()


def test_leaderboards_by_group_keeps_failures():
    frame = pd.DataFrame({
        "model_a": ["A", "B", "A", "C"],
        "model_b": ["B", "A", "B", "D"],
        "winner": ["model_a", "model_a", "tie", "model_a"],
        "weight": 1.0,
        "category": ["x", "x", "x", None],
    })
    out = rank.leaderboards_by_group(frame, "category", n_resamples=10)
    assert set(out) == {"x", "(none)"}
    assert isinstance(out["x"], rank.Leaderboard)
    assert isinstance(out["(none)"], rank.UnboundedStrengthError)


def test_bootstrap_numbers_are_pinned():
    """Intervals of the multinomial bootstrap before prefjudge.stats, to the last bits.

    Within 1e-12 relative, not bit for bit: the fits' BLAS kernels differ by processor
    (OpenBLAS picks one per CPU), which moves the last bit of a rating now and then.
    """
    rng = np.random.default_rng(9)
    theta = np.array([-1.0, -0.3, 0.2, 0.4, 1.1])
    a = rng.integers(0, 5, 400)
    b = rng.integers(0, 4, 400)
    b = b + (b >= a)
    p = 1 / (1 + np.exp(theta[b] - theta[a]))
    u = rng.random(400)
    winner = np.where(u < p * 0.9, "model_a", np.where(u < 0.9, "model_b", "tie"))
    names = np.array([f"m{i}" for i in range(5)], dtype=object)
    counts = rank.aggregate(list(names[a]), list(names[b]), list(winner))
    columns = ["lower", "upper", "rank_lower", "rank_upper"]
    table = rank.leaderboard(counts, n_resamples=120, seed=4).table
    np.testing.assert_allclose(table[columns].to_numpy(dtype=float), [
        [1139.3665135507822, 1252.5263500978426, 1, 1],
        [1037.48120869055, 1117.9160983465506, 2, 2],
        [951.6053692697305, 1045.5387870364145, 3, 4],
        [865.7997527030351, 970.2924214141901, 3, 5],
        [767.3908094268779, 874.735458106128, 4, 5],
    ], rtol=1e-12, atol=0)
    table = rank.leaderboard(counts, n_resamples=60, seed=2, level=0.8, ties="drop",
                             scale="bt").table
    np.testing.assert_allclose(table[columns].to_numpy(dtype=float), [
        [0.4355360585042722, 0.5786425764400225, 1, 1],
        [0.1913376269702942, 0.2875560112619148, 2, 2],
        [0.10898403230761992, 0.16467491835486592, 3, 3],
        [0.060205713358461886, 0.10304996276718724, 4, 4],
        [0.03376488319100303, 0.0583602882609973, 5, 5],
    ], rtol=1e-12, atol=0)
