"""`prefjudge run`: the plan counts what is left, and a locked output names `run`'s own way out.

A dry run of a finished experiment plans no model request (a rerun makes none); one whose
output lost records plans theirs only. A second run on an output being written is refused
with the experiment file's keys, not ``-o`` (which ``run`` does not have).
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

import pytest
from pj_cli import flat, invoke
from pj_experiment import fake_experiment


def plan_row(plan: str, label: str) -> list[str]:
    """The cells of the plan's row whose stage is ``label``."""
    for line in plan.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 2 and cells[2] == label:
            return cells[1:-1]
    raise AssertionError(f"no row {label!r} in:\n{plan}")


@pytest.mark.slow
def test_a_dry_run_plans_only_the_requests_a_rerun_makes(fake_server, tmp_path: Path) -> None:
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = fake_experiment(tmp_path / "f", fake_server.url)
    fresh = invoke("run", path, "--dry-run", ok=True).output
    assert plan_row(fresh, "total")[3] == "32"  # 2 models x 4 tasks x 2 k + 8 pairs x 2
    invoke("run", path, ok=True)
    calls = fake_server.calls
    assert calls == 32

    finished = invoke("run", path, "--dry-run", ok=True).output
    assert plan_row(finished, "total")[3:] == ["0", "32", "0"], finished
    assert "0 model requests left (32 already done)" in flat(finished)
    rerun = invoke("run", path, ok=True).output
    assert re.search(r"\b0\s+model\s+calls\s+this\s+run", rerun) and fake_server.calls == calls

    (gens,) = (tmp_path / "f" / "results" / "fake" / "generations").glob("model-b-*.jsonl")
    lines = gens.read_text().splitlines(keepends=True)
    gens.write_text("".join(lines[:5]) + lines[5][:10])  # 5 records and a torn line left
    partial = invoke("run", path, "--dry-run", ok=True).output
    assert plan_row(partial, "generate model-b")[3:] == ["3", "5", "—"], partial
    assert plan_row(partial, "generate model-a")[3:] == ["0", "8", "—"], partial


def test_a_second_run_on_an_output_being_written_names_the_experiment_keys(
    fake_server, tmp_path: Path
) -> None:
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan
    from prefjudge.journal import lock_path

    path = fake_experiment(tmp_path / "f", fake_server.url)
    experiment, base = load_experiment(path)
    _, stages = build_plan(experiment, base, 4)
    first = next(stage for stage in stages if stage.kind == "generate").output
    first.parent.mkdir(parents=True)
    fd = os.open(lock_path(first), os.O_RDWR | os.O_CREAT, 0o644)
    try:  # another run holds the first model's generations
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"4242\n")
        result = invoke("run", path, ok=False)
    finally:
        os.close(fd)
    said = flat(result.output)
    assert "is being written by another prefjudge run (pid 4242)" in said, said
    assert f"give this run another [experiment] name or results folder in {path}" in said
    assert "-o" not in said.split()  # run has no -o
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_other_commands_keep_their_own_hint(tmp_path: Path) -> None:
    from prefjudge.journal import Journal, JournalError, output_choice
    from prefjudge.records import Task

    out = tmp_path / "out.jsonl"
    with Journal(out, Task, lambda task: task.task_id, stage="t"):
        for hint, expected in ((None, "choose another -o"), ("pick X", "pick X")):
            second = Journal(out, Task, lambda task: task.task_id, stage="t")
            with pytest.raises(JournalError) as refused:
                if hint is None:
                    second.open()
                else:
                    with output_choice(hint):
                        second.open()
            assert str(refused.value).endswith(f"wait for it to finish or {expected}")
