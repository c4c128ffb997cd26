"""``prefjudge judge --scores FILE``: the evidence judge takes score records' facts, from the CLI.

Real parts: ``prefjudge score`` runs the sample tasks' tests in the sandbox and checks the
instructions with Ruff; ``prefjudge judge --method evidence`` then reads those records. The
sandbox's one entry point is counted: with ``--scores`` the judge runs no test, and each
fact names the score file it came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pj_cli import SAMPLE_DIR
from pj_files import write_jsonl

import prefjudge.sandbox.functional as functional
from prefjudge.cli import main

TASKS = SAMPLE_DIR / "tasks.jsonl"
CODES = {
    "a": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
         "    return t == t[::-1]\n",
    "b": "def is_palindrome(s):\n    return False\n",
}


def _generations(path: Path, model: str, code: str) -> Path:
    return write_jsonl(path, [{
        "id": "sample/is_palindrome::single::k0::s0", "task_id": "sample/is_palindrome",
        "model": model, "response": f"```python\n{code}```\n", "instructions": [],
        "protocol": "single", "k": 0, "sample": 0}])


def _invoke(*args: object) -> Any:
    return CliRunner().invoke(main, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two models' generations and their `prefjudge score` records (strict profile)."""
    folder = tmp_path_factory.mktemp("scored")
    files: dict[str, Path] = {}
    for side, model in (("a", "m1"), ("b", "m2")):
        files[side] = _generations(folder / f"{side}.jsonl", model, CODES[side])
        files[f"scores-{side}"] = folder / f"scores-{side}.jsonl"
        done = _invoke("score", files[side], "--tasks", TASKS, "--profile", "strict",
                       "-o", files[f"scores-{side}"])
        assert done.exit_code == 0, done.output
    return files


def _judge(files: dict[str, Path], out: Path, *extra: object) -> Any:
    return _invoke("judge", files["a"], files["b"], "--tasks", TASKS, "--tests", TASKS,
                   "--method", "evidence", "--criterion", "correctness", "-o", out, *extra)


def test_judge_takes_test_outcomes_from_scores_and_says_so(
        scored: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    real = functional.run_one

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(functional, "run_one", counted)
    plain = _judge(scored, tmp_path / "plain.jsonl")
    assert plain.exit_code == 0, plain.output
    assert len(runs) == 2  # each side's tests, run by the judge
    runs.clear()
    reused = _judge(scored, tmp_path / "reused.jsonl",
                    "--scores", scored["scores-a"], "--scores", scored["scores-b"])
    assert reused.exit_code == 0, reused.output
    assert runs == []
    [before] = [json.loads(line) for line in (tmp_path / "plain.jsonl").read_text().splitlines()]
    [after] = [json.loads(line) for line in (tmp_path / "reused.jsonl").read_text().splitlines()]
    assert after["winner"] == before["winner"] == "model_a"
    said = {fact.get("source", "") for fact in after["facts"] if fact["kind"] == "correctness"}
    assert said and all("scores-a.jsonl" in s and "scores-b.jsonl" in s for s in said), said


def test_scores_with_a_model_method_is_a_usage_error_naming_the_flag(
        scored: dict[str, Path], tmp_path: Path) -> None:
    done = _invoke("judge", scored["a"], scored["b"], "--tasks", TASKS, "--method",
                   "monolithic", "--scores", scored["scores-a"], "-o", tmp_path / "v.jsonl",
                   "--no-cache")
    assert done.exit_code == 2, done.output
    assert "--scores" in done.output


def test_scores_must_name_existing_files(scored: dict[str, Path], tmp_path: Path) -> None:
    done = _judge(scored, tmp_path / "v.jsonl", "--scores", tmp_path / "missing.jsonl")
    assert done.exit_code == 2 and "missing.jsonl" in done.output
