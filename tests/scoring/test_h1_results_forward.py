"""A score run's summary travels in its outcome, and one function reads a journal binding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prefjudge import journal, journal_binding, journal_lock
from prefjudge.experiment import leaderboard
from prefjudge.experiment.outcomes import Held, score_summary
from prefjudge.journal import Journal, binding_path, read_binding
from prefjudge.judge.facts.from_scores import _binding
from prefjudge.records import ScoredSample
from prefjudge.reporting import SilentReporter
from prefjudge.scoring.run import ScoreSettings, score_file

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory):
    """The bundled sample scored without unit tests (a tiny bootstrap)."""
    folder = tmp_path_factory.mktemp("h1")
    generations = folder / "generations.jsonl"
    shutil.copy(SAMPLE / "generations.jsonl", generations)
    settings = ScoreSettings(generations, output=folder / "scores.jsonl", no_tests=True,
                             bootstrap=20, ci_seed=1)
    return settings, score_file(settings, SilentReporter())


def test_the_outcome_carries_the_summary_file_as_written(scored) -> None:
    settings, outcome = scored
    on_disk = json.loads(outcome.summary_json.read_text("utf-8"))
    assert outcome.summary == on_disk
    assert [row["model"] for row in outcome.summary["models"]] == sorted(
        {json.loads(line)["model"] for line in settings.generations.read_text().splitlines()})
    assert outcome.summary["profile"] == "reference" and outcome.summary["bootstrap"] == 20


def test_the_experiment_keeps_the_summary_without_reading_it_back(scored, tmp_path) -> None:
    settings, outcome = scored
    row = leaderboard.read_summary(settings.output)  # what was read from the file before
    assert row and score_summary(outcome) == row
    moved = tmp_path / "elsewhere.json"
    shutil.move(outcome.summary_json, moved)  # the file is gone: the outcome still has it
    try:
        held = Held()
        held.scored(outcome)
        assert held.summaries[Path(settings.output)] == row
        assert leaderboard.read_summary(settings.output) == {}
    finally:
        shutil.move(moved, outcome.summary_json)


def test_read_binding_reads_what_a_journal_wrote_and_none_otherwise(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    gens = tmp_path / "gens.jsonl"
    gens.write_text("{}\n", "utf-8")
    assert read_binding(out) is None  # no binding yet
    with Journal(out, ScoredSample, lambda rec: rec.id, stage="score",
                 inputs={"generations": gens}, settings={"tests": True, "harness": "abc"}):
        pass
    bound = read_binding(out)
    assert bound == json.loads(binding_path(out).read_text("utf-8"))
    assert bound["stage"] == "score" and bound["settings"]["harness"] == "abc"
    assert bound["inputs"]["generations"][0]["path"] == str(gens.resolve())
    assert _binding(out).tests is True and _binding(out).harness == "abc"
    for text in ("not json", "[1, 2]", "\"text\"", "[" * 5000 + "]" * 5000):
        binding_path(out).write_text(text, "utf-8")
        assert read_binding(out) is None, text
        assert _binding(out).tests is False
    binding_path(out).unlink()
    binding_path(out).mkdir()  # a folder where the file should be
    assert read_binding(out) is None


def test_a_changed_binding_is_still_refused_by_name(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    out.write_text("", "utf-8")

    def bound(output: Path, timeout: float) -> Journal:
        return Journal(output, ScoredSample, lambda rec: rec.id, stage="score",
                       settings={"timeout_s": timeout})

    with bound(out, 30.0) as held:
        held.write_lines([("k", json.dumps({"id": "k"}))])
    with pytest.raises(journal.JournalError, match=r"setting timeout_s: 30\.0 then, 40\.0 now"):
        bound(out, 40.0).open()
    assert read_binding(out)["settings"] == {"timeout_s": 30.0}  # refused: left as it was
    other = tmp_path / "other.jsonl"
    with pytest.raises(journal.JournalError, match="being written by another prefjudge run"):
        with bound(other, 30.0), bound(other, 30.0):
            pass
    assert not journal.lock_path(other).exists()  # the first let its lock go


def test_the_journal_names_moved_out_are_the_same_objects_there() -> None:
    for name in journal_binding.__all__:
        assert getattr(journal, name) is getattr(journal_binding, name), name
    for name in ("LOCK_SUFFIX", "lock_path"):
        assert getattr(journal, name) is getattr(journal_lock, name), name
