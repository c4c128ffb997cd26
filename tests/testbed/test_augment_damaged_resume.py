"""``prefjudge augment`` resuming an output whose records were damaged: a one-line error
naming the file, line and field, never a traceback (issue 31 item 2, "k = NaN")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pj_cli import SAMPLE_DIR, flat, invoke


def augmented(tmp_path: Path) -> tuple[Path, Path]:
    tasks = shutil.copy(SAMPLE_DIR / "tasks.jsonl", tmp_path / "tasks.jsonl")
    out = tmp_path / "aug.jsonl"
    invoke("augment", tasks, "-o", out, "--selector", "rule", "--k", "2", "--limit", "3", ok=True)
    return Path(tasks), out


def damage(out: Path, edit) -> None:
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    edit(rows[1])
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))


def rerun(tasks: Path, out: Path):
    result = invoke(
        "augment",
        tasks,
        "-o",
        out,
        "--selector",
        "rule",
        "--k",
        "2",
        "--limit",
        "3",
        catch_exceptions=True,
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    return result


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (float("nan"), "finite number"),
        (float("inf"), "finite number"),
        ([2], "valid integer"),
        (-1, "greater than or equal to 0"),
        (-(10**400), "greater than or equal to 0"),
        (10**400, "less than or equal to"),
    ],
)
@pytest.mark.parametrize("field", ["k", "param_assignments", "param_repaired"])
def test_a_damaged_selector_record_names_line_and_field(
    tmp_path: Path, field: str, value, problem: str
) -> None:
    tasks, out = augmented(tmp_path)
    damage(out, lambda row: row["metadata"]["augment"].__setitem__(field, value))
    result = rerun(tasks, out)
    assert result.exit_code == 1, result.output
    message = flat(result.output)
    assert f"{out}:2:" in message and f"augment.{field}: " in message and problem in message
    assert "--force-new" in message


def test_selector_stats_that_are_not_an_object_are_refused(tmp_path: Path) -> None:
    tasks, out = augmented(tmp_path)
    damage(out, lambda row: row["metadata"].__setitem__("augment", 5))
    result = rerun(tasks, out)
    assert result.exit_code == 1 and f"{out}:2:" in flat(result.output), result.output


def test_an_unknown_instruction_in_a_resumed_record_is_named(tmp_path: Path) -> None:
    tasks, out = augmented(tmp_path)
    damage(out, lambda row: row["instructions"][0].__setitem__("id", "no_such_check"))
    result = rerun(tasks, out)
    assert result.exit_code == 1, result.output
    assert "unknown instruction id 'no_such_check'" in flat(result.output)
    assert str(out) in flat(result.output)


def test_the_undamaged_output_still_resumes(tmp_path: Path) -> None:
    tasks, out = augmented(tmp_path)
    damage(out, lambda row: row["metadata"]["augment"].__setitem__("k", 2.0))  # a whole float
    result = rerun(tasks, out)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "aug.summary.json").read_text())
    assert summary["tasks"] == 3
