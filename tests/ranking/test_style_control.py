"""Style-controlled Bradley–Terry (prefjudge.ranking.style, ``rank --control``) and features.

The fit is checked against an independent re-implementation of arena-hard-auto's
``construct_style_matrices`` + ``fit_bt`` (pandas + scikit-learn's LogisticRegression),
and the unpenalised fit against a maximum-likelihood fit solved here with scipy in a
different parametrisation.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pj_cli import invoke
from pj_files import write_jsonl
from scipy.optimize import minimize
from scipy.special import expit

from prefjudge.features import (
    FALLBACK_TOKENIZER,
    features_record,
    response_features,
    tokenizer_for,
)
from prefjudge.io import InputError
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import style
from prefjudge.ranking.inputs import BattleColumns, read_battles
from prefjudge.stats import resample_indices

sklearn_linear = pytest.importorskip("sklearn.linear_model", reason="pip install scikit-learn")

N_MODELS, N_BATTLES, SEED = 8, 3000, 20240611
BASELINE, BASELINE_RATING = "model-3", 1114.0
ARENA_ELEMENTS = {  # arena-hard-auto's conv_metadata keys, side a then side b
    "length": ["sum_assistant_a_tokens", "sum_assistant_b_tokens"],
    "markdown": ["header_count_a", "list_count_a", "bold_count_a",
                 "header_count_b", "list_count_b", "bold_count_b"],
    "style": ["sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a",
              "sum_assistant_b_tokens", "header_count_b", "list_count_b", "bold_count_b"],
}


# --------------------------------------------------------------------------- the fixture


def _response(rng: np.random.Generator, verbosity: float, markdown: float) -> dict:
    return {
        "token_len": int(rng.poisson(verbosity)),
        "header_count": {f"h{k}": int(rng.poisson(markdown / (2 * k))) for k in (1, 2, 3)},
        "list_count": {"ordered": int(rng.poisson(markdown)),
                       "unordered": int(rng.poisson(markdown / 2))},
        "bold_count": {"**": int(rng.poisson(markdown / 3)), "__": int(rng.poisson(0.1))},
    }


def _total(value) -> float:
    return sum(value.values()) if isinstance(value, dict) else value


def make_battles(seed: int = SEED, n_models: int = N_MODELS, n: int = N_BATTLES) -> list[dict]:
    """Battles whose winner depends on the models AND on longer, list-heavier answers."""
    rng = np.random.default_rng(seed)
    names = [f"model-{i}" for i in range(n_models)]
    strength = rng.normal(0.0, 0.5, n_models)
    verbosity = rng.uniform(80, 900, n_models)
    markdown = rng.uniform(0.2, 4.0, n_models)
    rows = []
    for _ in range(n):
        i, j = rng.choice(n_models, size=2, replace=False)
        fa = _response(rng, verbosity[i], markdown[i])
        fb = _response(rng, verbosity[j], markdown[j])
        ratio = {k: (_total(fa[k]) - _total(fb[k])) / (_total(fa[k]) + _total(fb[k]) + 1)
                 for k in fa}
        logit = strength[i] - strength[j] + 1.2 * ratio["token_len"] + 0.5 * ratio["list_count"]
        u, p = rng.uniform(), expit(logit)
        winner = "tie" if abs(u - p) < 0.07 else ("model_a" if u < p else "model_b")
        rows.append({"model_a": names[i], "model_b": names[j], "winner": winner,
                     "features_a": fa, "features_b": fb})
    return rows


@pytest.fixture(scope="module")
def battle_rows() -> list[dict]:
    return make_battles()


@pytest.fixture(scope="module")
def battle_file(tmp_path_factory, battle_rows) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("style") / "battles.jsonl", battle_rows)


@pytest.fixture(scope="module")
def frame(battle_file) -> pd.DataFrame:
    return read_battles(battle_file)[0]


# --------------------------------------------------------------------------- the reference


def arena_conv_metadata(row: dict) -> dict:
    """A battle's features as arena-hard-auto's flat conv_metadata."""
    meta = {}
    for side in ("a", "b"):
        features = row[f"features_{side}"]
        meta[f"sum_assistant_{side}_tokens"] = features["token_len"]
        for name in ("header_count", "list_count", "bold_count"):
            meta[f"{name}_{side}"] = features[name]
    return meta


def arena_reference(rows: list[dict], control: str, baseline: str = BASELINE,
                    baseline_rating: float = BASELINE_RATING) -> tuple[pd.Series, np.ndarray]:
    """arena-hard-auto's style-controlled ratings, re-implemented independently.

    Duplicated battles, ±log(10) model columns, standardised (diff / (sum + 1)) style
    columns, ties as one win each side, LogisticRegression(fit_intercept=False) (L2, C=1,
    lbfgs), Elo = 400 * coef + 1000, shifted so the baseline has ``baseline_rating``.
    Only ``tol`` is tightened from scikit-learn's default 1e-4 (same objective, solved to
    convergence; at 1e-4 lbfgs stops ~0.1 Elo short).
    """
    df = pd.DataFrame({"model_a": [r["model_a"] for r in rows],
                       "model_b": [r["model_b"] for r in rows],
                       "winner": [r["winner"] for r in rows],
                       "conv_metadata": [arena_conv_metadata(r) for r in rows]})
    elements = ARENA_ELEMENTS[control]
    models = pd.concat([df["model_a"], df["model_b"]]).unique()
    models = pd.Series(np.arange(len(models)), index=models)
    df = pd.concat([df, df], ignore_index=True)
    p, n, k = len(models), len(df), len(elements) // 2
    x = np.zeros([n, p + k])
    x[np.arange(n), models[df["model_a"]].to_numpy()] = +math.log(10)
    x[np.arange(n), models[df["model_b"]].to_numpy()] = -math.log(10)
    vectors = np.array([
        df["conv_metadata"].map(lambda m, e=e: m[e] if isinstance(m[e], int)
                                else sum(m[e].values())).tolist()
        for e in elements
    ], dtype=float)
    diff = vectors[:k] - vectors[k:]
    total = vectors[:k] + vectors[k:] + 1
    diff = diff / total
    x[:, -k:] = ((diff - diff.mean(axis=1)[:, None]) / diff.std(axis=1)[:, None]).T
    y = np.zeros(n)
    y[df["winner"] == "model_a"] = 1.0
    tie = (df["winner"] == "tie").to_numpy().copy()
    tie[n // 2:] = False
    y[tie] = 1.0
    lr = sklearn_linear.LogisticRegression(fit_intercept=False, tol=1e-12, max_iter=100_000)
    lr.fit(x, y)
    elo = 400 * lr.coef_[0] + 1000
    elo += baseline_rating - elo[models[baseline]]
    return pd.Series(elo[:p], index=models.index), lr.coef_[0][p:]


# --------------------------------------------------------------------------- (a) vs arena-hard


@pytest.mark.parametrize("control", ["length", "markdown", "style"])
def test_l2_fit_matches_arena_hard_reference(battle_rows, frame, control):
    reference, reference_coef = arena_reference(battle_rows, control)
    board = style.style_leaderboard(frame, control, anchor=(BASELINE, BASELINE_RATING),
                                    n_resamples=0)
    ours = board.table.set_index("model")["rating"]
    assert sorted(ours.index) == sorted(reference.index)
    assert np.abs(ours - reference.reindex(ours.index)).max() < 0.01
    assert np.abs(board.style["coef"].to_numpy() - reference_coef).max() < 1e-4
    assert list(board.style["feature"]) == list(style.CONTROLS[control])
    # the same battles give the same reference with or without the anchor shift: the
    # unanchored board is centred on 1000, as arena-hard's 400·coef + 1000 is under L2
    free = style.style_leaderboard(frame, control, n_resamples=0).table.set_index("model")
    shift = BASELINE_RATING - (400 * board.coef[board.models.index(BASELINE)] + 1000)
    assert np.abs(free["rating"] + shift - reference.reindex(free.index)).max() < 0.01


def test_style_effects_are_found_and_change_the_ranking(frame):
    board = style.style_leaderboard(frame, "style", n_resamples=0)
    coef = board.style.set_index("feature")["coef"]
    assert coef["token_len"] > 0.1 and coef["list_count"] > 0.05  # the planted effects
    plain = bt.leaderboard(bt.aggregate(frame["model_a"], frame["model_b"], frame["winner"]),
                           n_resamples=0).table.set_index("model")["rating"]
    controlled = board.table.set_index("model")["rating"]
    assert np.abs(plain - controlled.reindex(plain.index)).max() > 20


def test_conv_metadata_rows_read_like_features(tmp_path, battle_rows, frame):
    rows = [{k: r[k] for k in ("model_a", "model_b", "winner")}
            | {"conv_metadata": arena_conv_metadata(r)} for r in battle_rows[:400]]
    from_meta = read_battles(write_jsonl(tmp_path / "meta.jsonl", rows))[0]
    a = style.style_leaderboard(from_meta, "style", n_resamples=0)
    b = style.style_leaderboard(frame.iloc[:400], "style", n_resamples=0)
    assert np.allclose(a.style["coef"], b.style["coef"], atol=1e-9)
    assert np.allclose(a.theta, b.theta, atol=1e-9)


def test_design_matrix_is_arena_hards_duplicated_design(frame):
    design = style.build_design(frame.iloc[:50], "length")
    x, y, weight = style.design_matrix(design)
    assert x.shape == (100, design.n_models + 1) and (weight == 1).all()
    assert np.allclose(np.sort(x[0, :-1])[[0, -1]], [-math.log(10), math.log(10)])
    ties = np.flatnonzero(design.target == 0.5)
    assert len(ties) and (y[ties] == 1).all() and (y[ties + 50] == 0).all()
    assert x[:50, -1].mean() == pytest.approx(0, abs=1e-12)
    assert x[:50, -1].std() == pytest.approx(1)


# --------------------------------------------------------------------------- (b) the MLE


def reference_mle(design: style.StyleDesign) -> tuple[np.ndarray, np.ndarray]:
    """Maximum likelihood with model 0 fixed at 0 (not a gauge term), by scipy BFGS."""
    p = design.n_models

    def nll(params: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.concatenate([[0.0], params[: p - 1]])
        gamma = params[p - 1:]
        z = theta[design.a] - theta[design.b] + design.style @ gamma
        value = np.sum(np.logaddexp(0, z) - design.target * z)
        r = expit(z) - design.target
        g_theta = np.bincount(design.a, r, p) - np.bincount(design.b, r, p)
        return value, np.concatenate([g_theta[1:], design.style.T @ r])

    start = np.zeros(p - 1 + len(design.features))
    result = minimize(nll, start, jac=True, method="BFGS", options={"gtol": 1e-9})
    assert np.abs(result.jac).max() < 1e-6
    theta = np.concatenate([[0.0], result.x[: p - 1]])
    return theta - theta.mean(), result.x[p - 1:]


@pytest.mark.parametrize("control", ["length", "style"])
def test_unpenalised_fit_is_the_maximum_likelihood(frame, control):
    design = style.build_design(frame, control)
    theta, gamma = reference_mle(design)
    fit = style.fit_style(design, "none")
    assert np.abs(fit.theta - theta).max() * bt.ELO_PER_LOGIT < 0.01
    assert np.abs(fit.gamma - gamma).max() < 1e-4
    assert fit.coef.mean() == pytest.approx(0, abs=1e-12)
    l2 = style.fit_style(design, "l2")
    # the L2 penalty (fixed, while the likelihood grows with 3000 battles) shrinks a little
    assert 0.1 < np.abs(l2.theta - fit.theta).max() * bt.ELO_PER_LOGIT < 20


def test_unpenalised_fit_refuses_an_unbounded_model():
    rows = make_battles(n=300)
    for row in rows:  # model-0 never loses
        if row["model_b"] == "model-0":
            row["winner"] = "model_b"
        elif row["model_a"] == "model-0":
            row["winner"] = "model_a"
    frame = pd.DataFrame([{k: r[k] for k in ("model_a", "model_b", "winner")}
                          | {f"f{s}_token_len": r[f"features_{s}"]["token_len"]
                             for s in "ab"} for r in rows])
    with pytest.raises(bt.RankError, match="control-penalty l2"):
        style.style_leaderboard(frame, "length", penalty="none", n_resamples=0)
    board = style.style_leaderboard(frame, "length", n_resamples=0)
    assert board.table.iloc[0]["model"] == "model-0"


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_resamples_rows_as_the_shared_helper_draws_them(frame):
    part = frame.iloc[:600]
    design = style.build_design(part, "length")
    point = style.fit_style(design)
    boot = style.bootstrap_style(design, point, n_resamples=3, seed=11)
    rows = resample_indices(len(part), 3, 11)[2]
    refit = style.fit_style(design, weight=np.bincount(rows, minlength=len(part)).astype(float))
    assert np.allclose(boot.coef[2], refit.coef, atol=1e-6)
    assert np.allclose(boot.gamma[2], refit.gamma, atol=1e-6)


def test_bootstrap_intervals_are_seeded_and_cover_the_estimates(frame):
    frame = frame.iloc[:1500]
    one = style.style_leaderboard(frame, "style", n_resamples=40, seed=5)
    two = style.style_leaderboard(frame, "style", n_resamples=40, seed=5)
    pd.testing.assert_frame_equal(one.style, two.style)
    pd.testing.assert_frame_equal(one.table, two.table)
    s = one.style
    assert (s["lower"] < s["coef"]).all() and (s["coef"] < s["upper"]).all()
    t = one.table
    assert ((t["lower"] <= t["rating"]) & (t["rating"] <= t["upper"])).all()
    assert ((t["rank_lower"] <= t["rank"]) & (t["rank"] <= t["rank_upper"])).all()
    other = style.style_leaderboard(frame, "style", n_resamples=40, seed=6)
    assert not np.allclose(other.style["lower"], s["lower"])


# --------------------------------------------------------------------------- (c) the CLI


def test_rank_control_style_end_to_end(tmp_path, battle_file, frame):
    js, out = tmp_path / "r.json", tmp_path / "r.csv"
    result = invoke("rank", battle_file, "--control", "style", "--json", js, "-o", out,
                    "--bootstrap", 20, "--anchor", f"{BASELINE}={BASELINE_RATING}")
    assert result.exit_code == 0, result.output
    assert "Style coefficients" in result.output and "list_count" in result.output
    payload = json.loads(js.read_text())
    control = payload["style_control"]
    assert control["control"] == "style" and control["penalty"] == "l2"
    assert payload["control"] == "style" and payload["bootstrap_unit"] == "battles"
    expected = style.style_leaderboard(frame, "style", anchor=(BASELINE, BASELINE_RATING),
                                       n_resamples=0)
    coefficients = {c["feature"]: c for c in control["coefficients"]}
    assert list(coefficients) == ["token_len", "header_count", "list_count", "bold_count"]
    for row in expected.style.itertuples():
        got = coefficients[row.feature]
        assert got["coef"] == pytest.approx(row.coef, abs=1e-9)
        assert got["lower"] < got["coef"] < got["upper"]
        assert got["elo_per_sd"] == pytest.approx(row.coef * 400 / math.log(10))
    ratings = {r["model"]: r["rating"] for r in payload["ratings"]}
    assert ratings[BASELINE] == pytest.approx(BASELINE_RATING)
    reference, _ = arena_reference(make_battles(), "style")
    assert max(abs(ratings[m] - reference[m]) for m in ratings) < 0.01
    assert list(pd.read_csv(out)["model"]) == [r["model"] for r in payload["ratings"]]


def test_rank_help_and_option_conflicts(battle_file):
    help_text = invoke("rank", "--help").output
    assert "--control" in help_text and "--control-penalty" in help_text
    assert "(f_a - f_b) / (f_a + f_b + 1)" in help_text
    davidson = invoke("rank", battle_file, "--control", "length", "--ties", "davidson")
    assert davidson.exit_code != 0 and "half or drop" in davidson.output
    alpha = invoke("rank", battle_file, "--control", "length", "--alpha", "0.1")
    assert alpha.exit_code != 0 and "--control-penalty" in alpha.output


def test_rank_control_by_category_and_penalty_none(tmp_path, battle_rows):
    rows = [r | {"category": "odd" if i % 2 else "even"} for i, r in enumerate(battle_rows)]
    path = write_jsonl(tmp_path / "cat.jsonl", rows)
    js = tmp_path / "cat.json"
    result = invoke("rank", path, "--control", "length", "--control-penalty", "none",
                    "--by", "category", "--json", js, "--bootstrap", 10)
    assert result.exit_code == 0, result.output
    payload = json.loads(js.read_text())
    assert set(payload["leaderboards"]) == {"even", "odd"}
    for summary in payload["leaderboards"].values():
        assert summary["style_control"]["penalty"] == "none"
        assert summary["style_control"]["coefficients"][0]["feature"] == "token_len"


# --------------------------------------------------------------------------- (d) bad features


def test_non_numeric_feature_is_reported_with_file_line_and_field(tmp_path, battle_rows):
    rows = [dict(r) for r in battle_rows[:30]]
    rows[4] = rows[4] | {"features_a": {"token_len": "long", "list_count": {"ordered": 2}}}
    rows[7] = rows[7] | {"features_b": {"token_len": 10, "bold_count": {"**": -1}}}
    rows[9] = rows[9] | {"features_b": [1, 2]}
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputError) as info:
        read_battles(path)
    messages = [str(issue) for issue in info.value.issues]
    assert messages[0].startswith(f"{path}:5: field 'features_a.token_len': must be a number")
    assert messages[1].startswith(f"{path}:8: field 'features_b.bold_count.**': must be a number")
    assert messages[2].startswith(f"{path}:10: field 'features_b': must be an object")
    result = invoke("rank", path, "--control", "length")
    assert result.exit_code != 0
    assert f"{path}:5: field 'features_a.token_len'" in result.output


def test_battles_without_features_stop_control_unless_skipped(tmp_path, battle_rows):
    rows = [dict(r) for r in battle_rows[:400]]
    rows[2] = {k: v for k, v in rows[2].items() if k != "features_b"}
    rows[6] = rows[6] | {"features_a": {"header_count": 1}}
    path = write_jsonl(tmp_path / "missing.jsonl", rows)
    result = invoke("rank", path, "--control", "length")
    assert result.exit_code != 0
    assert f"{path}:3: field 'features_b': no token_len (needed by --control length" in (
        result.output)
    assert f"{path}:7: field 'features_a': no token_len" in result.output
    assert invoke("rank", path, "--bootstrap", 5).exit_code == 0  # plain rank needs none
    js = tmp_path / "skipped.json"
    skipped = invoke("rank", path, "--control", "length", "--skip-invalid", "--json", js,
                     "--bootstrap", 5)
    assert skipped.exit_code == 0, skipped.output
    payload = json.loads(js.read_text())
    assert payload["n_battles"] == 398
    assert [s.split(": field")[0] for s in payload["skipped_rows"]] == [f"{path}:3", f"{path}:7"]


def test_csv_cells_hold_features_as_json(tmp_path, battle_rows):
    rows = battle_rows[:200]
    table = pd.DataFrame({"a": [r["model_a"] for r in rows], "b": [r["model_b"] for r in rows],
                          "winner": [r["winner"] for r in rows],
                          "features_a": [json.dumps(r["features_a"]) for r in rows],
                          "features_b": [json.dumps(r["features_b"]) for r in rows]})
    path = tmp_path / "f.csv"
    table.to_csv(path, index=False)
    frame, _ = read_battles(path, columns=BattleColumns("a", "b"))
    assert frame["fa_list_count"].iloc[0] == _total(rows[0]["features_a"]["list_count"])
    assert style.missing_features(frame, "style").sum() == 0


# --------------------------------------------------------------------------- (e) features


MARKDOWN = """# Plan

Setext heading
--------------

Some **bold** and __also bold__ and *not bold* and `**code**`.

    # indented code, not a heading

```python
# not a heading
- not a list item
**not bold**
```

1. first
2. second
   - nested **one**
   - nested two
     * deeper

> ## quoted heading
"""


def test_response_features_count_markdown_outside_code():
    features = response_features(MARKDOWN)
    assert features["header_count"] == 3  # h1, setext h2, quoted h2
    assert features["list_count"] == 5  # 2 ordered, 2 nested, 1 deeper
    assert features["bold_count"] == 3  # **bold**, __also bold__, nested **one**
    assert features["token_len"] > 60  # the whole text, code block included
    record = features_record(MARKDOWN)
    assert record["list_count"] == {"ordered": 2, "unordered": 3}
    assert record["bold_count"] == {"**": 2, "__": 1}
    assert record["header_count"]["h1"] == 1 and record["header_count"]["h2"] == 2
    assert record["tokenizer"] == FALLBACK_TOKENIZER
    assert response_features("def f(x):") == {"token_len": 6, "header_count": 0,
                                               "list_count": 0, "bold_count": 0}


def test_unclosed_bold_and_code_only_answers_count_nothing():
    assert response_features("**open and never closed")["bold_count"] == 0
    assert response_features("```\n# x\n- y\n```")["header_count"] == 0


def test_tokenizer_fallback_when_none_is_on_disk(tmp_path):
    assert tokenizer_for(None).name == FALLBACK_TOKENIZER
    assert tokenizer_for("no-such-org-7f3a/no-such-model").name == FALLBACK_TOKENIZER
    assert tokenizer_for(str(tmp_path / "absent")).name == FALLBACK_TOKENIZER
    assert tokenizer_for("not a valid repo id!").name == FALLBACK_TOKENIZER


def test_tokenizer_json_in_a_model_directory_is_used(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "def": 1, "f": 2, "(": 3, ")": 4, ":": 5}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    counter = tokenizer_for(str(tmp_path))
    assert counter.name == f"tokenizer.json:{tmp_path}"
    assert counter.count("def f ( ) : return") == 6  # `return` is one unknown token
    assert counter.count("def f():") == 3  # the Whitespace pre-tokenizer keeps "():" whole
    record = features_record("def f ( ) :", counter)
    assert record["token_len"] == 5 and record["tokenizer"] == counter.name


# --------------------------------------------------------------------------- real battles


@pytest.mark.shared_data
def test_copilot_arena_length_control_on_real_completions(shared_data, tmp_path):
    """113 real battles (one malformed); features computed from the two completions."""
    path = shared_data / "preferences/copilot_arena/copilot_arena_examples_v1.csv"
    raw = pd.read_csv(path).dropna(subset=["model_a", "model_b", "acceptedIndex"])
    rows = [{"model_a": r.model_a, "model_b": r.model_b,
             "winner": "model_a" if r.acceptedIndex == 0 else "model_b",
             "features_a": features_record(str(r.completion_a), tokenizer_for(r.model_a)),
             "features_b": features_record(str(r.completion_b), tokenizer_for(r.model_b))}
            for r in raw.itertuples()]
    frame, _ = read_battles(write_jsonl(tmp_path / "copilot.jsonl", rows))
    assert len(frame) == 112
    board = style.style_leaderboard(frame, "length", n_resamples=100, seed=0)
    length = board.style.iloc[0]
    assert length["feature"] == "token_len" and length["estimable"]
    assert length["lower"] < length["coef"] < length["upper"]
    assert length["upper"] - length["lower"] > 0.3  # 112 battles: a wide interval
    assert len(board.table) == 11 and board.incomplete_resamples == 0


# --------------------------------------------------------------------------- edge cases


def test_a_feature_that_never_varies_is_reported_not_estimable(tmp_path, battle_rows):
    rows = []
    for r in battle_rows[:300]:
        fa, fb = dict(r["features_a"]), dict(r["features_b"])
        fa["header_count"] = fb["header_count"] = 0  # no answer has a header
        rows.append(r | {"features_a": fa, "features_b": fb})
    path = write_jsonl(tmp_path / "noheaders.jsonl", rows)
    js = tmp_path / "n.json"
    result = invoke("rank", path, "--control", "markdown", "--json", js, "--bootstrap", 10)
    assert result.exit_code == 0, result.output
    assert "not estimable" in result.output
    coefficients = json.loads(js.read_text())["style_control"]["coefficients"]
    header = next(c for c in coefficients if c["feature"] == "header_count")
    assert header["coef"] is None and header["estimable"] is False and header["std"] == 0
    others = [c for c in coefficients if c["feature"] != "header_count"]
    assert all(c["coef"] is not None and c["lower"] is not None for c in others)


def test_resamples_that_lose_a_rare_model_are_left_out_and_counted(battle_rows):
    frame = pd.DataFrame(
        [{k: r[k] for k in ("model_a", "model_b", "winner")}
         | {f"f{s}_token_len": r[f"features_{s}"]["token_len"] for s in "ab"}
         for r in battle_rows[:200]]
        + [{"model_a": "rare", "model_b": "model-1", "winner": w, "fa_token_len": 50,
            "fb_token_len": 60} for w in ("model_a", "model_b")]
    )
    board = style.style_leaderboard(frame, "length", n_resamples=40, seed=1)
    assert 0 < board.incomplete_resamples < 40
    assert np.isfinite(board.table[["lower", "upper"]].to_numpy()).all()
    assert np.isfinite(board.style[["lower", "upper"]].to_numpy()).all()
