"""The ``report`` use case, called without click (:mod:`prefjudge.testbed.report_run`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from prefjudge.cli import main
from prefjudge.records import CheckResult, FuncResult, InstructionRef, ScoredSample
from prefjudge.reporting import SilentReporter, StageError
from prefjudge.testbed.report_run import STDOUT, ReportSettings, report_file


def _records() -> list[ScoredSample]:
    rows = []
    for model, strength in (("strong", 0.9), ("weak", 0.4)):
        for task in range(12):
            passed = (task * 7 % 10) / 10 < strength
            checks = [CheckResult(id="style_1", status="pass" if passed else "fail"),
                      CheckResult(id="doc_1", status="pass")]
            rows.append(ScoredSample(
                task_id=f"t{task}", model=model, response="", k=2,
                instructions=[InstructionRef(id=c.id) for c in checks],
                instruction_results=checks, if_instruction=(1 + passed) / 2, if_task=passed,
                func=FuncResult(status="pass" if passed else "fail")))
    return rows


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in _records()), encoding="utf-8")
    return path


def test_report_file_writes_what_the_command_writes(scores: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    settings = ReportSettings(scores=scores, output=out / "report.html",
                              markdown=out / "report.md", n_resamples=50, seed=2, title="T")
    reporter = SilentReporter()
    outcome = report_file(settings, reporter)
    pictures = outcome.written[1:-1]
    assert outcome.written == (out / "report.html", *pictures, out / "report.md")
    assert outcome.samples == 24 and outcome.stdout is None
    assert 0 < outcome.figures == len(pictures) <= outcome.sections
    assert reporter.messages == [(
        "note", f"wrote {out / 'report.html'}, {out / 'report.md'} (its {outcome.figures} plots "
                f"as PNG files beside it): {outcome.sections} sections, {outcome.figures} plots, "
                "24 scored samples")]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<title>T</title>" in page and f"scores: {scores}" in page

    cli = tmp_path / "cli"
    result = CliRunner().invoke(main, ["report", str(scores), "-o", str(cli / "report.html"),
                                       "--markdown", str(cli / "report.md"), "--bootstrap", "50",
                                       "--ci-seed", "2", "--title", "T"])
    assert result.exit_code == 0, result.output
    for name in ("report.html", "report.md", *(picture.name for picture in pictures)):
        assert (cli / name).read_bytes() == (out / name).read_bytes(), name


def test_report_file_gives_a_dash_output_back_and_names_the_source(scores: Path) -> None:
    outcome = report_file(ReportSettings(scores=scores, output=STDOUT, n_resamples=0,
                                         source_name="-"), SilentReporter())
    assert outcome.written == () and outcome.stdout is not None
    assert "scores: -" in outcome.stdout and not Path("-").exists()


def test_report_file_on_an_empty_file_stops(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(StageError, match="no scored records in the file"):
        report_file(ReportSettings(scores=empty, output=tmp_path / "r.html"), SilentReporter())
    assert not (tmp_path / "r.html").exists()
