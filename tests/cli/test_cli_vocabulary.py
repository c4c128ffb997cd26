"""One command-line vocabulary: renamed flags, ``-`` for stdin/stdout, defaults, closed pipes.

The commands that query a model are checked against a scripted HTTP server in
tests/backends/test_cli_vocabulary_models.py.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from pj_cli import WIDE, invoke
from pj_files import jsonl_text, write_jsonl

from prefjudge.backends.config import BackendConfig
from prefjudge.cli.options import backend_options, renamed_option
from prefjudge.journal import binding_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"
CLI = [sys.executable, "-m", "prefjudge"]


def warned(result: Any, old: str, new: str) -> bool:
    return f"warning: {old} is deprecated" in result.stderr and f"use {new}" in result.stderr


def round_robin() -> str:
    rows = []
    models = ("alpha", "beta", "gamma", "delta")
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            if i < j:
                rows += [{"model_a": a, "model_b": b, "winner": "model_a"}] * (3 + j - i)
                rows += [{"model_a": b, "model_b": a, "winner": "model_a"}] * 2
    return jsonl_text(rows)


@pytest.fixture
def battles(tmp_path: Path) -> Path:
    path = tmp_path / "battles.jsonl"
    path.write_text(round_robin(), encoding="utf-8")
    return path


@pytest.fixture
def generations(tmp_path: Path) -> Path:
    """Six sample generations (two tasks' worth), with their tasks file beside them."""
    lines = (SAMPLE / "generations.jsonl").read_text(encoding="utf-8").splitlines()[:6]
    path = tmp_path / "generations.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text((SAMPLE / "tasks.jsonl").read_text("utf-8"), "utf-8")
    return path


# --------------------------------------------------------------------------- the helper


def test_renamed_option_forwards_warns_and_refuses_both_names() -> None:
    seen: list[int] = []

    @click.command()
    @renamed_option("--n-boot", "--bootstrap", "bootstrap", type=int)
    @click.option("--bootstrap", type=int, default=1000, show_default=True)
    def command(bootstrap: int) -> None:
        seen.append(bootstrap)

    runner = CliRunner()
    assert runner.invoke(command, []).exit_code == 0 and seen[-1] == 1000
    new = runner.invoke(command, ["--bootstrap", "5"])
    assert new.exit_code == 0 and seen[-1] == 5 and new.stderr == ""
    old = runner.invoke(command, ["--n-boot", "7"])
    assert old.exit_code == 0 and seen[-1] == 7
    assert old.stderr.startswith("warning: --n-boot is deprecated")
    assert "use --bootstrap" in old.stderr
    both = runner.invoke(command, ["--n-boot", "7", "--bootstrap", "5"])
    assert both.exit_code == 2 and "--n-boot is the old name of --bootstrap" in both.output
    shown = runner.invoke(command, ["--help"]).output
    assert "--n-boot" not in shown and "[default: 1000]" in shown


def test_backend_flags_show_defaults_but_leave_the_config_file_in_charge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prefjudge.toml").write_text("[backend]\nmax_tokens = 77\ntimeout = 30\n")
    seen: list[BackendConfig] = []

    @click.command()
    @backend_options(stage="judge", sampling={"max_tokens": 2048, "seed": 0})
    def command(backend_config: BackendConfig) -> None:
        seen.append(backend_config)

    runner = CliRunner()
    shown = runner.invoke(command, ["--help"]).output
    for text in ("[default: 2048]", "[default: 120.0]", "[default: 8]", "[default: 0]",
                 "--request-timeout"):
        assert text in shown, text
    assert runner.invoke(command, []).exit_code == 0
    config = seen[-1]
    assert config.max_tokens == 77 and config.timeout == 30  # the file, not the shown default
    assert config.sampling(max_tokens=2048).max_tokens == 77
    assert "max_concurrency" not in config.model_fields_set  # a default is not "given"
    new = runner.invoke(command, ["--request-timeout", "5"])
    assert new.exit_code == 0 and seen[-1].timeout == 5
    old = runner.invoke(command, ["--timeout", "6"])
    assert old.exit_code == 0 and seen[-1].timeout == 6
    assert warned(old, "--timeout", "--request-timeout")


# --------------------------------------------------------------------------- score


def test_score_reads_stdin_and_renamed_flags_still_work(generations: Path, tmp_path: Path) -> None:
    out = tmp_path / "piped.jsonl"
    result = invoke("score", "-", "-o", out, "--no-tests", "--test-timeout", 9, "--ci-seed", 4,
                    "--bootstrap", 50, input=generations.read_text("utf-8"))
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 6
    binding = json.loads(binding_path(out).read_text())
    assert binding["settings"]["timeout_s"] == 9
    summary = json.loads(out.with_name("piped.summary.json").read_text())
    assert summary["generations"] == "-" and summary["seed"] == 4 and summary["bootstrap"] == 50
    assert "GENERATIONS is stdin" in summary["tasks"]
    assert "deprecated" not in result.stderr

    old_out = tmp_path / "old.jsonl"
    old = invoke("score", generations, "-o", old_out, "--no-tests", "--timeout", 7, "--seed", 3)
    assert old.exit_code == 0, old.output
    assert warned(old, "--timeout", "--test-timeout") and warned(old, "--seed", "--ci-seed")
    assert json.loads(binding_path(old_out).read_text())["settings"]["timeout_s"] == 7
    assert json.loads(old_out.with_name("old.summary.json").read_text())["seed"] == 3


def test_score_refuses_stdout_for_its_journal(generations: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("score", generations, "-o", "-", "--no-tests")
    assert result.exit_code == 2
    assert "'-' (stdout) cannot be used here: the output is a resumable journal" in result.output
    assert not (tmp_path / "-").exists()


# --------------------------------------------------------------------------- rank


def test_rank_reads_stdin_and_writes_csv_or_json_to_stdout(battles: Path) -> None:
    csv_out = invoke("rank", "-", "-o", "-", "--bootstrap", 20, input=battles.read_text())
    assert csv_out.exit_code == 0, csv_out.output
    lines = csv_out.stdout.splitlines()
    assert lines[0].startswith("model,rating,lower,upper") and len(lines) == 5
    assert "leaderboard" in csv_out.stderr  # the table moved to stderr
    json_out = invoke("rank", battles, "--json", "-", "--bootstrap", 20, "--ci-seed", 5)
    assert json_out.exit_code == 0, json_out.output
    payload = json.loads(json_out.stdout)
    assert payload["seed"] == 5 and payload["ratings"][0]["model"] == "alpha"
    both = invoke("rank", battles, "-o", "-", "--json", "-")
    assert both.exit_code == 2 and "only one output can go to stdout" in both.output
    plot = invoke("rank", battles, "--plot", "-")
    assert plot.exit_code == 2 and "PNG" in plot.output


def test_rank_old_seed_warns_and_keeps_its_meaning(battles: Path, tmp_path: Path) -> None:
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    assert invoke("rank", battles, "--ci-seed", 3, "--bootstrap", 30, "--json", new).exit_code == 0
    result = invoke("rank", battles, "--seed", 3, "--bootstrap", 30, "--json", old)
    assert result.exit_code == 0, result.output
    assert warned(result, "--seed", "--ci-seed")
    assert json.loads(old.read_text()) == json.loads(new.read_text())


# --------------------------------------------------------------------------- correlate


def test_correlate_ci_seed_old_seed_and_json_to_stdout(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"model": list("abcde"), "func": [0.9, 0.6, 0.5, 0.1, 0.3],
                  "if": [0.2, 0.8, 0.4, 0.3, 0.6],
                  "rating": [1100, 1050, 1000, 900, 950]}).to_csv(scores, index=False)
    new = invoke("correlate", scores, "--ci-seed", 2, "--bootstrap", 30, "--json", "-")
    assert new.exit_code == 0, new.output
    payload = json.loads(new.stdout)
    assert payload["bootstrap"]["seed"] == 2 and payload["bootstrap"]["resamples"] == 30
    old = invoke("correlate", scores, "--seed", 2, "--bootstrap", 30, "--json", "-")
    assert old.exit_code == 0 and warned(old, "--seed", "--ci-seed")
    assert json.loads(old.stdout) == payload
    piped = invoke("correlate", "-", "-o", "-", "--bootstrap", 0, input=scores.read_text())
    assert piped.exit_code == 0, piped.output
    assert piped.stdout.splitlines()[0].startswith("if_col,alpha,")


# --------------------------------------------------------------------------- report


def test_report_reads_stdin_writes_stdout_and_takes_old_names(generations: Path,
                                                              tmp_path: Path) -> None:
    scores = tmp_path / "scores.jsonl"
    assert invoke("score", generations, "-o", scores, "--no-tests").exit_code == 0
    page = invoke("report", "-", "-o", "-", "--bootstrap", 20, "--ci-seed", 1,
                  input=scores.read_text())
    assert page.exit_code == 0, page.output
    assert page.stdout.lstrip().startswith("<!DOCTYPE html>") or "<html" in page.stdout[:500]
    assert "wrote stdout" in page.stderr
    md = tmp_path / "r.md"
    old = invoke("report", scores, "-o", tmp_path / "r.html", "--markdown", md,
                 "--resamples", 20, "--seed", 1)
    assert old.exit_code == 0, old.output
    assert warned(old, "--resamples", "--bootstrap") and warned(old, "--seed", "--ci-seed")
    assert md.read_text().startswith("#")
    both = invoke("report", scores, "-o", "-", "--markdown", "-")
    assert both.exit_code == 2 and "only one output can go to stdout" in both.output


# --------------------------------------------------------------------------- persona flips


def test_persona_flips_new_and_old_names(tmp_path: Path) -> None:
    rows = []
    for i in range(12):
        for condition, winner in (("original", "A"), ("persona", "B")):
            rows.append({"task_id": f"t{i}", "condition": condition, "persona": "beginner",
                         "model_a": "m1", "model_b": "m2", "dimensions": [
                             {"dimension": "clarity", "forward": winner, "swapped": winner,
                              "outcome": winner}]})
    path = write_jsonl(tmp_path / "cmp.jsonl", rows)
    new = invoke("persona", "flips", path, "--bootstrap", 50, "--ci-seed", 2,
                 "-o", tmp_path / "new")
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.stderr
    old = invoke("persona", "flips", path, "--n-boot", 50, "--seed", 2, "-o", tmp_path / "old")
    assert old.exit_code == 0, old.output
    assert warned(old, "--n-boot", "--bootstrap") and warned(old, "--seed", "--ci-seed")
    assert (tmp_path / "old.flips.csv").read_text() == (tmp_path / "new.flips.csv").read_text()
    dash = invoke("persona", "flips", path, "-o", "-")
    assert dash.exit_code == 2 and "prefix of three files" in dash.output


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["score"], ["--test-timeout FLOAT", "[default: the task format's own harness",
                     "--bootstrap", "[default: 1000", "--ci-seed", "[default: scores.jsonl]",
                     "[default: CPU count]"]),
        (["rank"], ["--bootstrap", "[default: 1000", "--ci-seed", "[default: half]"]),
        (["judge"], ["--max-tokens INTEGER", "[default: 2048]", "--request-timeout FLOAT",
                     "[default: 120.0]", "--max-concurrency INTEGER", "[default: 8]",
                     "--pairs-format", "[default: auto]"]),
        (["generate"], ["[default: 1024]", "[default: none: not sent]", "[default: 0..5]"]),
        (["augment"], ["[default: 512]", "Permutation seed", "[default: 5"]),
        (["persona", "compare"], ["[default: 1536]", "--bootstrap", "--ci-seed"]),
        (["models", "check"], ["--format [table|json]", "[default: table]"]),
        (["cache", "info"], ["--format [table|json]"]),
    ],
)
def test_help_shows_defaults_and_hides_old_names(command: list[str], shown: list[str]) -> None:
    result = invoke(*command, "--help", env=WIDE)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for item in shown:
        assert " ".join(item.split()) in text, item
    rest = text.replace("--request-timeout", "").replace("--test-timeout", "")
    for old in ("--n-boot", "--resamples", "--output-dir", "--timeout "):
        assert old not in rest, old
    if command[0] in ("models", "cache"):
        assert "--json" not in rest  # the old switch is now --format json


def test_score_help_has_no_plain_seed_or_timeout() -> None:
    text = invoke("score", "--help").output
    assert "--seed" not in text and "--timeout" not in text.replace("--test-timeout", "")


# --------------------------------------------------------------------------- closed pipes


def test_piping_into_head_exits_0() -> None:
    command = f"{shlex.join(CLI)} instructions | head -n1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["instructions"], ["instructions", "--format", "json"]])
def test_a_reader_that_is_gone_before_the_first_write_is_exit_0(args: list[str]) -> None:
    process = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # long before the interpreter has started and written a byte
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err
