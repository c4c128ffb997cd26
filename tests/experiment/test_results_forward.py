"""`prefjudge run` passes results forward: the leaderboard is built from the stages' outcomes.

A small experiment (2 models x 4 sample tasks, a monolithic judge answered by the fake
OpenAI server) runs in this process. Its leaderboard stage reads none of the files the
score, judge and rank stages wrote (counted through the leaderboard's readers and every
file opened for reading during that stage), and what it writes is byte for byte the
leaderboard built from the files alone, and what a rerun that resumes every stage writes.
"""

from __future__ import annotations

import builtins
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pj_cli import invoke
from pj_experiment import fake_experiment

from prefjudge.experiment import leaderboard, stages

READERS = ("read_summary", "read_verdicts", "read_ratings", "read_generation_errors",
           "journal_records")


class Reads:
    """The files read while the leaderboard stage runs (by reader, and by open)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.during = False
        self.calls: list[tuple[str, str]] = []
        self.opened: list[str] = []
        self.stages = 0

    def reader(self, name: str, real):
        def counted(path, *args, **kwargs):
            if self.during:
                self.calls.append((name, str(path)))
            return real(path, *args, **kwargs)
        return counted

    def opener(self, real):
        def counted(file, mode="r", *args, **kwargs):
            if self.during and "r" in mode and str(file).startswith(str(self.root)):
                self.opened.append(str(Path(file).relative_to(self.root)))
            return real(file, mode, *args, **kwargs)
        return counted


@contextmanager
def counting_reads(monkeypatch: pytest.MonkeyPatch, root: Path) -> Iterator[Reads]:
    reads = Reads(root)
    for name in READERS:
        monkeypatch.setattr(leaderboard, name, reads.reader(name, getattr(leaderboard, name)))
    monkeypatch.setattr(builtins, "open", reads.opener(builtins.open))
    monkeypatch.setattr(io, "open", reads.opener(io.open))  # Path.open and read_text
    real_step = stages.StageRunner.leaderboard

    def step(self, stage):
        reads.during, reads.stages = True, reads.stages + 1
        try:
            return real_step(self, stage)
        finally:
            reads.during = False

    monkeypatch.setattr(stages.StageRunner, "leaderboard", step)
    monkeypatch.setitem(stages._STEPS, "leaderboard", step)
    yield reads


def board_bytes(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in ("leaderboard.csv", "leaderboard.json")}


def board_from_files(root: Path, models: list[str], alpha: float, out: Path) -> dict[str, bytes]:
    """The leaderboard built from the results folder's files alone, written into ``out``."""
    slugs = {path.stem: path for path in (root / "generations").glob("*.jsonl")}
    ordered = sorted(slugs, key=lambda slug: models.index(slug.rsplit("-", 1)[0]))
    judgments = sorted((root / "judgments").glob("*__*.jsonl"))
    rows = leaderboard.build(models, [root / "scores" / f"{slug}.jsonl" for slug in ordered],
                             [slugs[slug] for slug in ordered], judgments,
                             root / "ratings.json", alpha)
    out.mkdir()
    leaderboard.write(rows, out, alpha, leaderboard.judges(judgments))
    return board_bytes(out)


@pytest.mark.slow
def test_the_leaderboard_of_a_run_is_made_from_its_outcomes(fake_server, tmp_path: Path,
                                                            monkeypatch) -> None:
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = fake_experiment(tmp_path / "f", fake_server.url)
    root = tmp_path / "f" / "results" / "fake"
    with counting_reads(monkeypatch, root) as reads:
        invoke("run", path, ok=True)
        assert reads.stages == 1
        # no score summary, verdict, generation or ratings file was read to make it
        assert reads.calls == [] and reads.opened == [], (reads.calls, reads.opened)
    first = board_bytes(root)
    board = json.loads(first["leaderboard.json"])
    assert {row["model"] for row in board["models"]} == {"model-a", "model-b"}
    assert all(row["elo"] is not None and row["pass1"] is not None and row["battles"] == 8
               for row in board["models"])
    assert board["judges"][0]["verdicts"] == 8

    alpha = board["composite_alpha"]
    assert board_from_files(root, ["model-a", "model-b"], alpha, tmp_path / "files") == first

    calls = fake_server.calls
    with counting_reads(monkeypatch, root) as reads:
        invoke("run", path, ok=True)  # every stage resumes: no model call
        assert reads.calls == [] and reads.opened == []
    assert fake_server.calls == calls
    assert board_bytes(root) == first


def test_the_leaderboard_reads_a_stage_that_did_not_run_here(tmp_path: Path) -> None:
    """Without an outcome, each stage's file is read through its one reader, and counts."""
    from prefjudge.experiment.outcomes import Held

    held = Held()
    assert held.ratings is None and not held.verdicts and not held.summaries
    ratings = tmp_path / "ratings.json"
    ratings.write_text(json.dumps({"ratings": [{"model": "m", "rating": 1010.0}]}))
    assert leaderboard.read_ratings(ratings) == {"m": {"model": "m", "rating": 1010.0}}
    gens = tmp_path / "gens.jsonl"
    gens.write_text('{"id": "1", "error": "boom"}\n{"id": "2", "error": null}\n')
    assert leaderboard.generation_errors({}, gens) == 1  # no summary: the file counts
    assert leaderboard.generation_errors({"gen_errors": 3}, gens) == 3  # the summary's count
