"""The judge commands over HTTP against a scripted OpenAI-compatible server.

Runs without vLLM: the fake server (tests/backends/pj_backend_helpers.py) answers with a
judge whose behaviour is known, so the metrics `judge-eval` prints can be checked exactly,
and the real openai backend, cache, resume and CLI plumbing are exercised.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from prefjudge.io import read_existing
from prefjudge.records import Pair, Verdict

pytest.importorskip("openai")

from prefjudge.cli import main

GOOD = "def f(xs):\n    # GOOD\n    return sum(xs) if xs else 0"
BAD = "def f(xs):\n    return xs[0] + sum(xs[1:])"


def answer(text: str, label: str) -> str:
    match = re.search(rf"## Answer {label}\n(`{{3,}})\n(.*?)\n\1", text, re.S)
    return match.group(2) if match else ""


def judge_reply(body: dict[str, Any], *, biased: bool = False) -> str:
    """A judge that prefers the GOOD response (or, biased, whatever is shown first)."""
    name = body["response_format"]["json_schema"]["name"]
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    a, b = "GOOD" in answer(text, "A"), "GOOD" in answer(text, "B")
    side = "A" if biased or (a and not b) else "B" if b and not a else "tie"
    ids = re.findall(r"^(c[\d.]+): ", text.split("## Criteria")[-1], re.M)
    if name == "CriteriaReply":
        body_ = {"criteria": ["handles the empty list", "clear names", "has a docstring"]}
    elif name == "CriterionJudgeReply":
        body_ = {"verdicts": {i: {"reason": "r", "verdict": side} for i in ids}}
    elif name in ("FinalReply", "MonolithicReply"):
        body_ = {"reason": "r", "verdict": side, **({"decisive": ["c1"]} if name[0] == "F" else {})}
    elif name == "PointwiseReply":
        good = "GOOD" in text.split("## Answer\n", 1)[1]
        body_ = {"scores": {i: {"reason": "r", "score": 5 if good else 2} for i in ids}}
    else:
        raise AssertionError(name)
    return json.dumps(body_)


def pairs_file(tmp_path: Path, n: int = 6) -> Path:
    rows = []
    for i in range(n):
        good_first = i % 3 != 0
        rows.append(Pair(pair_id=f"p{i}", task_id=f"t{i}", instruction=f"Write f {i}.",
                         response_a=GOOD if good_first else BAD,
                         response_b=BAD if good_first else GOOD,
                         model_a="alpha" if good_first else "beta",
                         model_b="beta" if good_first else "alpha",
                         label="A" if good_first else "B", category=f"c{i % 2}"))
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return path


def backend_args(fake_server: Any, tmp_path: Path) -> list[str]:
    return ["--backend", "openai", "--base-url", fake_server.url, "--model", "fake-judge",
            "--cache", str(tmp_path / "cache.sqlite"), "--min-criteria", "3"]


def test_judge_eval_metrics_are_exact_for_a_known_judge(fake_server: Any, tmp_path: Path) -> None:
    fake_server.reply = judge_reply
    out = tmp_path / "eval"
    result = CliRunner().invoke(main, ["judge-eval", str(pairs_file(tmp_path)), "-o", str(out),
                                       "--bootstrap", "200", *backend_args(fake_server, tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    for method, calls in (("monolithic", 2), ("pointwise", 3), ("criteralign", 5)):
        res = summary["methods"][method]
        assert res["n"] == 6 and res["n_error"] == 0
        assert res["accuracy"] == 1.0 and res["macro_f1"] == 1.0
        assert res["accuracy_ci"] == [1.0, 1.0]
        assert res["tie_rate"] == 0.0
        assert res["confusion"]["A"]["A"] == 4 and res["confusion"]["B"]["B"] == 2
        # pointwise shares stage 1 with criteralign through the cache
        total = res["cost"]["total"]
        assert total["requests"] == 6 * calls
    assert summary["methods"]["criteralign"]["cost"]["total"]["cache_hits"] == 6
    assert summary["methods"]["monolithic"]["position_consistency"] == 1.0
    assert summary["methods"]["criteralign"]["criterion_inconsistency"] == 0.0
    assert fake_server.calls == 6 * 2 + 6 * 3 + 6 * 4  # criteria asked once per pair
    assert "McNemar" in result.output


def test_a_position_biased_judge_scores_no_better_than_ties(fake_server: Any,
                                                            tmp_path: Path) -> None:
    fake_server.reply = lambda body: judge_reply(body, biased=True)
    out = tmp_path / "eval"
    result = CliRunner().invoke(main, ["judge-eval", str(pairs_file(tmp_path)), "-o", str(out),
                                       "--method", "monolithic", "--method", "criteralign",
                                       *backend_args(fake_server, tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    for method in ("monolithic", "criteralign"):
        res = summary["methods"][method]
        assert res["accuracy"] == 0.0 and res["accuracy_ties_half"] == 0.5
        assert res["tie_rate"] == 1.0 and res["position_consistency"] == 0.0
    assert summary["methods"]["criteralign"]["criterion_inconsistency"] == 1.0


def test_judge_resumes_and_its_verdicts_rank(fake_server: Any, tmp_path: Path) -> None:
    fake_server.reply = judge_reply
    pairs = pairs_file(tmp_path)
    out = tmp_path / "verdicts.jsonl"
    runner = CliRunner()
    args = ["judge", str(pairs), "-o", str(out), *backend_args(fake_server, tmp_path)]
    first = runner.invoke(main, [*args, "--limit", "4"])
    assert first.exit_code == 0, first.output
    assert len(read_existing(out)) == 4 and fake_server.calls == 4 * 5
    fake_server.reset_counts()
    second = runner.invoke(main, args)
    assert second.exit_code == 0, second.output
    assert "resuming: 4 verdicts already" in second.output
    assert fake_server.calls == 2 * 5  # only the two new pairs
    verdicts = [Verdict.model_validate(d) for d in read_existing(out)]
    assert [v.pair_id for v in verdicts] == [f"p{i}" for i in range(6)]
    assert {v.winner for v in verdicts} == {"model_a", "model_b"}
    assert json.loads(out.with_name("verdicts.summary.json").read_text())["accuracy"] == 1.0
    ranked = runner.invoke(main, ["rank", str(out), "--alpha", "0.01",
                                  "-o", str(tmp_path / "r.csv")])
    assert ranked.exit_code == 0, ranked.output
    rows = (tmp_path / "r.csv").read_text().splitlines()
    assert rows[1].startswith("alpha,")  # alpha wrote the GOOD code every time


def test_a_failing_server_gives_error_verdicts_that_rank_skips(fake_server: Any,
                                                               tmp_path: Path) -> None:
    def broken(body: dict[str, Any]) -> str:
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return "no json here" if "Write f 1." in text else judge_reply(body)

    fake_server.reply = broken
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(main, ["judge", str(pairs_file(tmp_path)), "-o", str(out),
                                       "--method", "monolithic", "--max-output-retries", "0",
                                       *backend_args(fake_server, tmp_path)])
    assert result.exit_code == 0, result.output
    verdicts = {d["pair_id"]: Verdict.model_validate(d) for d in read_existing(out)}
    bad = verdicts["p1"]
    assert bad.status == "error" and bad.winner is None
    assert bad.error.startswith("monolithic (forward): invalid_output")
    assert "error p1: monolithic" in result.output
    assert sum(v.status == "ok" for v in verdicts.values()) == 5
    ranked = CliRunner().invoke(main, ["rank", str(out), "--skip-invalid", "--alpha", "0.01"])
    assert ranked.exit_code == 0, ranked.output
    assert "the judge failed" in ranked.output


def test_bad_pair_files_name_the_line_and_field(fake_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(Pair(pair_id="a", task_id="a", instruction="i", response_a="x",
                         response_b="y").model_dump_json() + "\n"
                    + '{"pair_id": "b", "task_id": "b", "instruction": "i", "response_a": "x",'
                      ' "response_b": "y", "label": "left"}\n')
    result = CliRunner().invoke(main, ["judge", str(path), "-o", str(tmp_path / "v.jsonl"),
                                       *backend_args(fake_server, tmp_path)])
    assert result.exit_code == 1
    assert "pairs.jsonl:2" in result.output and "label" in result.output
    assert fake_server.calls == 0
