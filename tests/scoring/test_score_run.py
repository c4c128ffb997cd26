"""``score_file``, the use case behind ``prefjudge score``, called without click."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prefjudge.reporting import SilentReporter, StageError
from prefjudge.scale.nodes import Acceptance, NodeReport
from prefjudge.scale.ray_engine import RayRun, RaySettings
from prefjudge.scale.score_engine import ray_nodes_table
from prefjudge.scoring.run import ScoreOutcome, ScoreSettings, ScoreUsageError, score_file

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def notes(reporter: SilentReporter) -> list[str]:
    return [message for level, message in reporter.messages if level == "note"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample's generations, with its tasks.jsonl beside them."""
    folder = tmp_path_factory.mktemp("sample")
    for name in ("generations.jsonl", "tasks.jsonl"):
        shutil.copy(SAMPLE / name, folder / name)
    return folder / "generations.jsonl"


@pytest.fixture(scope="module")
def scored(sample: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[ScoreSettings, ScoreOutcome, SilentReporter]:
    """The sample scored with unit tests (tasks.jsonl beside the generations)."""
    out = tmp_path_factory.mktemp("scores") / "scores.jsonl"
    settings = ScoreSettings(sample, output=out, bootstrap=50, ci_seed=3)
    reporter = SilentReporter()
    return settings, score_file(settings, reporter), reporter


def test_scores_every_generation_and_writes_the_summary_files(scored) -> None:
    settings, outcome, _ = scored
    records = rows(settings.output)
    assert [r["id"] for r in records] == [g["id"] for g in rows(settings.generations)]
    assert {r["meta"]["profile"] for r in records} == {"reference"}
    assert all(r["func"]["status"] in {"pass", "fail", "timeout"} for r in records)
    prefix = settings.output.with_name("scores.summary")
    assert outcome == ScoreOutcome(
        output=settings.output, records=42, scored=42, resumed=0, skipped=0, tests=True,
        tasks=outcome.tasks, sandbox=outcome.sandbox,
        summary_csv=Path(f"{prefix}.csv"), summary_json=Path(f"{prefix}.json"),
        summary_plot=Path(f"{prefix}.png"), table=outcome.table, check_errors=0,
        test_errors=0)
    assert outcome.tasks == (f"14 tasks from {settings.generations.parent / 'tasks.jsonl'} "
                             "(tasks.jsonl beside the generations file)")
    assert outcome.sandbox and outcome.summary_plot.stat().st_size > 5000
    summary = json.loads(outcome.summary_json.read_text())
    assert summary["generations"] == str(settings.generations)
    assert (summary["seed"], summary["bootstrap"], summary["engine"]) == (3, 50, {"name": "local"})
    assert {m["model"] for m in summary["models"]} == {"sample-strong", "sample-medium",
                                                       "sample-weak"}
    assert outcome.summary_csv.read_text().splitlines()[0].endswith(",profile")


def test_reports_the_tasks_the_profile_and_one_result_table(scored) -> None:
    settings, outcome, reporter = scored
    said = notes(reporter)
    assert said[0] == f"tasks: {outcome.tasks}"
    assert said[1].startswith("profile: reference — ")
    assert any(message.startswith("sandbox: ") for _, message in reporter.messages)
    assert said[-1] == (f"wrote {settings.output} (42 records), "
                        f"{settings.output.with_name('scores.summary')}.csv/.json/.png")
    [table] = reporter.tables
    assert table is outcome.table and table.result
    assert table.title == "prefjudge score — generations.jsonl — profile reference"
    assert list(table.columns) == ["model", "n", "IF instr. [95% CI]", "IF task [95% CI]",
                                   "pass@1 [95% CI]", "check err", "timeouts", "test err",
                                   "gen err"]
    assert table.right == {"n", "check err", "timeouts", "test err", "gen err"}
    by_model = {row[0]: row for row in table.rows}
    assert by_model["sample-strong"][4].startswith("1.000 [")
    assert {row[1] for row in table.rows} == {"14"}


def test_rerunning_resumes_and_writes_the_same_summary(scored) -> None:
    settings, outcome, _ = scored
    before = settings.output.read_bytes(), outcome.summary_csv.read_bytes()
    reporter = SilentReporter()
    again = score_file(settings, reporter)
    assert (again.scored, again.resumed, again.records) == (0, 42, 42)
    assert f"resuming {settings.output}: 42 already scored, 0 to go" in notes(reporter)
    assert (settings.output.read_bytes(), again.summary_csv.read_bytes()) == before


def test_resuming_with_another_profile_is_a_stage_error(scored) -> None:
    settings, _, _ = scored
    before = settings.output.read_bytes()
    with pytest.raises(StageError, match="profile"):
        score_file(ScoreSettings(settings.generations, output=settings.output, no_tests=True,
                                 profile="strict"), SilentReporter())
    assert settings.output.read_bytes() == before


def test_stdin_without_tasks_verifies_instructions_only(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    reporter = SilentReporter()
    outcome = score_file(ScoreSettings(sample, output=out, stdin=True, profile="strict",
                                       summary_prefix=tmp_path / "sum", bootstrap=10),
                         reporter)
    assert outcome.tests is False and outcome.sandbox == ""
    assert outcome.tasks == "none (GENERATIONS is stdin: name the tasks with --tasks)"
    assert outcome.summary_json == tmp_path / "sum.json"
    assert json.loads(outcome.summary_json.read_text())["generations"] == "-"
    assert reporter.tables[0].title == "prefjudge score — - — profile strict"
    assert {r["func"] is None for r in rows(out)} == {True}
    assert not any(message.startswith("sandbox") for _, message in reporter.messages)


def test_invalid_and_empty_inputs_are_stage_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(StageError, match="no generation records"):
        score_file(ScoreSettings(empty, output=tmp_path / "a.jsonl"), SilentReporter())
    broken = tmp_path / "broken.jsonl"
    broken.write_text((SAMPLE / "generations.jsonl").read_text().splitlines()[0] + "\n{oops\n")
    with pytest.raises(StageError, match="Nothing was scored"):
        score_file(ScoreSettings(broken, output=tmp_path / "b.jsonl", no_tests=True),
                   SilentReporter())
    assert not (tmp_path / "b.jsonl").exists()
    reporter = SilentReporter()
    outcome = score_file(ScoreSettings(broken, output=tmp_path / "c.jsonl", no_tests=True,
                                       skip_invalid=True, bootstrap=10), reporter)
    assert (outcome.records, outcome.skipped) == (1, 1)
    assert ("warn", "skipped 1 invalid input problem(s):") in reporter.messages


def test_a_task_in_two_sources_is_a_usage_error(sample: Path, tmp_path: Path) -> None:
    tasks = str(SAMPLE / "tasks.jsonl")
    with pytest.raises(ScoreUsageError, match="appears in more than one --tasks file") as caught:
        score_file(ScoreSettings(sample, output=tmp_path / "s.jsonl", tasks=(tasks, tasks)),
                   SilentReporter())
    assert caught.value.param_hint is None
    assert not (tmp_path / "s.jsonl").exists()


def test_an_unknown_task_source_names_the_option(hf_home: Path, sample: Path,
                                                 tmp_path: Path) -> None:
    with pytest.raises(ScoreUsageError, match="bigcodebench") as caught:
        score_file(ScoreSettings(sample, output=tmp_path / "s.jsonl", tasks=("bigcodebnech",)),
                   SilentReporter())
    assert caught.value.param_hint == "--tasks"


def test_the_ray_nodes_table_is_a_note_on_the_run() -> None:
    good = NodeReport("a" * 32, "host-a", "bwrap", "", {})
    weak = NodeReport("b" * 32, "host-b", "rlimits", "no namespaces", {})
    run = RayRun(RaySettings(), Acceptance(accepted=[good], refused=[(weak, "degraded")],
                                           capacity={good.node_id: 3}), tests=True)
    table = ray_nodes_table(run)
    assert table.title == "Ray nodes" and table.result is False
    assert [list(row) for row in table.rows] == [
        [good.short_id, "host-a", "bwrap", "3", "accepted"],
        [weak.short_id, "host-b", "rlimits", "0", "refused"],
    ]
