"""What ``run``'s stages returned, kept for the stages after them (the leaderboard).

Each stage's use case returns its outcome: ``score`` its summary, ``judge`` its verdicts
(:class:`prefjudge.judge.run.JudgeOutcome`), ``rank`` its ratings. :class:`Held` keeps the
facts the leaderboard needs from them, as the files hold them, so the leaderboard reads
no file that a stage of this process made; a stage that did not run here (or whose
outcome does not hold its whole file) is read from its file, through the one reader of
that stage's output (:mod:`prefjudge.experiment.leaderboard`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.experiment import leaderboard
from prefjudge.io import dumps_json

if TYPE_CHECKING:
    from prefjudge.experiment.config import Experiment
    from prefjudge.judge.run import JudgeFileSettings, JudgeOutcome
    from prefjudge.ranking.run import RankOutcome, RankSettings
    from prefjudge.scoring.run import ScoreOutcome


def score_summary(outcome: ScoreOutcome) -> dict[str, Any]:
    """A score stage's summary row (``models[0]`` of the summary it wrote; empty: none).

    The one place the score stage's summary is taken from its outcome, which carries the
    summary document as its file holds it (``ScoreOutcome.summary``): the file is not read
    back.
    """
    models = outcome.summary.get("models") or []
    return dict(models[0]) if models else {}


def rank_ratings(settings: RankSettings, outcome: RankOutcome) -> dict[str, dict[str, Any]]:
    """The ratings of a ``rank`` stage by model, exactly as its JSON file holds them."""
    from prefjudge.ranking.reports import rank_payload

    payload = rank_payload(outcome.result, scale=settings.scale,
                           anchored=settings.anchor is not None)
    rows = json.loads(dumps_json(payload["ratings"]))  # the file's numbers (NaN as null)
    return {str(row["model"]): row for row in rows}


def whole_file(settings: JudgeFileSettings, outcome: JudgeOutcome) -> bool:
    """Whether a judge stage's outcome holds its whole verdict file, in the file's order.

    Its verdicts are those of the pairs it judged, in input order: the whole file when no
    ``limit`` left pairs out (a file may hold verdicts of an earlier, higher limit), and
    the order matters only when the file has more than one judge (``hybrid``: the evidence
    and the model), whose rows the leaderboard lists in order of appearance.
    """
    judges = {(verdict.method, verdict.judge_model) for verdict in outcome.verdicts}
    return settings.limit is None and len(judges) <= 1


@dataclass
class Held:
    """The facts the stages of this process returned, by output file.

    Attributes:
        summaries: Each ``score`` output's summary row.
        verdicts: Each verdict file's verdicts (only those whose outcome holds the file).
        ratings: The ``rank`` stage's ratings by model; None when it did not run here.
    """

    summaries: dict[Path, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[Path, tuple[Any, ...]] = field(default_factory=dict)
    ratings: dict[str, dict[str, Any]] | None = None

    def scored(self, outcome: ScoreOutcome) -> None:
        """Keep a score stage's summary."""
        self.summaries[Path(outcome.output)] = score_summary(outcome)

    def judged(self, settings: JudgeFileSettings, outcome: JudgeOutcome | None) -> None:
        """Keep a judge stage's verdicts (None: it judged nothing; its file is read)."""
        output = Path(settings.output)
        if outcome is not None and whole_file(settings, outcome):
            self.verdicts[output] = outcome.verdicts
        else:
            self.verdicts.pop(output, None)

    def ranked(self, settings: RankSettings, outcome: RankOutcome | None) -> None:
        """Keep the rank stage's ratings (None: no battles, no ratings written)."""
        self.ratings = {} if outcome is None else rank_ratings(settings, outcome)


def leaderboard_facts(experiment: Experiment, root: Path, held: Held) -> leaderboard.Facts:
    """The leaderboard's facts: those held, the rest read from the results folder.

    Args:
        experiment: The experiment (its models and judge).
        root: Its results folder.
        held: What the stages of this process returned.

    Returns:
        The facts, the verdict files in file-name order (as ``rank``'s merge lists them).
    """
    slugs = [model.slug() for model in experiment.models]
    summaries = []
    errors = []
    for slug in slugs:
        scores = root / "scores" / f"{slug}.jsonl"
        summary = held.summaries.get(scores)
        summary = leaderboard.read_summary(scores) if summary is None else summary
        summaries.append(summary)
        errors.append(leaderboard.generation_errors(
            summary, root / "generations" / f"{slug}.jsonl"))
    return leaderboard.Facts(
        summaries=summaries,
        generation_errors=errors,
        verdicts=[held.verdicts[path] if path in held.verdicts
                  else leaderboard.read_verdicts(path)
                  for path in judgment_files(experiment, root)],
        ratings=(held.ratings if held.ratings is not None
                 else leaderboard.read_ratings(root / "ratings.json")),
    )


def judgment_files(experiment: Experiment, root: Path) -> list[Path]:
    """The experiment's verdict files (one per model pair), in file-name order."""
    if not experiment.judge:
        return []
    slugs = [model.slug() for model in experiment.models]
    names = sorted(f"{a}__{b}.jsonl" for i, a in enumerate(slugs) for b in slugs[i + 1:])
    return [root / "judgments" / name for name in names]
