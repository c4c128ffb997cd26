"""`prefjudge run` against a served model that fails some requests for good.

A failed generation is never scored as an answer (status ``error``, in no rate), a pair
with a failed side is never judged, a failed verdict is no battle; the run finishes what it
can, shows the failures and exits 1 naming them. ``--retry-errors`` against the healed
server asks exactly the failed requests (and the pairs that waited on them), keeps every
good record byte for byte, and ends with no error; a plain rerun then asks nothing.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pj_cli import SAMPLE_DIR, flat, invoke, rows
from pj_experiment import FAKE_EXPERIMENT
from pj_flaky_server import serve_flaky

# The fake experiment (2 models x 4 sample tasks x k in {0, 1}, a monolithic judge), each
# backend without retries: a failed request fails at once.
EXPERIMENT = FAKE_EXPERIMENT.replace('name = "fake"', 'name = "flaky"').replace(
    'base_url = "{url}"\n', 'base_url = "{url}"\nmax_retries = 0\n')


def experiment(folder: Path, url: str) -> Path:
    folder.mkdir()
    path = folder / "flaky.toml"
    path.write_text(EXPERIMENT.format(results=folder / "results", tasks=SAMPLE_DIR / "tasks.jsonl",
                                      url=url))
    return path


ROOT = Path(__file__).resolve().parents[2]


def readme_run_commands() -> set[tuple[str, ...]]:
    """The options of each ``prefjudge run`` command of the README's served-models section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Judging served models\n")[1].split("\n## ")[0]
    return {tuple(line.split("#")[0].split()[3:]) for line in section.splitlines()
            if line.startswith("prefjudge run examples/served.toml")}


def test_the_readme_runs_the_commands_this_file_tests() -> None:
    assert readme_run_commands() == {(), ("--dry-run",), ("--dry-run", "--retry-errors"),
                                     ("--retry-errors",)}


def lines(folder: Path) -> dict[str, list[str]]:
    """Every JSONL line of a folder's files, by file name."""
    return {path.name: path.read_text().splitlines() for path in sorted(folder.glob("*.jsonl"))}


@pytest.mark.slow
def test_failed_requests_are_errors_and_retry_errors_makes_exactly_them(tmp_path: Path) -> None:
    with serve_flaky() as server:
        path = experiment(tmp_path / "e", server.url)
        root = tmp_path / "e" / "results" / "flaky"
        first = invoke("run", path, ok=False)
        said = flat(first.output)

        gens = {name: [json.loads(line) for line in found]
                for name, found in lines(root / "generations").items()}
        failed_gens = sum(bool(g.get("error")) for found in gens.values() for g in found)
        assert failed_gens == server.count("generate failed") > 0
        verdicts = [json.loads(line) for found in lines(root / "judgments").values()
                    for line in found]
        failed_verdicts = sum(v["status"] == "error" for v in verdicts)
        assert failed_verdicts > 0
        assert (f"{failed_gens} generations and {failed_verdicts} verdicts failed" in said
                and f"prefjudge run {path} --retry-errors retries them" in said), said

        # A failed generation is an error of its own: not verified, not tested, in no rate.
        scores = [r for found in lines(root / "scores").values() for r in map(json.loads, found)]
        errors = [r for r in scores if r.get("status") == "error"]
        assert len(errors) == failed_gens
        assert all(not r["instruction_results"] and r["func"] is None and r["error"]
                   for r in errors)
        assert all("status" not in r for r in scores if not r.get("error"))
        for summary in (root / "scores").glob("*.summary.json"):
            (model,) = json.loads(summary.read_text())["models"]
            made = [g for found in gens.values() for g in found if g["model"] == model["model"]]
            assert model["gen_errors"] == sum(bool(g.get("error")) for g in made)
            assert model["n"] == len(made) - model["gen_errors"]
            assert model["func_fail"] + model["func_missing"] + model["func_timeout"] <= model["n"]

        # No pair holds a failed side; failed verdicts are no battles; the run went on.
        failed_ids = {(g["task_id"], g["k"]) for found in gens.values() for g in found
                      if g.get("error")}
        judged = {(v["task_id"], int(v["pair_id"].split("::k")[1].split("::")[0]))
                  for v in verdicts}
        assert not failed_ids & judged
        battles = rows(root / "battles.jsonl")
        assert len(battles) == len(verdicts) - failed_verdicts
        board = json.loads((root / "leaderboard.json").read_text())
        by_model = {row["model"]: row for row in board["models"]}
        assert sum(row["generation_errors"] for row in by_model.values()) == failed_gens
        (judge,) = board["judges"]
        assert judge["errors"] == failed_verdicts
        manifest = json.loads((root / "manifest.json").read_text())
        waiting = manifest["failures"]["pairs_waiting"]
        assert waiting == len(failed_ids) and manifest["failures"]["generations"] == failed_gens

        # The dry run shows the failed requests apart from the done ones.
        plan = flat(invoke("run", path, "--dry-run", ok=True).output)
        asked_again = failed_gens + 2 * (failed_verdicts + waiting)
        assert f"{asked_again} failed: --retry-errors" in plan, plan
        assert "0 model requests left" in plan
        retry_plan = flat(invoke("run", path, "--dry-run", "--retry-errors", ok=True).output)
        assert f"{asked_again} model requests left" in retry_plan, retry_plan

        before = {folder: lines(root / folder) for folder in ("generations", "scores",
                                                             "judgments")}
        server.failing = False
        server.reset()
        retried = invoke("run", path, "--retry-errors", ok=True)
        assert server.count("generate") == failed_gens, retried.output
        assert server.count("judge") == 2 * (failed_verdicts + waiting)  # both orders
        for folder, files in before.items():
            for name, old in files.items():
                new = set((root / folder / name).read_text().splitlines())
                kept = [line for line in old if '"error"' not in line]
                assert all(line in new for line in kept), (folder, name)
        after = [r for found in lines(root / "scores").values() for r in map(json.loads, found)]
        assert not [r for r in after if r.get("status") == "error"]
        assert len(after) == len(scores)
        board = json.loads((root / "leaderboard.json").read_text())
        assert all(row["generation_errors"] == 0 and row["judge_errors"] == 0
                   for row in board["models"])
        assert all(row["elo"] is not None for row in board["models"])

        server.reset()
        invoke("run", path, ok=True)
        assert sum(server.calls.values()) == 0


def test_a_run_against_a_closed_port_stops_in_seconds_and_names_the_url(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    path = experiment(tmp_path / "e", url)
    started = time.monotonic()
    result = invoke("run", path, ok=False)
    assert time.monotonic() - started < 60
    said = flat(result.output)
    assert url in said and "fake-a" in said, said
    root = tmp_path / "e" / "results" / "flaky"
    scored = [record for found in (root / "scores").glob("*.jsonl") for record in rows(found)]
    assert scored == []  # the run stopped at the first generation: nothing was scored
    assert not (root / "leaderboard.json").exists()


def test_a_dry_run_says_which_extra_a_backend_needs(tmp_path: Path) -> None:
    path = experiment(tmp_path / "e", "http://127.0.0.1:9/v1")
    probe = ("import sys; sys.modules['openai'] = None\n"  # the SDK is not installed
             "from prefjudge.cli import main\n"
             f"main(['run', {str(path)!r}, '--dry-run'])\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    said = flat(done.stderr)
    assert "the openai backend needs the openai SDK: pip install 'prefjudge[backends]'" in said
    assert "model requests left" in flat(done.stdout)  # the plan is still shown
