"""Ranking without a judge model: evidence verdicts on the bundled sample feed ``rank``.

The sample's three "models" differ in quality by construction (tests passed, instructions
followed), so the evidence ranking must put them in that order, with no model call.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

from pj_cli import run_cli
from pj_files import write_jsonl

MODELS = ("sample-strong", "sample-medium", "sample-weak")


def test_evidence_verdicts_rank_the_sample_models_in_their_order_without_a_model(
    project_root: Path, tmp_path: Path
) -> None:
    sample = project_root / "datasets" / "sample"
    rows = [json.loads(line) for line in (sample / "generations.jsonl").open()]
    for model in MODELS:
        write_jsonl(tmp_path / f"{model}.jsonl", [r for r in rows if r["model"] == model])
    verdict_files = []
    for a, b in combinations(MODELS, 2):
        out = tmp_path / f"{a}__{b}.jsonl"
        done = run_cli("judge", str(tmp_path / f"{a}.jsonl"), str(tmp_path / f"{b}.jsonl"),
                       "--tasks", str(sample / "tasks.jsonl"), "--tests",
                       str(sample / "tasks.jsonl"), "--method", "evidence", "-o", str(out))
        assert "model usage" not in done.stdout + done.stderr  # no model was opened
        verdict_files.append(out)
    battles = tmp_path / "battles.jsonl"
    verdicts = [json.loads(line) for path in verdict_files for line in path.open()]
    write_jsonl(battles, verdicts)
    assert all(v["cost"]["model_calls"] == 0 for v in verdicts)
    assert all(v["features_a"] and v["features_by"] for v in verdicts)
    decided = [v for v in verdicts if v["decided_by"] in ("evidence:correctness",
                                                          "evidence:instructions")]
    assert len(decided) >= len(verdicts) // 2, [v["decided_by"] for v in verdicts]
    ratings = tmp_path / "ratings.csv"
    run_cli("rank", str(battles), "-o", str(ratings), "--alpha", "0.01", "--skip-invalid")
    order = [line.split(",")[0] for line in ratings.read_text().splitlines()[1:]]
    assert order == list(MODELS), ratings.read_text()


def test_rank_control_reads_the_features_judge_writes(project_root: Path, tmp_path: Path) -> None:
    """`rank --control` works on a verdict file from `prefjudge judge` as it is."""
    sample = project_root / "datasets" / "sample"
    rows = [json.loads(line) for line in (sample / "generations.jsonl").open()]
    for model in MODELS[:2]:
        write_jsonl(tmp_path / f"{model}.jsonl", [r for r in rows if r["model"] == model])
    verdicts = tmp_path / "verdicts.jsonl"
    run_cli("judge", str(tmp_path / f"{MODELS[0]}.jsonl"), str(tmp_path / f"{MODELS[1]}.jsonl"),
            "--tasks", str(sample / "tasks.jsonl"), "--tests", str(sample / "tasks.jsonl"),
            "--method", "evidence", "--criterion", "instructions", "-o", str(verdicts))
    out = tmp_path / "ratings.json"
    run_cli("rank", str(verdicts), "--control", "length", "--json", str(out),
            "--bootstrap", "50", "--skip-invalid")
    style = json.loads(out.read_text())["style_control"]
    assert style["control"] == "length" and style["tokenizers"] == ["fallback:words+punct"]
    [coef] = style["coefficients"]
    assert coef["feature"] == "token_len" and coef["lower"] <= coef["coef"] <= coef["upper"]


def test_pair_with_the_evidence_method_prints_the_deciding_fact(
    project_root: Path, tmp_path: Path
) -> None:
    sample = project_root / "datasets" / "sample"
    rows = {(r["model"], r["task_id"]): r for r in
            (json.loads(line) for line in (sample / "generations.jsonl").open())}
    task = "sample/running_mean"
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(rows[("sample-strong", task)]["response"])
    b.write_text("```python\ndef running_mean(values):\n    return values\n```\n")
    out = tmp_path / "verdict.json"
    done = run_cli("pair", str(a), str(b), "--instruction", "running means", "--method",
                   "evidence", "--task-id", task, "--tests", str(sample / "tasks.jsonl"),
                   "-o", str(out))
    printed = " ".join((done.stdout + done.stderr).split())
    assert "verdict: A wins" in printed and "A passes its tests; B does not" in printed
    verdict = json.loads(out.read_text())
    assert verdict["decided_by"] == "evidence:correctness" and verdict["cost"]["requests"] == 0
