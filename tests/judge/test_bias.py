"""Judge bias diagnostics: position, length and formatting picks beside the humans'."""

from __future__ import annotations

import random

import numpy as np
import pytest

from prefjudge.judge.bias import bias_diagnostics, fit_logistic
from prefjudge.records import Pair, Verdict
from prefjudge.testbed.report import build_report, render_html

SHORT = "def f(x):\n    return x\n"
LONG = ("## Answer\n\n**Idea**: loop over the items.\n\n- step one\n- step two\n\n"
        "```python\ndef f(x):\n    total = 0\n    for item in x:\n        total += item\n"
        "    return total\n```\n")


def _pairs_and_verdicts(n: int = 120, seed: int = 0) -> tuple[list[Pair], list[Verdict]]:
    """Humans pick at random; the judge always picks the longer, formatted answer first-shown."""
    rng = random.Random(seed)
    pairs, verdicts = [], []
    for i in range(n):
        long_first = rng.random() < 0.5
        a, b = (LONG, SHORT) if long_first else (SHORT, LONG)
        label = rng.choice(["A", "B"])
        pairs.append(Pair(pair_id=f"p{i}", task_id="t", instruction="sum", response_a=a,
                          response_b=b, label=label))
        longer = "A" if long_first else "B"
        verdicts.append(Verdict(
            pair_id=f"p{i}", task_id="t", model_a="A", model_b="B", method="monolithic",
            winner="model_a" if longer == "A" else "model_b", preferred=longer,
            orders={"forward": "A", "swapped": longer}, label=label))
    return pairs, verdicts


def test_a_length_loving_judge_shows_it_beside_indifferent_humans() -> None:
    pairs, verdicts = _pairs_and_verdicts()
    bias = bias_diagnostics(verdicts, pairs, n_resamples=200, regression_n_resamples=50)
    assert bias["n_pairs"] == 120 and bias["tokenizer"] == "fallback:words+punct"
    assert bias["first_shown"]["judge"]["rate"] == 1.0  # forward order always picks A
    assert bias["longer"]["judge"]["rate"] == 1.0
    assert bias["more_formatted"]["judge"]["rate"] == 1.0
    human = bias["longer"]["human"]
    assert 0.3 < human["rate"] < 0.7 and human["ci"][0] < 0.5 < human["ci"][1]
    judge_len = bias["style_regression"]["judge"]["coefficients"]["token_len"]["value"]
    human_len = bias["style_regression"]["human"]["coefficients"]["token_len"]["value"]
    assert judge_len > 3 and abs(human_len) < 1


def test_the_logistic_fit_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4000, 2))
    true = np.array([0.3, 1.5, -0.7])
    y = (rng.random(4000) < 1 / (1 + np.exp(-(true[0] + x @ true[1:])))).astype(float)
    assert fit_logistic(x, y) == pytest.approx(true, abs=0.12)


def test_the_report_shows_the_bias_section() -> None:
    pairs, verdicts = _pairs_and_verdicts(40)
    bias = bias_diagnostics(verdicts, pairs, n_resamples=50, regression_n_resamples=20)
    summary = {"pairs": 40, "pairs_file": "x.jsonl", "methods": {"monolithic": {"bias": bias}}}
    report = build_report([], judge_summary=summary)
    section = report.section("judge-bias")
    shown = section.tables[0].display
    assert list(shown["who"]) == ["judge", "human"]
    assert shown["picks longer"].iloc[0].startswith("100.0 %")
    html = render_html(report)
    assert "Judge bias beside the humans" in html
