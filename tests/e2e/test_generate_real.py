"""``prefjudge generate`` end to end against the real vLLM server (SmolLM2-135M on CPU).

Three real BigCodeBench tasks, both protocols, k = 0..2, through the CLI with the openai
backend; the output must be ready for ``prefjudge score``.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefjudge.io import read_existing
from prefjudge.records import AugmentedTask, InstructionRef
from prefjudge.scoring.score import prepare_job
from prefjudge.scoring.tasks import load_tasks

pytestmark = pytest.mark.vllm
pytest.importorskip("openai")

from prefjudge.cli import main  # noqa: E402

BIGCODEBENCH = "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz"
REFS = [InstructionRef(id="style_2"), InstructionRef(id="style_1")]


def augmented_tasks(data: Path, path: Path) -> dict[str, AugmentedTask]:
    tasks = dict(itertools.islice(load_tasks(data / BIGCODEBENCH).items(), 3))
    augmented = {
        tid: AugmentedTask(**task.model_dump(), instructions=REFS, selector="test")
        for tid, task in tasks.items()
    }
    path.write_text("".join(t.model_dump_json() + "\n" for t in augmented.values()))
    return augmented


def test_generate_both_protocols_real_model(vllm_server, shared_data, tmp_path: Path) -> None:
    augmented = augmented_tasks(shared_data, tmp_path / "augmented.jsonl")
    out = tmp_path / "generations.jsonl"
    args = [
        "generate", str(tmp_path / "augmented.jsonl"), "--k", "0..2", "-o", str(out),
        "--backend", "openai", "--base-url", vllm_server.url, "--model", vllm_server.model,
        "--max-tokens", "96", "--cache", str(tmp_path / "cache.sqlite"),
    ]
    started = time.monotonic()
    result = CliRunner().invoke(main, args)
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    records = read_existing(out)
    assert len(records) == 3 * 2 * 3
    ids = {r["id"] for r in records}
    assert ids == {f"{tid}::{p}::k{k}::s0" for tid in augmented for p in ("single", "multi")
                   for k in range(3)}
    for rec in records:
        assert rec["model"] == vllm_server.model
        assert rec["error"] is None, rec["error"]
        assert rec["response"].strip()
        assert rec["instructions"] == [r.model_dump() for r in REFS[: rec["k"]]]
        expected_turns = 1 if rec["protocol"] == "single" else rec["k"] + 1
        assert len(rec["turns"]) == expected_turns
        assert rec["response"] == rec["turns"][-1]["response"]
    multi = {r["id"]: r for r in records if r["protocol"] == "multi"}
    for tid, task in augmented.items():
        k2 = multi[f"{tid}::multi::k2::s0"]
        assert k2["turns"][0]["prompt"] == task.prompt
        assert k2["turns"][:2] == multi[f"{tid}::multi::k1::s0"]["turns"]
    job = prepare_job(out, {tid: task for tid, task in augmented.items()})
    assert len(job.generations) == 18
    print(f"generate: 18 generations in {elapsed:.1f} s")

    # a rerun resumes by id: nothing new, no model call
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert len(read_existing(out)) == 18
    assert "nothing new" in result.output
