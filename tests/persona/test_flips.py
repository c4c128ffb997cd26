import json
import math
import warnings

import pytest

from prefjudge.persona.flips import FLIP_COLUMNS, flip_table, flips_summary
from prefjudge.plots.persona import plot_flips
from prefjudge.records import DimensionVerdict, PersonaComparison

X, Y = "alpha-model", "beta-model"


def comp(task, condition, outcomes, *, a=X, b=Y, status="ok", persona="carol"):
    """A comparison whose ``outcomes`` map dimension -> outcome as seen from model ``a``."""
    return PersonaComparison(
        task_id=str(task),
        condition=condition,
        persona=persona,
        model_a=a,
        model_b=b,
        status=status,
        dimensions=[
            DimensionVerdict(dimension=d, forward=o, swapped=o, outcome=o)
            for d, o in outcomes.items()
        ],
        error="judge: boom" if status == "error" else None,
    )


def flip_data(n_tasks=20):
    """``flipdim``: X wins all original, Y wins all persona; ``steady``: X wins both."""
    data = []
    for t in range(n_tasks):
        data.append(comp(t, "original", {"flipdim": "A", "steady": "A"}))
        data.append(comp(t, "persona", {"flipdim": "B", "steady": "A"}))
    return data


def row(frame, dimension):
    rows = frame[frame["dimension"] == dimension]
    assert len(rows) == 1
    return rows.iloc[0]


def test_columns_and_row_order():
    frame = flip_table(flip_data(), n_resamples=200)
    assert list(frame.columns) == FLIP_COLUMNS
    assert list(frame["dimension"]) == ["flipdim", "steady", "overall"]
    ordered = flip_table(flip_data(), n_resamples=200, dimensions=["steady", "flipdim"])
    assert list(ordered["dimension"]) == ["steady", "flipdim", "overall"]


def test_clear_flip_is_significant():
    frame = flip_table(flip_data(20), n_resamples=500)
    r = row(frame, "flipdim")
    assert (r["model_x"], r["model_y"]) == (X, Y)
    assert r["orig_win_rate"] == 1.0 and r["persona_win_rate"] == 0.0
    assert r["orig_preferred"] == X and r["persona_preferred"] == Y
    assert r["orig_n"] == 20 and r["persona_n"] == 20
    assert r["flip"] and r["significant_flip"] and r["shift"]
    assert r["paired_n"] == 20
    assert r["diff"] == pytest.approx(-1.0)
    assert r["diff_hi"] < 0


def test_no_change_is_not_a_flip():
    r = row(flip_table(flip_data(), n_resamples=200), "steady")
    assert r["orig_preferred"] == X and r["persona_preferred"] == X
    assert not r["flip"] and not r["significant_flip"] and not r["shift"]
    assert r["diff"] == pytest.approx(0.0)


def test_flip_without_separated_cis_is_not_significant():
    # original: X wins 6 of 10; persona: X wins 4 of 10 -> flip, CIs overlap 0.5
    data = []
    for t in range(10):
        data.append(comp(t, "original", {"d": "A" if t < 6 else "B"}))
        data.append(comp(t, "persona", {"d": "A" if t < 4 else "B"}))
    r = row(flip_table(data, n_resamples=500), "d")
    assert r["flip"] and not r["significant_flip"]
    assert r["orig_lo"] < 0.5 < r["orig_hi"]


def test_ties_count_half_and_tie_preference():
    data = [
        comp(1, "original", {"d": "A"}),
        comp(2, "original", {"d": "tie"}),
        comp(3, "original", {"d": "tie"}),
        comp(4, "original", {"d": "B"}),
        comp(1, "persona", {"d": "A"}),
        comp(2, "persona", {"d": "tie"}),
        comp(3, "persona", {"d": "B"}),
    ]
    r = row(flip_table(data, n_resamples=100), "d")
    assert r["orig_win_rate"] == 0.5
    assert r["orig_ties"] == 2 and r["orig_wins_x"] == 1 and r["orig_wins_y"] == 1
    assert r["orig_preferred"] == "tie"
    assert r["persona_win_rate"] == pytest.approx(1.5 / 3)
    assert r["persona_preferred"] == "tie"
    assert not r["flip"]


def test_tie_versus_preference_is_not_a_flip():
    data = [comp(1, "original", {"d": "tie"}), comp(1, "persona", {"d": "B"})]
    r = row(flip_table(data, n_resamples=50), "d")
    assert r["orig_preferred"] == "tie" and r["persona_preferred"] == Y
    assert not r["flip"]


def test_reversed_model_order_is_normalized():
    # the same judgement (X better) written both ways round
    data = [
        comp(1, "original", {"d": "A"}),
        comp(2, "original", {"d": "B"}, a=Y, b=X),
        comp(3, "original", {"d": "tie"}, a=Y, b=X),
        comp(1, "persona", {"d": "A"}, a=Y, b=X),
        comp(2, "persona", {"d": "A"}, a=Y, b=X),
    ]
    r = row(flip_table(data, n_resamples=100), "d")
    assert (r["model_x"], r["model_y"]) == (X, Y)
    assert r["orig_wins_x"] == 2 and r["orig_ties"] == 1 and r["orig_wins_y"] == 0
    assert r["orig_win_rate"] == pytest.approx(2.5 / 3)
    assert r["persona_wins_y"] == 2 and r["persona_win_rate"] == 0.0
    assert r["flip"]


def test_model_x_is_alphabetically_first_whatever_comes_first():
    data = [comp(1, "original", {"d": "A"}, a=Y, b=X)]
    r = row(flip_table(data, n_resamples=50), "d")
    assert (r["model_x"], r["model_y"]) == (X, Y)
    assert r["orig_win_rate"] == 0.0 and r["orig_preferred"] == Y


def test_errors_excluded_but_counted():
    data = flip_data(5)
    data.append(comp(99, "original", {"flipdim": "B"}, status="error"))
    data.append(comp(98, "persona", {}, status="error"))
    data.append(comp(97, "persona", {}, status="error"))
    frame = flip_table(data, n_resamples=100)
    r = row(frame, "flipdim")
    assert r["orig_n"] == 5 and r["orig_win_rate"] == 1.0
    assert r["orig_n_error"] == 1 and r["persona_n_error"] == 2
    assert r["paired_n"] == 5
    assert row(frame, "overall")["persona_n_error"] == 2


def test_missing_outcomes_counted():
    data = [
        comp(1, "original", {"d": "A", "e": None}),
        comp(2, "original", {"d": None, "e": "A"}),
        comp(3, "original", {"e": "B"}),  # no verdict for d at all
        comp(1, "persona", {"d": "B", "e": "A"}),
    ]
    frame = flip_table(data, n_resamples=50)
    d = row(frame, "d")
    assert d["orig_n"] == 1 and d["orig_n_missing"] == 2
    e = row(frame, "e")
    assert e["orig_n"] == 2 and e["orig_n_missing"] == 1
    assert e["persona_n_missing"] == 0
    overall = row(frame, "overall")
    assert overall["orig_n_missing"] == 3 and overall["orig_n"] == 3


def test_more_than_two_models_raises_naming_them():
    data = [comp(1, "original", {"d": "A"}), comp(2, "persona", {"d": "A"}, b="gamma-model")]
    with pytest.raises(ValueError, match="alpha-model, beta-model, gamma-model"):
        flip_table(data)


def test_seeded_cis_deterministic_and_bracket_estimate():
    data = []
    for t in range(15):
        data.append(comp(t, "original", {"d": ["A", "B", "tie", "A"][t % 4]}))
        data.append(comp(t, "persona", {"d": ["B", "A", "B"][t % 3]}))
    first = flip_table(data, n_resamples=300, seed=7)
    again = flip_table(data, n_resamples=300, seed=7)
    other = flip_table(data, n_resamples=300, seed=8)
    cols = ["orig_lo", "orig_hi", "persona_lo", "persona_hi", "diff_lo", "diff_hi"]
    assert first[cols].equals(again[cols])
    assert not first[cols].equals(other[cols])
    for _, r in first.iterrows():
        assert r["orig_lo"] <= r["orig_win_rate"] <= r["orig_hi"]
        assert r["persona_lo"] <= r["persona_win_rate"] <= r["persona_hi"]
        assert r["diff_lo"] <= r["diff"] <= r["diff_hi"]
        assert r["orig_lo"] < r["orig_hi"]


def test_task_is_the_resampling_unit():
    # every task has the same rate (two comparisons, one win each) -> zero-width CI
    data = []
    for t in range(8):
        data.append(comp(t, "original", {"d": "A"}))
        data.append(comp(t, "original", {"d": "B"}))
    r = row(flip_table(data, n_resamples=200), "d")
    assert r["orig_n"] == 16
    assert r["orig_lo"] == r["orig_hi"] == 0.5


def test_paired_diff_uses_only_shared_tasks():
    data = [
        comp(1, "original", {"d": "A"}),
        comp(2, "original", {"d": "A"}),
        comp(3, "original", {"d": "B"}),  # original only
        comp(4, "original", {"d": "B"}),  # original only
        comp(1, "persona", {"d": "B"}),
        comp(2, "persona", {"d": "tie"}),
        comp(5, "persona", {"d": "A"}),  # persona only
    ]
    r = row(flip_table(data, n_resamples=200), "d")
    assert r["paired_n"] == 2
    # shared tasks 1, 2: original 1.0, persona 0.25
    assert r["diff"] == pytest.approx(0.25 - 1.0)
    # unpaired difference would be 0.5 - 0.5 = 0
    assert r["persona_win_rate"] - r["orig_win_rate"] == pytest.approx(0.0)


def test_empty_condition_gives_nan_and_no_flip():
    data = [comp(t, "original", {"d": "A"}) for t in range(4)]
    r = row(flip_table(data, n_resamples=50), "d")
    assert r["persona_n"] == 0
    assert math.isnan(r["persona_win_rate"]) and math.isnan(r["persona_lo"])
    assert r["persona_preferred"] is None
    assert r["paired_n"] == 0 and math.isnan(r["diff"])
    assert not r["flip"] and not r["significant_flip"] and not r["shift"]


def test_overall_row_pools_dimensions():
    frame = flip_table(flip_data(10), n_resamples=200)
    assert frame["dimension"].iloc[-1] == "overall"
    overall = row(frame, "overall")
    assert overall["orig_n"] == 20 and overall["persona_n"] == 20
    assert overall["orig_win_rate"] == 1.0
    assert overall["persona_win_rate"] == 0.5
    assert overall["persona_preferred"] == "tie"
    assert overall["paired_n"] == 10
    assert overall["diff"] == pytest.approx(-0.5)
    # per-task rates are all 0.5 in persona: its CI has zero width
    assert overall["persona_lo"] == overall["persona_hi"] == 0.5
    restricted = row(flip_table(flip_data(10), n_resamples=50, dimensions=["steady"]), "overall")
    assert restricted["persona_win_rate"] == 1.0


def test_summary_is_json_ready():
    data = flip_data(20)
    data.append(comp(50, "original", {"flipdim": "A", "steady": "A", "orig_only": "A"}))
    frame = flip_table(data, n_resamples=200)
    summary = flips_summary(frame)
    text = json.dumps(summary, allow_nan=False)
    loaded = json.loads(text)
    assert loaded["models"] == [X, Y]
    assert loaded["personas"] == ["carol"]
    assert loaded["flipped"] == ["flipdim"]
    assert loaded["significant_flips"] == ["flipdim"]
    assert loaded["overall"]["dimension"] == "overall"
    orig_only = next(r for r in loaded["rows"] if r["dimension"] == "orig_only")
    assert orig_only["persona_win_rate"] is None and orig_only["diff"] is None
    assert isinstance(orig_only["flip"], bool)
    assert len(loaded["rows"]) == len(frame)


def test_plot_writes_png_without_warnings(tmp_path):
    frame = flip_table(flip_data(12), n_resamples=100)
    path = tmp_path / "flips.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_flips(frame, path, title="flips")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a single-dimension table with an empty condition also plots
    single = flip_table([comp(1, "original", {"d": "A"})], n_resamples=20, dimensions=["d"])
    path2 = tmp_path / "single.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_flips(single, path2)
    assert path2.stat().st_size > 0


def test_bootstrap_numbers_are_pinned():
    """Rate and paired-difference intervals before prefjudge.stats, bit for bit."""
    data = []
    for t in range(9):
        data.append(comp(t, "original", {"d1": "AB"[t % 2], "d2": "A"}, a="xa", b="yb"))
        if t < 8:
            data.append(comp(t, "persona", {"d1": ("B", "tie", "A")[t % 3],
                                            "d2": "AB"[t % 4 == 0]}, a="xa", b="yb"))
    frame = flip_table(data, n_resamples=200, seed=6)
    columns = ["orig_lo", "orig_hi", "persona_lo", "persona_hi", "diff_lo", "diff_hi"]
    assert frame[columns].to_numpy().tolist() == [
        [0.2222222222222222, 0.8888888888888888, 0.1875, 0.6875, -0.5625, 0.375],
        [1.0, 1.0, 0.375, 1.0, -0.625, 0.0],
        [0.6111111111111112, 0.9444444444444444, 0.34375, 0.8125, -0.53125, 0.15625],
    ]


def test_flips_never_read_judge_verdicts_as_comparisons(tmp_path):
    """Issue 29 guard: persona flips count persona comparisons only; a verdict file (here
    with verdicts decided by no evidence) is refused, never turned into wins and ties."""
    from click.testing import CliRunner
    from pj_verdicts import evidence_verdicts, write_verdicts

    from prefjudge.cli import main

    path = write_verdicts(tmp_path / "verdicts.jsonl",
                          evidence_verdicts(decided=6, no_evidence=12, errors=1).everything())
    result = CliRunner().invoke(main, ["persona", "flips", str(path), "--bootstrap", "10"])
    assert result.exit_code != 0 and "condition" in result.output
    assert not list(tmp_path.glob("*.flips.*"))
