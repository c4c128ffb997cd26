"""The CLI vocabulary of the commands that query a model, against a scripted HTTP server.

``--seed`` is the sampling seed (it is in every request); ``--ci-seed`` seeds intervals
only, so changing it never changes a request. Old flag names still work with a warning.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pj_backend_helpers import FakeOpenAI
from pj_cli import invoke
from pj_files import write_jsonl
from pj_schema_reply import schema_reply

from prefjudge.records import Pair

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"


def warned(result: Any, old: str, new: str) -> bool:
    return f"warning: {old} is deprecated" in result.stderr and f"use {new}" in result.stderr


def requests(server: FakeOpenAI) -> list[str]:
    """What the server was asked, in a stable order."""
    return sorted(json.dumps(body, sort_keys=True) for body in server.bodies)


def backend(server: FakeOpenAI) -> list[str]:
    return ["--backend", "openai", "--base-url", server.url, "--model", "fake", "--no-cache"]


@pytest.fixture
def server(fake_server: FakeOpenAI) -> FakeOpenAI:
    fake_server.reply = schema_reply
    return fake_server


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    rows = [Pair(pair_id=f"p{i}", task_id=f"t{i}", instruction=f"Write f {i}.",
                 response_a=f"def f():\n    return {i}", response_b=f"def f():\n    return -{i}",
                 model_a="alpha", model_b="beta", label="A" if i % 2 else "B")
            for i in range(6)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return path


def test_judge_eval_ci_seed_never_changes_a_request(server: FakeOpenAI, pairs: Path,
                                                    tmp_path: Path) -> None:
    base = ["judge-eval", pairs, "--method", "monolithic", "--bootstrap", 20, *backend(server)]
    first = invoke(*base, "-o", tmp_path / "a", "--ci-seed", 1)
    assert first.exit_code == 0, first.output
    asked = requests(server)
    assert asked
    server.reset_counts()
    second = invoke(*base, "-o", tmp_path / "b", "--ci-seed", 2)
    assert second.exit_code == 0, second.output
    assert requests(server) == asked  # the same questions, word for word
    server.reset_counts()
    resumed = invoke(*base, "-o", tmp_path / "a", "--ci-seed", 3)  # same journal, new intervals
    assert resumed.exit_code == 0, resumed.output
    assert server.calls == 0
    server.reset_counts()
    reseeded = invoke(*base, "-o", tmp_path / "c", "--seed", 7)
    assert reseeded.exit_code == 0, reseeded.output
    assert {json.loads(b)["seed"] for b in requests(server)} == {7}  # --seed: the sampling seed
    assert {json.loads(b)["seed"] for b in asked} == {0}


def test_judge_eval_old_names_warn_and_still_work(server: FakeOpenAI, pairs: Path,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "eval"
    result = invoke("judge-eval", pairs, "--method", "monolithic", "--output-dir", out,
                    "--n-boot", 20, "--format", "prefjudge", "--timeout", 30, *backend(server))
    assert result.exit_code == 0, result.output
    assert warned(result, "--output-dir", "-o/--output")
    assert warned(result, "--n-boot", "--bootstrap")
    assert warned(result, "--format", "--pairs-format")
    assert warned(result, "--timeout", "--request-timeout")
    assert json.loads((out / "summary.json").read_text())["pairs"] == 6
    missing = invoke("judge-eval", pairs, *backend(server))
    assert missing.exit_code == 2 and "Missing option '-o' / '--output'" in missing.output
    folder = invoke("judge-eval", pairs, "-o", "-", *backend(server))
    assert folder.exit_code == 2 and "'-' (stdout) cannot be used here" in folder.output


def test_judge_takes_ci_seed_bootstrap_and_the_old_format(server: FakeOpenAI, pairs: Path,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "verdicts.jsonl"
    new = invoke("judge", pairs, "-o", out, "--method", "monolithic", "--pairs-format",
                 "prefjudge", "--bootstrap", 20, "--ci-seed", 4, *backend(server))
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.stderr
    asked = requests(server)
    server.reset_counts()
    out2 = tmp_path / "old.jsonl"
    old = invoke("judge", pairs, "-o", out2, "--method", "monolithic", "--format", "prefjudge",
                 *backend(server))
    assert old.exit_code == 0, old.output
    assert warned(old, "--format", "--pairs-format")
    assert requests(server) == asked


def test_pair_writes_the_verdict_json_to_stdout(server: FakeOpenAI, tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    return 1\n")
    b.write_text("def f():\n    return 2\n")
    result = invoke("pair", a, b, "--instruction", "Write f.", "--method", "monolithic",
                    "-o", "-", *backend(server))
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["method"] == "monolithic" and verdict["pair_id"] == "pair"
    assert "verdict:" in result.stderr and "verdict:" not in result.stdout
    assert not (Path.cwd() / "-").exists()


@pytest.fixture
def generations(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(SAMPLE / "tasks.jsonl", data / "tasks.jsonl")
    rows = [json.loads(line) for line in (SAMPLE / "generations.jsonl").read_text().splitlines()]
    paths = {"tasks": data / "tasks.jsonl"}
    for model in ("sample-strong", "sample-weak"):
        mine = [r for r in rows if r["model"] == model]
        paths[model] = write_jsonl(data / f"{model}.jsonl", mine)
    return paths


def test_persona_compare_ci_seed_and_old_n_boot(server: FakeOpenAI,
                                                generations: dict[str, Path],
                                                tmp_path: Path) -> None:
    gens = [generations["sample-strong"], generations["sample-weak"]]
    base = ["persona", "compare", *gens, "--persona", "beginner", "--tasks",
            generations["tasks"], "--original", *gens, "--original-tasks",
            generations["tasks"], *backend(server)]
    first = invoke(*base, "-o", tmp_path / "a.jsonl", "--bootstrap", 20, "--ci-seed", 1)
    assert first.exit_code == 0, first.output
    asked = requests(server)
    server.reset_counts()
    second = invoke(*base, "-o", tmp_path / "b.jsonl", "--n-boot", 20, "--ci-seed", 2)
    assert second.exit_code == 0, second.output
    assert warned(second, "--n-boot", "--bootstrap")
    assert requests(server) == asked
    assert (tmp_path / "b.flips.json").exists()


def test_models_check_format_json_and_the_old_switch(server: FakeOpenAI) -> None:
    args = ["models", "check", "--backend", "openai", "--base-url", server.url,
            "--model", "fake"]
    new = invoke(*args, "--format", "json", "--request-timeout", 30)
    assert json.loads(new.stdout)["answers"] is True
    old = invoke(*args, "--json")
    assert json.loads(old.stdout)["answers"] is True
    assert warned(old, "--json", "--format json")
