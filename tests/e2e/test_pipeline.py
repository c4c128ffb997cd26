"""The Vibe Checker testbed end to end with a real (tiny) model, as CI runs it.

5 real BigCodeBench tasks whose libraries are installed: ``augment`` (rule selector; the
LLM selector on a few tasks) → ``generate``, both protocols, k = 0..5 → ``score``
(verifiers + sandboxed unit tests) → ``report``. Every model call goes to the session's
real vLLM server (SmolLM2-135M on CPU, started once for all the tests that need it; the
in-process embedded backend runs in the smoke experiment's test). The model is tiny and
its code mostly wrong; the point is that every stage runs for real and hands the next a
valid file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_cli import run_cli, run_cli_text

from prefjudge.io import read_existing
from prefjudge.scoring.tasks import load_tasks, missing_libraries

pytestmark = pytest.mark.vllm
pytest.importorskip("openai")

from prefjudge.cli import main  # noqa: E402

BIGCODEBENCH = "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz"
N_TASKS = 5
KS = range(6)




@pytest.fixture(scope="module")
def tasks_file(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tasks = [t for t in load_tasks(shared_data / BIGCODEBENCH).values()
             if not missing_libraries(t)]
    chosen = random.Random(0).sample(tasks, N_TASKS)
    path = tmp_path_factory.mktemp("e2e") / "tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in chosen))
    return path


def test_llm_selector_on_the_real_model(vllm_server, tasks_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "augmented_llm.jsonl"
    result = CliRunner().invoke(main, [
        "augment", str(tasks_file), "--selector", "llm", "--k", "3", "--limit", "4",
        "-o", str(out), "--backend", "openai", "--base-url", vllm_server.url,
        "--model", vllm_server.model, "--max-tokens", "512",
        "--cache", str(tmp_path / "cache.sqlite"),
    ])
    assert result.exit_code == 0, result.output
    records = read_existing(out)
    assert len(records) == 4
    chosen_by_model = 0
    for rec in records:
        ids = [ref["id"] for ref in rec["instructions"]]
        assert len(ids) == 3 and len(set(ids)) == 3  # repaired and topped up to k
        if rec["selector"] == f"llm:{vllm_server.model}":
            chosen_by_model += 1
        else:  # a reply the tiny model could not finish is recorded, never guessed at
            assert rec["selector"] == "rule", rec["selector"]
            assert rec["param_repairs"][0].startswith("llm selector failed"), rec
    assert chosen_by_model >= 1, [r["param_repairs"] for r in records]
    summary = json.loads(out.with_name("augmented_llm.summary.json").read_text())
    rate = summary["invalid_param_rate"]
    assert rate is None or 0.0 <= rate <= 1.0


def test_augment_generate_score_report(vllm_server, tasks_file: Path, tmp_path: Path) -> None:
    augmented = tmp_path / "augmented.jsonl"
    gens = tmp_path / "generations.jsonl"
    scores = tmp_path / "scores.jsonl"
    report = tmp_path / "report.html"

    run_cli("augment", str(tasks_file), "--selector", "rule", "--k", "5", "--seed", "0",
            "-o", str(augmented))
    aug = read_existing(augmented)
    assert len(aug) == N_TASKS and all(len(t["instructions"]) == 5 for t in aug)

    output = run_cli_text("generate", str(augmented), "--protocol", "both", "--k", "0..5",
                     "--backend", "openai", "--base-url", vllm_server.url,
                     "--model", vllm_server.model, "--max-tokens", "128", "-o", str(gens),
                     "--cache", str(tmp_path / "cache.sqlite"))
    assert "smoke model" not in output  # the note is for the embedded backend only
    records = read_existing(gens)
    assert len(records) == N_TASKS * 2 * len(KS)
    assert {(r["protocol"], r["k"]) for r in records} == {
        (p, k) for p in ("single", "multi") for k in KS}
    failed = [r for r in records if r.get("error")]
    assert len(failed) < len(records) / 10, failed[:3]

    run_cli("score", str(gens), "--tasks", str(augmented), "-o", str(scores),
            "--test-timeout", "30")
    scored = read_existing(scores)
    assert len(scored) == len(records)
    assert all(r["func"]["status"] in {"pass", "fail", "timeout", "error"} for r in scored)
    assert all(len(r["instruction_results"]) == r["k"] for r in scored)
    multi5 = [r for r in scored if r["protocol"] == "multi" and r["k"] == 5]
    assert multi5 and all(len(r["turn_results"]) == 6 for r in multi5)

    run_cli("report", str(scores), "-o", str(report), "--markdown",
            str(tmp_path / "report.md"), "--bootstrap", "200")
    html = report.read_text()
    assert "Functional regression" in html and "data:image/png;base64," in html
    assert "Multi-turn retention" in html
    assert (tmp_path / "report.md").stat().st_size > 1000
