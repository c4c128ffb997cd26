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


def test_recorded_features_are_read_only_when_they_are_whole_counts() -> None:
    from prefjudge.judge.bias import recorded_counts

    whole = {"token_len": 66.0, "header_count": 0.0, "list_count": 2.0, "bold_count": 0.0}
    assert recorded_counts(whole) == {"token_len": 66, "header_count": 0, "list_count": 2,
                                      "bold_count": 0}
    for bad in ({"dup": 1.0}, {**whole, "token_len": float("nan")},
                {**whole, "token_len": float("inf")}, {**whole, "list_count": -1.0},
                {**whole, "bold_count": 0.5}, {**whole, "token_len": 10**400}, None):
        assert recorded_counts(bad) is None, bad


def _verdict_reply(body: dict) -> str:
    """A fake judge that picks the longer answer (LONG), in either order: decisive."""
    import json

    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    long_first = text.find("**Idea**") < text.find("    return x\n")
    return json.dumps({"reason": "r", "verdict": "A" if long_first else "B"})


@pytest.mark.parametrize(
    "repeated", ['"features_a": {"dup": 1}', '"features_b": {"token_len": NaN}']
)
def test_judge_eval_resumes_an_output_whose_line_repeats_a_features_key(
    fake_server, tmp_path, repeated: str
) -> None:
    """A key given twice keeps its last value (``prefjudge.io.parse_json``); features that
    are then not whole counts are counted again from the pair, not a ``KeyError``."""
    import json

    from click.testing import CliRunner

    from prefjudge.cli import main

    pairs, _ = _pairs_and_verdicts(n=4, seed=3)  # under 5: no slow style regression
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(p.model_dump_json() + "\n" for p in pairs))
    fake_server.reply = _verdict_reply
    out = tmp_path / "eval"
    args = ["judge-eval", str(source), "-o", str(out), "--method", "monolithic", "--backend",
            "openai", "--base-url", fake_server.url, "--model", "judge", "--cache",
            str(tmp_path / "c.sqlite"), "--bootstrap", "20"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    before = json.loads((out / "summary.json").read_text())
    verdicts = out / "verdicts-monolithic.jsonl"
    lines = verdicts.read_text().splitlines()
    assert '"features_a": {"token_len"' in lines[0]
    lines[0] = lines[0][:-1] + ", " + repeated + "}"  # the key again, at the end: JSON keeps it
    verdicts.write_text("\n".join(lines) + "\n")
    fake_server.reset_counts()
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert again.exception is None or isinstance(again.exception, SystemExit)
    assert fake_server.calls == 0  # resumed: nothing judged again
    after = json.loads((out / "summary.json").read_text())
    bias = [s["methods"]["monolithic"]["bias"] for s in (before, after)]
    assert bias[0]["n_pairs"] == 4 and bias[0]["longer"]["judge"]["n"] == 4
    assert bias[1] == bias[0]
