"""The pairwise judge with a real (tiny) model: every stage, the accounting, resume, HPAG.

SmolLM2-135M judges at chance level (and always prefers whatever it is shown first), so
these tests check that every stage runs for real and that the bookkeeping is right, not
that the verdicts are good. Data: CodePrefBench's 145 developer-labelled pairs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_cli import run_cli

from prefjudge.io import read_existing
from prefjudge.judge.guidance import load_guidance
from prefjudge.records import Verdict

pytestmark = pytest.mark.vllm
pytest.importorskip("openai")

from prefjudge.cli import main  # noqa: E402

HUMAN_PREF = "preferences/codeprefbench/human-preference-alignment.jsonl.gz"
SMALL = ["--min-criteria", "3", "--max-criteria", "5"]
METHODS = ("monolithic", "pointwise", "criteralign")




def verdicts(path: Path) -> list[Verdict]:
    return [Verdict.model_validate(d) for d in read_existing(path)]


def check_accounting(vs: list[Verdict], method: str) -> None:
    for v in vs:
        assert v.method == method
        assert (v.status == "ok") == (v.preferred is not None) == (v.error is None)
        assert v.cost.requests >= 1 and v.cost.prompt_tokens > 0
        assert v.cost.model_calls + v.cost.cache_hits >= v.cost.requests - v.cost.errors
        if v.status == "ok":
            assert set(v.orders) == ({"forward", "swapped"} if method != "pointwise" else set())
            # criteralign: 1 criteria + 2 judging + 2 synthesis, + 1 refine call when a
            # criterion tied in both orders, + 2 when that call split at least one criterion
            expected = {"monolithic": {2}, "pointwise": {3}, "criteralign": {5, 6, 8}}[method]
            assert v.cost.requests in expected, (v.cost, v.refined)
            ties = any(c.outcome == "tie" and c.criterion.parent is None for c in v.criteria)
            if method == "criteralign":
                assert (v.cost.requests > 5) == ties
                assert (v.cost.requests == 8) == (v.refined > 0)
            assert v.cost.errors == 0
        else:  # an error names its stage and is never a verdict
            assert v.winner is None
            assert v.error.split(":")[0].split(" ")[0] in (
                "criteria", "judging", "synthesis", "monolithic", "pointwise")


def served(server, tmp_path: Path) -> list[str]:
    """Backend options for the session's real vLLM server, with a cache in ``tmp_path``."""
    return ["--backend", "openai", "--base-url", server.url, "--model", server.model,
            "--cache", str(tmp_path / "cache.sqlite")]


def test_judge_eval_runs_all_three_methods_and_resumes(
    vllm_server, shared_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    args = ["judge-eval", str(shared_data / HUMAN_PREF), "--limit", "4", "-o", str(out),
            *served(vllm_server, tmp_path),
            "--bootstrap", "200", *SMALL]
    first = run_cli(*args)
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["methods"]) == list(METHODS) and summary["pairs"] == 4
    for method in METHODS:
        result = summary["methods"][method]
        vs = verdicts(out / f"verdicts-{method}.jsonl")
        assert len(vs) == 4 and {v.label for v in vs} <= {"A", "B"}
        check_accounting(vs, method)
        assert result["n"] == 4 and result["n_ok"] + result["n_error"] == 4
        assert result["n_error"] == sum(v.status == "error" for v in vs)
        assert result["cost"]["total"]["requests"] == sum(v.cost.requests for v in vs)
        assert sum(result["confusion"][g][p] for g in result["confusion"]
                   for p in result["confusion"][g]) == 4
        if result["accuracy"] is not None:
            lo, hi = result["accuracy_ci"]
            assert lo <= result["accuracy"] <= hi
    assert (out / "summary.png").stat().st_size > 1000
    assert "judge agreement with human labels" in first.stdout
    # pointwise reuses stage-1 criteria from the cache: same prompt, no second model call
    crit = verdicts(out / "verdicts-criteralign.jsonl")
    assert sum(v.cost.cache_hits for v in crit) >= 1
    # a rerun resumes from the verdict files: nothing is judged again
    again = run_cli(*args)
    assert again.stderr.count("resuming: 4 verdicts already") == 3
    assert verdicts(out / "verdicts-criteralign.jsonl") == crit
    # without the verdict files, every pair whose requests all succeeded is answered by the
    # response cache (failed requests are never cached: they are asked again)
    clean = {}
    for method in METHODS:
        clean[method] = {v.pair_id for v in verdicts(out / f"verdicts-{method}.jsonl")
                         if v.status == "ok" and v.cost.errors == 0}
        (out / f"verdicts-{method}.jsonl").unlink()
        (out / f"verdicts-{method}.jsonl.journal.json").unlink()
    assert any(clean.values())
    run_cli(*args)
    for method in METHODS:
        for v in verdicts(out / f"verdicts-{method}.jsonl"):
            if v.pair_id in clean[method]:
                assert v.cost.model_calls == 0
                assert v.cost.cache_hits == v.cost.requests


def test_guidance_build_then_held_out_evaluation(
    vllm_server, shared_data: Path, tmp_path: Path
) -> None:
    pairs = str(shared_data / HUMAN_PREF)
    folder = tmp_path / "guidance" / "smollm"
    common = served(vllm_server, tmp_path)
    run_cli("guidance", "build", pairs, "--train-fraction", "0.03", "--split-seed", "0",
            "-o", str(folder), *common)
    manifest = json.loads((folder / "manifest.json").read_text())
    counts = manifest["counts"]
    assert manifest["split"]["train"] == 4 and manifest["split"]["held_out"] == 141
    assert len(manifest["train_pair_ids"]) == len(manifest["train_fingerprints"]) == 4
    assert counts["judged"] + counts["judge_errors"] == 4
    assert counts["agreements"] + counts["disagreements"] == counts["judged"]
    assert counts["rationales"] + counts["rationale_errors"] == counts["disagreements"]
    assert manifest["judge"]["backend"] == "openai" and manifest["source"]["sha256"]
    rationales = (folder / "rationales.jsonl").read_text().splitlines()
    assert len(rationales) == counts["disagreements"]
    guidance = load_guidance(folder)  # global.md parses
    # evaluating on the build pairs is refused ...
    refused = run_cli("judge-eval", pairs, "--guidance", str(folder), "-o", str(tmp_path / "e"),
                      *common, ok=False)
    assert refused.returncode == 1 and "would be leakage" in refused.stderr
    # ... the held-out pairs are judged with the guidance in place
    out = tmp_path / "held"
    run_cli("judge-eval", pairs, "--guidance", str(folder), "--held-out", "--limit", "2",
            "--method", "criteralign", "-o", str(out), *common, *SMALL)
    vs = verdicts(out / f"verdicts-criteralign-{guidance.name}.jsonl")
    assert len(vs) == 2 and not {v.pair_id for v in vs} & set(manifest["train_pair_ids"])
    assert {v.guidance for v in vs} == {guidance.label}
    check_accounting(vs, "criteralign")
    assert json.loads((out / "summary.json").read_text())["guidance"] == guidance.label


def _split_by_model(sample: Path, tmp_path: Path, models: tuple[str, str]) -> list[Path]:
    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    paths = []
    for model in models:
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["model"] == model))
        paths.append(path)
    return paths


def test_generations_scored_judged_with_evidence_and_ranked(
    vllm_server, project_root: Path, tmp_path: Path
) -> None:
    sample = project_root / "datasets" / "sample"
    gen_a, gen_b = _split_by_model(sample / "generations.jsonl", tmp_path,
                                   ("sample-strong", "sample-weak"))
    runner = CliRunner()
    scored = []
    for gen in (gen_a, gen_b):
        out = gen.with_suffix(".scored.jsonl")
        result = runner.invoke(main, ["score", str(gen), "--tasks", str(sample / "tasks.jsonl"),
                                      "-o", str(out)])
        assert result.exit_code == 0, result.output
        scored.append(out)
    out = tmp_path / "verdicts.jsonl"
    result = runner.invoke(main, [
        "judge", str(gen_a), str(gen_b), "--tasks", str(sample / "tasks.jsonl"),
        "--scored-a", str(scored[0]), "--scored-b", str(scored[1]), "--method", "monolithic",
        "-o", str(out), "--backend", "openai", "--base-url", vllm_server.url,
        "--model", vllm_server.model, "--cache", str(tmp_path / "cache.sqlite"),
    ])
    assert result.exit_code == 0, result.output
    vs = verdicts(out)
    assert len(vs) == 14 and {(v.model_a, v.model_b) for v in vs} == {
        ("sample-strong", "sample-weak")}
    assert all(v.evidence for v in vs)  # both sides had score records
    check_accounting(vs, "monolithic")
    ranked = runner.invoke(main, ["rank", str(out), "--skip-invalid", "-o",
                                  str(tmp_path / "ratings.csv")])
    ok = [v for v in vs if v.status == "ok"]
    if ok:
        assert ranked.exit_code == 0, ranked.output
        table = (tmp_path / "ratings.csv").read_text()
        assert "sample-strong" in table and "sample-weak" in table


def test_pair_command_against_a_served_model(vllm_server, tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    a.write_text("def add(x, y):\n    return x + y\n")
    out = tmp_path / "verdict.json"
    result = CliRunner().invoke(main, [
        "pair", str(a), "-", "--instruction", "Write add(x, y) returning the sum.",
        "--method", "criteralign", *SMALL, "-o", str(out),
        "--backend", "openai", "--base-url", vllm_server.url, "--model", vllm_server.model,
        "--cache", str(tmp_path / "cache.sqlite"),
    ], input="def add(x, y):\n    return sum([x, y])\n")
    verdict = Verdict.model_validate_json(out.read_text())
    check_accounting([verdict], "criteralign")
    assert result.exit_code == (0 if verdict.status == "ok" else 1), result.output
    if verdict.status == "ok":
        assert "verdict:" in result.output and verdict.criteria
        top = [c for c in verdict.criteria if c.criterion.parent is None]
        assert len(top) <= 5  # the schema caps the list at --max-criteria
        assert len(top) >= 3 or any("duplicates removed" in w for w in verdict.warnings)


def test_copilot_arena_battles_judged_by_a_served_model(
    vllm_server, shared_data: Path, tmp_path: Path
) -> None:
    csv = shared_data / "preferences" / "copilot_arena" / "copilot_arena_examples_v1.csv"
    out = tmp_path / "eval"
    result = CliRunner().invoke(main, [
        "judge-eval", str(csv), "--skip-invalid", "--limit", "3", "--method", "monolithic",
        "-o", str(out), "--bootstrap", "100", "--backend", "openai", "--base-url", vllm_server.url,
        "--model", vllm_server.model, "--cache", str(tmp_path / "cache.sqlite"),
    ])
    assert result.exit_code == 0, result.output
    assert "copilot_arena_examples_v1.csv:2484" in result.output  # the malformed row, listed
    vs = verdicts(out / "verdicts-monolithic.jsonl")
    assert [v.pair_id for v in vs] == ["copilot_arena/0", "copilot_arena/1", "copilot_arena/2"]
    assert all(v.model_a != "A" for v in vs)  # real model names carried into the verdicts
    check_accounting(vs, "monolithic")
    assert json.loads((out / "summary.json").read_text())["methods"]["monolithic"]["n"] == 3
