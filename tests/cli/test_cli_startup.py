"""Commands load lazily, and ``score`` verifies a large input in a second process."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from prefjudge.cli import main
from prefjudge.cli.commands import COMMAND_MODULES, COMMAND_SUMMARIES, load_all
from prefjudge.scoring import run as score_cmd

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"


def test_every_command_is_in_the_map_and_the_map_names_only_commands() -> None:
    load_all()
    assert set(main.commands) == set(COMMAND_MODULES)
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        assert main.get_command(ctx, name) is main.commands[name]
    assert main.get_command(ctx, "no-such-command") is None


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines()
              if line.strip()]
    assert listed == sorted(COMMAND_MODULES)


def test_score_starts_without_the_heavy_libraries_of_other_commands() -> None:
    probe = textwrap.dedent("""
        import sys
        from prefjudge.cli import main
        try:
            main(["score", "--help"])
        except SystemExit:
            pass
        print(sorted(name for name in ("pandas", "scipy", "matplotlib", "httpx", "choix",
                                       "prefjudge.judge")
                     if name in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_the_command_list_imports_no_command_and_says_what_their_own_help_says() -> None:
    probe = textwrap.dedent("""
        import sys
        from prefjudge.cli import main
        from prefjudge.cli.commands import load_all
        def listing():
            try:
                main(["--help"])
            except SystemExit:
                pass
        listing()
        print("IMPORTED", sorted(name for name in sys.modules if name.split(".")[0] in (
            "numpy", "pandas", "scipy", "matplotlib", "choix", "pydantic", "rich")
            or name.startswith("prefjudge.cli.") and name.endswith("_cmd")))
        load_all()  # now the listing comes from the commands themselves
        listing()
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    lazy, rest = done.stdout.split("IMPORTED ")
    imported, loaded = rest.split("\n", 1)
    assert imported == "[]", done.stdout
    assert lazy.split("Commands:")[1] == loaded.split("Commands:")[1]
    load_all()
    for name, summary in COMMAND_SUMMARIES.items():
        first = inspect.cleandoc(main.commands[name].help or "").split("\n\n")[0]
        assert summary == " ".join(first.split()), name


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["scroe"])
    assert result.exit_code == 2 and "No such command 'scroe'" in result.output


@pytest.mark.parametrize("early", [True, False])
def test_a_large_input_is_verified_in_a_second_process_with_the_same_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, early: bool) -> None:
    generations = tmp_path / "generations.jsonl"
    generations.write_text((SAMPLE / "generations.jsonl").read_text("utf-8"), "utf-8")
    started = []
    real = score_cmd.VerifyProcess

    def spy(**kwargs):
        started.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(score_cmd, "VerifyProcess", spy)
    size = generations.stat().st_size
    monkeypatch.setattr(score_cmd, "EARLY_VERIFIER_BYTES", size if early else size + 1)
    there = tmp_path / "there.jsonl"
    result = CliRunner().invoke(main, ["score", str(generations), "--no-tests", "-o", str(there),
                                       "--profile", "strict", "--workers", "1"])
    assert result.exit_code == 0, result.output
    chosen = [{key: kwargs[key] for key in ("workers", "profile")} for kwargs in started]
    assert chosen == ([{"workers": 1, "profile": "strict"}] if early else [])
    strict = tmp_path / "strict.jsonl"
    result = CliRunner().invoke(main, ["score", str(generations), "--no-tests", "-o",
                                       str(strict), "--profile", "strict"])
    assert result.exit_code == 0, result.output
    assert there.read_text() == strict.read_text()
    assert len(there.read_text().splitlines()) == 42
    assert json.loads(there.read_text().splitlines()[0])["meta"]["profile"] == "strict"
