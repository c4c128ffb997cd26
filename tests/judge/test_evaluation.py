import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefjudge.judge.evaluation import (
    COMPARE_COLUMNS,
    compare_methods,
    evaluate_verdicts,
    paired_difference,
)
from prefjudge.plots.judge import plot_methods
from prefjudge.records import Usage, Verdict


def verdict(pair_id, label, preferred, *, method="criteralign", **extra):
    """A verdict for a pair; ``preferred="error"`` makes an errored one."""
    if preferred == "error":
        return Verdict(
            pair_id=str(pair_id),
            task_id="t",
            model_a="a",
            model_b="b",
            method=method,
            status="error",
            label=label,
            error="judge: boom",
            **extra,
        )
    return Verdict(
        pair_id=str(pair_id),
        task_id="t",
        model_a="a",
        model_b="b",
        method=method,
        preferred=preferred,
        label=label,
        **extra,
    )


# gold/predicted: 4 right of 7 judged, 2 errors, 1 unlabelled
MIXED = [
    ("A", "A"),
    ("A", "A"),
    ("A", "B"),
    ("B", "B"),
    ("B", "tie"),
    ("tie", "tie"),
    ("tie", "A"),
    ("A", "error"),
    ("B", "error"),
    (None, "A"),
]


def mixed_verdicts(**extra):
    return [verdict(i, g, p, **extra) for i, (g, p) in enumerate(MIXED)]


def test_counts_accuracy_and_errors_apart():
    result = evaluate_verdicts(mixed_verdicts(), n_resamples=200)
    assert (result["n"], result["n_ok"], result["n_error"], result["n_unlabelled"]) == (9, 7, 2, 1)
    assert result["accuracy"] == pytest.approx(4 / 7)
    assert result["accuracy_ties_half"] == pytest.approx(4.5 / 7)
    assert result["tie_rate"] == pytest.approx(2 / 7)
    assert result["methods"] == ["criteralign"]


def test_macro_f1_and_per_class_by_hand():
    result = evaluate_verdicts(mixed_verdicts(), n_resamples=0)
    # A: tp 2, fp 1 (tie->A), fn 1 (A->B); B: tp 1, fp 1, fn 1; tie: tp 1, fp 1, fn 1
    assert result["classes"] == ["A", "B", "tie"]
    per_class = result["per_class"]
    assert per_class["A"] == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3, "predicted": 3}
    )
    assert per_class["B"]["f1"] == pytest.approx(0.5)
    assert per_class["tie"]["f1"] == pytest.approx(0.5)
    assert result["macro_f1"] == pytest.approx((2 / 3 + 0.5 + 0.5) / 3)
    assert result["accuracy_ci"] is None and result["macro_f1_ci"] is None


def test_macro_f1_counts_classes_seen_only_in_predictions():
    result = evaluate_verdicts(
        [verdict(1, "A", "A"), verdict(2, "A", "tie"), verdict(3, "B", "B")], n_resamples=0
    )
    assert result["classes"] == ["A", "B", "tie"]
    assert result["per_class"]["tie"] == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "support": 0,
        "predicted": 1,
    }
    assert result["macro_f1"] == pytest.approx((2 / 3 + 1.0 + 0.0) / 3)


def test_macro_f1_leaves_out_absent_tie_class():
    result = evaluate_verdicts(
        [verdict(1, "A", "A"), verdict(2, "A", "B"), verdict(3, "B", "B")], n_resamples=0
    )
    assert result["classes"] == ["A", "B"]
    assert "tie" not in result["per_class"]
    # A: P 1, R 1/2, F1 2/3; B: P 1/2, R 1, F1 2/3
    assert result["macro_f1"] == pytest.approx(2 / 3)


def test_ties_half_only_credits_predicted_ties_on_sided_labels():
    verdicts = [
        verdict(1, "A", "tie"),
        verdict(2, "B", "tie"),
        verdict(3, "tie", "A"),
        verdict(4, "A", "A"),
    ]
    result = evaluate_verdicts(verdicts, n_resamples=0)
    assert result["accuracy"] == pytest.approx(1 / 4)
    assert result["accuracy_ties_half"] == pytest.approx((0.5 + 0.5 + 0 + 1) / 4)


def test_confusion_matrix_has_error_column():
    confusion = evaluate_verdicts(mixed_verdicts(), n_resamples=0)["confusion"]
    assert confusion == {
        "A": {"A": 2, "B": 1, "tie": 0, "error": 1},
        "B": {"A": 0, "B": 1, "tie": 1, "error": 1},
        "tie": {"A": 1, "B": 0, "tie": 1, "error": 0},
    }


def test_ok_verdict_without_preference_counts_as_error():
    odd = Verdict(
        pair_id="x", task_id="t", model_a="a", model_b="b", method="monolithic", label="A"
    )
    result = evaluate_verdicts([odd, verdict(1, "A", "A")], n_resamples=0)
    assert (result["n_ok"], result["n_error"], result["accuracy"]) == (1, 1, 1.0)
    assert result["confusion"]["A"]["error"] == 1


def test_consistency_inconsistency_cost_and_categories():
    verdicts = [
        verdict(
            1,
            "A",
            "A",
            position_consistent=True,
            inconsistency_rate=0.0,
            category="x",
            cost=Usage(
                requests=4, model_calls=3, cache_hits=1, prompt_tokens=100, completion_tokens=10
            ),
        ),
        verdict(
            2,
            "B",
            "A",
            position_consistent=False,
            inconsistency_rate=0.5,
            category="x",
            cost=Usage(requests=2, model_calls=2, prompt_tokens=50, completion_tokens=5),
        ),
        verdict(3, "B", "B", position_consistent=None, category="y"),
        verdict(
            4,
            "A",
            "error",
            position_consistent=True,
            inconsistency_rate=0.25,
            category="y",
            cost=Usage(requests=1, errors=1),
        ),
        verdict(5, None, "A", cost=Usage(requests=99)),
    ]
    result = evaluate_verdicts(verdicts, n_resamples=0)
    assert result["position_consistency"] == pytest.approx(0.5)  # errored one left out
    assert result["n_position_known"] == 2
    assert result["criterion_inconsistency"] == pytest.approx(0.75 / 3)
    assert result["cost"]["total"] == {
        "requests": 7,
        "model_calls": 5,
        "cache_hits": 1,
        "prompt_tokens": 150,
        "completion_tokens": 15,
        "errors": 1,
    }
    assert result["cost"]["per_pair"]["requests"] == pytest.approx(7 / 4)
    assert result["cost"]["per_pair"]["prompt_tokens"] == pytest.approx(150 / 4)
    assert result["by_category"] == {
        "x": {"n": 2, "n_ok": 2, "accuracy": 0.5},
        "y": {"n": 2, "n_ok": 1, "accuracy": 1.0},
    }


def test_no_categories_gives_empty_breakdown():
    assert evaluate_verdicts(mixed_verdicts(), n_resamples=0)["by_category"] == {}


def test_ci_brackets_point_and_is_seeded():
    verdicts = [verdict(i, "A" if i % 3 else "B", "A" if i % 4 else "B") for i in range(60)]
    first = evaluate_verdicts(verdicts, n_resamples=500, seed=7)
    again = evaluate_verdicts(verdicts, n_resamples=500, seed=7)
    other = evaluate_verdicts(verdicts, n_resamples=500, seed=8)
    low, high = first["accuracy_ci"]
    assert low <= first["accuracy"] <= high and low < high
    low, high = first["macro_f1_ci"]
    assert low <= first["macro_f1"] <= high and low < high
    assert first == again
    assert other["accuracy_ci"] != first["accuracy_ci"]


def test_results_are_strict_json():
    for verdicts in (mixed_verdicts(category="c"), [], [verdict(1, "A", "error")]):
        result = evaluate_verdicts(verdicts, n_resamples=50)
        assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_empty_and_all_error_inputs_are_undefined_not_nan():
    result = evaluate_verdicts([verdict(1, "A", "error")], n_resamples=50)
    assert result["n_error"] == 1
    for key in (
        "accuracy",
        "accuracy_ties_half",
        "macro_f1",
        "accuracy_ci",
        "macro_f1_ci",
        "tie_rate",
        "position_consistency",
        "criterion_inconsistency",
    ):
        assert result[key] is None, key
    empty = evaluate_verdicts([], n_resamples=50)
    assert empty["n"] == 0 and empty["cost"]["per_pair"]["requests"] is None


def test_mcnemar_on_known_case():
    # 10 discordant pairs all won by x, 5 both right, 3 both wrong
    gold = ["A"] * 18
    pred_x = ["A"] * 10 + ["A"] * 5 + ["B"] * 3
    pred_y = ["B"] * 10 + ["A"] * 5 + ["B"] * 3
    xs = [
        verdict(i, g, p, method="criteralign")
        for i, (g, p) in enumerate(zip(gold, pred_x, strict=True))
    ]
    ys = [
        verdict(i, g, p, method="monolithic")
        for i, (g, p) in enumerate(zip(gold, pred_y, strict=True))
    ]
    result = paired_difference(xs, ys, n_resamples=300)
    assert result["n"] == 18
    assert (result["x_only"], result["y_only"], result["both_right"], result["both_wrong"]) == (
        10,
        0,
        5,
        3,
    )
    assert result["p_value"] == pytest.approx(2 * 0.5**10)
    assert result["difference"] == pytest.approx(10 / 18)
    assert result["accuracy_x"] == pytest.approx(15 / 18)
    low, high = result["difference_ci"]
    assert 0 < low <= result["difference"] <= high
    assert paired_difference(xs, ys, n_resamples=300) == result
    reverse = paired_difference(ys, xs, n_resamples=300)
    assert reverse["difference"] == pytest.approx(-10 / 18)
    assert reverse["p_value"] == pytest.approx(result["p_value"])
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_paired_difference_joins_on_ok_labelled_pairs():
    xs = [
        verdict("p1", "A", "A"),
        verdict("p2", "A", "error"),
        verdict("p3", "B", "B"),
        verdict("p4", None, "A"),
        verdict("only_x", "A", "A"),
    ]
    ys = [
        verdict("p3", "B", "A"),
        verdict("p1", "A", "A"),
        verdict("p2", "A", "A"),
        verdict("p4", None, "A"),
        verdict("only_y", "A", "A"),
    ]
    result = paired_difference(xs, ys, n_resamples=0)
    assert result["n"] == 2  # p1 and p3
    assert (result["x_only"], result["y_only"]) == (1, 0)
    assert result["p_value"] == pytest.approx(1.0)
    assert result["difference_ci"] is None


def test_paired_difference_without_overlap_or_discordance():
    same = [verdict(1, "A", "A"), verdict(2, "B", "A")]
    assert paired_difference(same, same, n_resamples=100)["p_value"] == 1.0
    empty = paired_difference(same, [], n_resamples=100)
    assert empty["n"] == 0 and empty["difference"] is None and empty["p_value"] is None


def test_paired_difference_rejects_bad_input():
    with pytest.raises(ValueError, match="duplicate"):
        paired_difference([verdict(1, "A", "A"), verdict(1, "A", "B")], [])
    with pytest.raises(ValueError, match="label"):
        paired_difference([verdict(1, "A", "A")], [verdict(1, "B", "A")])


def test_compare_methods_columns_and_values():
    results = {
        "criteralign": evaluate_verdicts(
            mixed_verdicts(
                cost=Usage(model_calls=4, prompt_tokens=30, completion_tokens=10, cache_hits=1)
            ),
            n_resamples=100,
        ),
        "monolithic": evaluate_verdicts(
            [verdict(1, "A", "error", method="monolithic")], n_resamples=100
        ),
    }
    frame = compare_methods(results)
    assert list(frame.columns) == COMPARE_COLUMNS
    assert list(frame.index) == ["criteralign", "monolithic"]
    assert frame.index.name == "method"
    row = frame.loc["criteralign"]
    assert row["n"] == 9 and row["errors"] == 2
    assert row["accuracy"] == pytest.approx(4 / 7)
    assert row["acc_lo"] <= row["accuracy"] <= row["acc_hi"]
    assert row["calls_per_pair"] == pytest.approx(4.0)
    assert row["tokens_per_pair"] == pytest.approx(40.0)
    assert row["cache_hits"] == 9
    assert frame.loc["monolithic"].isna()["accuracy"]


def test_plot_writes_png(tmp_path):
    frame = compare_methods(
        {
            "criteralign": evaluate_verdicts(mixed_verdicts(), n_resamples=100),
            "monolithic": evaluate_verdicts([verdict(1, "A", "error")], n_resamples=100),
        }
    )
    path = tmp_path / "methods.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_methods(frame, path)
        plot_methods(frame.iloc[:1], tmp_path / "one.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "one.png").stat().st_size > 0


SIDES = st.sampled_from(["A", "B", "tie"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), SIDES), st.one_of(SIDES, st.just("error"))), max_size=25
    ),
    st.integers(0, 2**16),
)
def test_property_rates_in_unit_interval(pairs, seed):
    verdicts = [verdict(i, g, p) for i, (g, p) in enumerate(pairs)]
    result = evaluate_verdicts(verdicts, n_resamples=30, seed=seed)
    assert result["n"] == result["n_ok"] + result["n_error"]
    assert result["n"] + result["n_unlabelled"] == len(verdicts)
    for key in ("accuracy", "accuracy_ties_half", "macro_f1", "tie_rate"):
        value = result[key]
        assert value is None or 0.0 <= value <= 1.0, key
    if result["accuracy"] is not None:
        assert result["accuracy"] <= result["accuracy_ties_half"]
        low, high = result["accuracy_ci"]
        assert 0.0 <= low <= high <= 1.0
    if result["macro_f1_ci"] is not None:
        low, high = result["macro_f1_ci"]
        assert 0.0 <= low <= high <= 1.0
    confusion_total = sum(sum(row.values()) for row in result["confusion"].values())
    assert confusion_total == result["n"]
    json.dumps(result, allow_nan=False)


PINNED_GOLD = ["A", "A", "B", "tie", "B", "A", "B", "A", "tie", "B", "A", "B"]


def test_bootstrap_numbers_are_pinned():
    """Intervals of both bootstraps before prefjudge.stats, bit for bit."""
    pred_x = ["A", "B", "B", "tie", "A", "A", "tie", "A", "A", "B", "tie", "B"]
    pred_y = ["B", "B", "B", "tie", "B", "A", "B", "B", "tie", "A", "A", "B"]
    vx = [verdict(i, g, p) for i, (g, p) in enumerate(zip(PINNED_GOLD, pred_x, strict=True))]
    vy = [verdict(i, g, p, method="monolithic")
          for i, (g, p) in enumerate(zip(PINNED_GOLD, pred_y, strict=True))]
    result = evaluate_verdicts(vx, n_resamples=400, seed=13)
    assert result["accuracy_ci"] == [0.25, 0.8333333333333334]
    assert result["macro_f1_ci"] == [0.21636363636363648, 0.8190638528138529]
    assert paired_difference(vx, vy, n_resamples=300, seed=2)["difference_ci"] == [
        -0.5, 0.3333333333333333]
