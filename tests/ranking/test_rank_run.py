"""The ``rank`` and ``correlate`` use cases, called without click (:mod:`prefjudge.ranking.run`).

The battles are evidence verdicts as ``prefjudge judge`` writes them (:mod:`pj_verdicts`:
decided ones, many decided by no evidence, one failed), so the use case reads what the
command reads; the files it writes are compared with the command's, byte for byte.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from pj_verdicts import MODELS, VerdictSet, evidence_verdicts, write_verdicts

from prefjudge.cli import main
from prefjudge.ranking import style as sc
from prefjudge.ranking.run import (
    STDOUT,
    CorrelateSettings,
    RankSettings,
    SettingsError,
    correlate_file,
    rank_file,
    rank_tables,
)
from prefjudge.ranking.tables import correlation_tables
from prefjudge.reporting import Advance, SilentReporter, StageError

NO_EVIDENCE_ROWS = 60


class ProgressReporter(SilentReporter):
    """A silent reporter that also keeps each progress bar: description, total, units done."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[list] = []

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Advance]:
        bar = [description, total, 0]
        self.bars.append(bar)

        def advance(n: int) -> None:
            bar[2] += n

        yield advance


@pytest.fixture(scope="module")
def verdicts() -> VerdictSet:
    return evidence_verdicts(decided=120, no_evidence=NO_EVIDENCE_ROWS, errors=1)


@pytest.fixture
def battles(verdicts: VerdictSet, tmp_path: Path) -> Path:
    return write_verdicts(tmp_path / "verdicts.jsonl", verdicts.everything())


def _texts(reporter: SilentReporter, level: str) -> list[str]:
    return [message for kind, message in reporter.messages if kind == level]


def test_rank_file_writes_what_the_command_writes(battles: Path, tmp_path: Path,
                                                  verdicts: VerdictSet) -> None:
    out = tmp_path / "use-case"
    settings = RankSettings(battles=battles, output=out / "ratings.csv",
                            json_path=out / "ratings.json", plot_path=out / "ratings.png",
                            n_resamples=40, seed=3, skip_invalid=True, suggest=2)
    reporter = ProgressReporter()
    outcome = rank_file(settings, reporter)

    assert outcome.written == (out / "ratings.csv", out / "ratings.json", out / "ratings.png")
    assert outcome.stdout is None and outcome.no_evidence == NO_EVIDENCE_ROWS
    assert [str(i) for i in outcome.skipped] == [
        f"{battles}:1: field 'winner': no winner: the judge failed "
        "(correctness evidence: the test harness failed)"]
    table = pd.read_csv(out / "ratings.csv")
    per_model = {m: sum(m in (v.model_a, v.model_b) for v in verdicts.decided) for m in MODELS}
    assert dict(zip(table["model"], table["battles"], strict=True)) == per_model
    payload = json.loads((out / "ratings.json").read_text(encoding="utf-8"))
    assert payload["no_evidence_verdicts"] == NO_EVIDENCE_ROWS
    assert len(payload["suggestions"]) == len(outcome.suggestions or ()) == 2
    assert (out / "ratings.png").read_bytes().startswith(b"\x89PNG")

    assert reporter.bars == [["bootstrap", 40, 40]]
    warned = _texts(reporter, "warn")
    assert any(m.startswith("skipped: ") and "the judge failed" in m for m in warned)
    assert any(f"{NO_EVIDENCE_ROWS} verdicts decided by no evidence" in m for m in warned)
    assert _texts(reporter, "note") == [f"ratings → {out / 'ratings.csv'}",
                                        f"JSON → {out / 'ratings.json'}",
                                        f"forest plot → {out / 'ratings.png'}"]

    cli = tmp_path / "command"
    result = CliRunner().invoke(main, [
        "rank", str(battles), "-o", str(cli / "ratings.csv"), "--json", str(cli / "ratings.json"),
        "--plot", str(cli / "ratings.png"), "--bootstrap", "40", "--ci-seed", "3",
        "--skip-invalid", "--suggest", "2"])
    assert result.exit_code == 0, result.output
    for name in ("ratings.csv", "ratings.json", "ratings.png"):
        assert (cli / name).read_bytes() == (out / name).read_bytes(), name

    tables = rank_tables(settings, outcome)
    assert [t.title for t in tables] == [
        f"Elo leaderboard ({len(verdicts.decided)} battles, ties: half)",
        "Pairs worth judging next (2; value = expected misordered pairs one more judgment "
        "removes)"]
    assert [row[1] for row in tables[0].rows] == list(table["model"])
    assert all(tables[0].rows[i][0] == str(i + 1) for i in range(len(MODELS)))


def test_rank_file_gives_a_dash_output_back_instead_of_writing_it(battles: Path,
                                                                   tmp_path: Path) -> None:
    settings = RankSettings(battles=battles, output=STDOUT, json_path=tmp_path / "r.json",
                            n_resamples=0, skip_invalid=True)
    outcome = rank_file(settings, SilentReporter())
    assert outcome.written == (tmp_path / "r.json",)
    assert outcome.stdout == outcome.result.table().to_csv(index=False)
    assert not Path("-").exists()
    frame = pd.read_csv(io.StringIO(outcome.stdout))
    assert set(frame["model"]) == set(MODELS)


def test_rank_file_style_control_counts_only_decided_verdicts(
    verdicts: VerdictSet, tmp_path: Path
) -> None:
    """``control``: the style fit through the use case ranks as if no-evidence rows were absent."""
    outcomes = []
    for name, chosen in (("all", verdicts.everything()), ("counted", verdicts.counted())):
        path = write_verdicts(tmp_path / name / "verdicts.jsonl", chosen)
        outcomes.append(rank_file(RankSettings(
            battles=path, output=tmp_path / name / "ratings.csv", control="style",
            n_resamples=20, skip_invalid=True), SilentReporter()))
    full, counted = ((tmp_path / n / "ratings.csv").read_bytes() for n in ("all", "counted"))
    assert full == counted
    board = outcomes[0].result.boards[""]
    assert isinstance(board, sc.StyleLeaderboard)
    assert board.n_battles == len(verdicts.decided)
    assert outcomes[0].no_evidence == NO_EVIDENCE_ROWS and outcomes[1].no_evidence == 0


def test_rank_file_stops_on_an_invalid_row_and_on_settings_that_clash(battles: Path,
                                                                      tmp_path: Path) -> None:
    with pytest.raises(StageError, match="1 problem\\(s\\) in the input") as info:
        rank_file(RankSettings(battles=battles, output=tmp_path / "r.csv"), SilentReporter())
    assert "the judge failed" in str(info.value)
    assert not (tmp_path / "r.csv").exists()
    with pytest.raises(SettingsError, match="--tasks goes with --suggest"):
        rank_file(RankSettings(battles=battles, tasks=(battles,)), SilentReporter())
    with pytest.raises(SettingsError, match="must be >= 0") as clash:
        rank_file(RankSettings(battles=battles, alpha=-1), SilentReporter())
    assert clash.value.option == "--alpha"
    with pytest.raises(SettingsError, match="only one output can go to stdout"):
        rank_file(RankSettings(battles=battles, output=STDOUT, json_path=STDOUT),
                  SilentReporter())


# --------------------------------------------------------------------------- correlate


def _scores(tmp_path: Path) -> Path:
    """Eight models whose Elo follows IF more than Func, with one model lacking a rating."""
    rows = []
    for i in range(8):
        rows.append({"model": f"m{i}", "func": 0.3 + 0.05 * ((i * 3) % 8), "if": 0.2 + 0.1 * i,
                     "rating": 1000 + 40 * i + 7 * ((i * 5) % 3)})
    rows.append({"model": "no-rating", "func": 0.5, "if": 0.5, "rating": None})
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_correlate_file_sweeps_and_writes(tmp_path: Path) -> None:
    scores = _scores(tmp_path)
    settings = CorrelateSettings(scores=scores, output=tmp_path / "curves.csv",
                                 json_path=STDOUT, plot_path=tmp_path / "curves.png",
                                 n_resamples=50, seed=1)
    reporter = SilentReporter()
    outcome = correlate_file(settings, reporter)
    assert outcome.written == (tmp_path / "curves.csv", tmp_path / "curves.png")
    payload = json.loads(outcome.stdout or "")
    assert payload["if_col"] == "if" and len(payload["models"]) == 8
    assert payload["incomplete"] == ["no-rating"]
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert list(curves["alpha"]) == pytest.approx([i / 10 for i in range(11)])
    assert any("lack func, if or rating" in m and "no-rating" in m
               for m in _texts(reporter, "warn"))
    curve, best = correlation_tables(outcome.sweeps[0])
    assert len(curve.rows) == 11 and [row[0] for row in best.rows] == [
        "pearson", "spearman", "kendall"]
    assert sum(cell.endswith(" ★") for row in curve.rows for cell in row) >= 3

    cli = tmp_path / "cli.csv"
    result = CliRunner().invoke(main, ["correlate", str(scores), "-o", str(cli),
                                       "--bootstrap", "50", "--ci-seed", "1"])
    assert result.exit_code == 0, result.output
    assert cli.read_bytes() == (tmp_path / "curves.csv").read_bytes()


def test_correlate_file_errors(tmp_path: Path) -> None:
    scores = _scores(tmp_path)
    with pytest.raises(StageError, match="incomplete scores: no-rating"):
        correlate_file(CorrelateSettings(scores=scores, require_all=True, n_resamples=0),
                       SilentReporter())
    with pytest.raises(SettingsError) as info:
        correlate_file(CorrelateSettings(scores=scores, step=0.3), SilentReporter())
    assert info.value.option == "--step"
