"""`prefjudge score` through the journal: resume, refusals, concurrent runs, kills, full disks.

The other resumable stages (augment, generate, judge, judge-eval, persona rewrite and
compare) are driven the same way against a real HTTP server in
tests/backends/test_journal_stages.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pj_cli import flat, invoke
from pj_files import write_jsonl

from prefjudge.journal import lock_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"


def keyed(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    by_key = {row["meta"]["key"]: row for row in rows}
    assert len(by_key) == len(rows), f"{path} holds duplicate records"
    return by_key




def score(*args: str) -> object:
    return invoke("score", *args)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy of the bundled sample (generations and tasks) in a temp folder."""
    for name in ("generations.jsonl", "tasks.jsonl"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    return tmp_path / "generations.jsonl"


def test_rerun_resumes_and_never_duplicates(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    first = score(str(sample), "-o", str(out), "--no-tests")
    assert first.exit_code == 0, first.output
    again = score(str(sample), "-o", str(out), "--no-tests")
    assert again.exit_code == 0, again.output
    assert "42 already scored, 0 to go" in flat(again.output)
    assert len(keyed(out)) == 42


def test_a_second_model_in_one_file_keeps_its_own_keys(sample: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    one = [r for r in rows if r["model"] == "sample-strong"]
    twin = [{**r, "model": "sample-strong-v2"} for r in one]  # same ids, another model
    both = write_jsonl(tmp_path / "both.jsonl", one + twin)
    out = tmp_path / "scores.jsonl"
    result = score(str(both), "-o", str(out), "--no-tests")
    assert result.exit_code == 0, result.output
    models = {row["model"] for row in keyed(out).values()}
    assert len(keyed(out)) == 28 and models == {"sample-strong", "sample-strong-v2"}


def test_output_of_another_input_is_refused(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert score(str(sample), "-o", str(out), "--no-tests").exit_code == 0
    other = tmp_path / "other" / "generations.jsonl"
    other.parent.mkdir()
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    write_jsonl(other, [{**r, "model": r["model"] + "-x"} for r in rows])
    before = out.read_bytes()
    refused = score(str(other), "-o", str(out), "--no-tests")
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "input generations" in refused.output and "--force-new" in refused.output
    assert out.read_bytes() == before
    changed = score(str(sample), "-o", str(out))  # same input, tests on now
    assert changed.exit_code == 1 and "setting tests: false then, true now" in changed.output
    fresh = score(str(other), "-o", str(out), "--no-tests", "--force-new")
    assert fresh.exit_code == 0, fresh.output
    assert {row["model"] for row in keyed(out).values()} == {
        "sample-strong-x", "sample-medium-x", "sample-weak-x"
    }
    assert out.with_name("scores.jsonl.bak").read_bytes() == before


def test_output_equal_to_the_input_is_refused(sample: Path) -> None:
    before = sample.read_bytes()
    result = score(str(sample), "-o", str(sample))
    assert result.exit_code == 1 and "is the generations input" in result.output
    assert sample.read_bytes() == before


def test_corrupt_line_inside_the_output_is_named(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert score(str(sample), "-o", str(out), "--no-tests").exit_code == 0
    text = out.read_text().splitlines()
    text[5] = text[5][: len(text[5]) // 2]
    out.write_text("\n".join(text) + "\n")
    result = score(str(sample), "-o", str(out), "--no-tests")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{out}:6: not valid JSON" in result.output


def test_empty_generations_file_is_a_message(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = score(str(empty), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and "no generation records" in result.output
    assert "Traceback" not in result.output


def test_unwritable_output_is_a_message(sample: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    result = score(str(sample), "-o", str(blocker / "scores.jsonl"), "--no-tests")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"cannot create the folder {blocker}" in result.output


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefjudge", *args]


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        assert process.poll() is None, "the run ended before it could be interrupted"
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} lines")


@pytest.mark.slow
def test_killed_run_resumes_to_identical_records(sample: Path, tmp_path: Path) -> None:
    """SIGKILL mid-run, rerun: the records equal those of an uninterrupted run."""
    whole = tmp_path / "whole.jsonl"
    done = subprocess.run(_cli("score", str(sample), "-o", str(whole), "--workers", "1"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "scores.jsonl"
    run = subprocess.Popen(_cli("score", str(sample), "-o", str(out), "--workers", "1"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_lines(out, 3, run)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    partial = out.read_text().count("\n")
    assert 3 <= partial < 42
    resumed = subprocess.run(_cli("score", str(sample), "-o", str(out), "--workers", "1"),
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{partial} already scored, {42 - partial} to go" in flat(resumed.stderr)
    assert keyed(out) == keyed(whole)


@pytest.mark.slow
def test_two_concurrent_runs_never_duplicate(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    first = subprocess.Popen(_cli("score", str(sample), "-o", str(out), "--workers", "1"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not lock_path(out).exists():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.01)
    second = subprocess.run(_cli("score", str(sample), "-o", str(out), "--workers", "1"),
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 1
    assert f"being written by another prefjudge run (pid {first.pid})" in second.stderr
    assert first.wait(timeout=600) == 0
    assert len(keyed(out)) == 42


FULL_DISK = """
set -e
mount -t tmpfs -o size=40k,nr_inodes=64 tmpfs "$DIR"
if "$PY" -m prefjudge score "$GENS" -o "$DIR/scores.jsonl" --no-tests > "$LOG" 2>&1; then
  echo "first run did not fail"; exit 3
fi
wc -l < "$DIR/scores.jsonl" > "$COUNT"
mount -o remount,size=8m tmpfs "$DIR"
"$PY" -m prefjudge score "$GENS" -o "$DIR/scores.jsonl" --no-tests > "$LOG2" 2>&1
cp "$DIR/scores.jsonl" "$COPY"
"""


@pytest.mark.slow
def test_full_disk_keeps_records_and_resumes(sample: Path, tmp_path: Path) -> None:
    """A real full file system (a small tmpfs in a private mount namespace)."""
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is not installed")
    probe = subprocess.run(["unshare", "--mount", "--map-root-user", "true"], capture_output=True)
    as_root = os.geteuid() == 0
    if probe.returncode != 0 and not as_root:
        pytest.skip("cannot make a private mount namespace here (needs root or user namespaces)")
    mount_dir = tmp_path / "small"
    mount_dir.mkdir()
    script = tmp_path / "full.sh"
    script.write_text(FULL_DISK)
    env = {**os.environ, "DIR": str(mount_dir), "PY": sys.executable, "GENS": str(sample),
           "LOG": str(tmp_path / "log1"), "LOG2": str(tmp_path / "log2"),
           "COUNT": str(tmp_path / "count"), "COPY": str(tmp_path / "scores.jsonl")}
    command = ["unshare", "--mount"] + ([] if as_root else ["--map-root-user"])
    done = subprocess.run([*command, "bash", str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    first_log = (tmp_path / "log1").read_text() if (tmp_path / "log1").exists() else ""
    assert done.returncode == 0, done.stdout + done.stderr + first_log
    assert "no space left on the device" in flat(first_log) and "Traceback" not in first_log
    kept = int((tmp_path / "count").read_text())
    assert 0 < kept < 42
    second_log = flat((tmp_path / "log2").read_text())
    assert f"{kept} already scored" in second_log
    assert len(keyed(tmp_path / "scores.jsonl")) == 42


def test_model_names_differing_only_by_case_are_warned_about(sample: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    mixed = [{**r, "model": "Sample-Strong"} if i < 3 and r["model"] == "sample-strong" else r
             for i, r in enumerate(rows)]
    path = write_jsonl(tmp_path / "mixed.jsonl", mixed)
    result = score(str(path), "-o", str(tmp_path / "s.jsonl"), "--no-tests")
    assert result.exit_code == 0, result.output
    assert "'Sample-Strong' and 'sample-strong' differ only by case" in flat(result.output)
