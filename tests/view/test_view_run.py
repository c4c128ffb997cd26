"""The ``view`` use case, called without click (:func:`prefjudge.view.run.view_folder`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_verdicts import evidence_verdicts, write_verdicts

from prefjudge.cli import main
from prefjudge.reporting import SilentReporter, StageError
from prefjudge.view.run import STDOUT, ViewSettings, default_output, view_folder


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder with judge verdicts (some failed, some decided by no evidence)."""
    verdicts = evidence_verdicts(decided=12, no_evidence=6, errors=1)
    write_verdicts(tmp_path / "results" / "verdicts.jsonl", verdicts.everything())
    (tmp_path / "results" / "notes.jsonl").write_text("not json\n", encoding="utf-8")
    return tmp_path / "results"


def test_view_folder_writes_the_page_the_command_writes(results: Path, tmp_path: Path) -> None:
    reporter = SilentReporter()
    outcome = view_folder(ViewSettings(results=results, title="mine"), reporter)
    page = default_output(results)
    assert outcome.output == page == results / "view.html" and outcome.stdout is None
    assert page.read_text(encoding="utf-8") == outcome.page.html
    assert outcome.page.pairs == 19 and outcome.page.samples == 0
    assert outcome.summary.startswith("0 scored samples, 19 judged pairs, ")
    notes = [m for kind, m in reporter.messages if kind == "note"]
    assert notes[0] == f"reading {results}"
    assert "  verdicts.jsonl: judge verdicts, 19 records" in notes
    assert notes[-1] == f"wrote {page}: {outcome.summary}"
    warned = [m for kind, m in reporter.messages if kind == "warn"]
    assert warned == ["1 line(s) could not be used (listed on the page):"]

    cli = tmp_path / "cli.html"
    result = CliRunner().invoke(main, ["view", str(results), "-o", str(cli), "--title", "mine"])
    assert result.exit_code == 0, result.output
    assert cli.read_bytes() == page.read_bytes()


def test_view_folder_gives_the_page_back_for_a_dash_or_writes_nothing(results: Path) -> None:
    piped = view_folder(ViewSettings(results=results, output=STDOUT), SilentReporter())
    assert piped.stdout == piped.page.html and not (results / "view.html").exists()
    built = view_folder(ViewSettings(results=results, write=False), SilentReporter())
    assert built.output is None and built.stdout is None and built.page.html
    assert not (results / "view.html").exists()


def test_view_folder_with_nothing_to_show_stops(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(StageError, match="nothing to show"):
        view_folder(ViewSettings(results=tmp_path / "empty"), SilentReporter())
    assert not (tmp_path / "empty" / "view.html").exists()
