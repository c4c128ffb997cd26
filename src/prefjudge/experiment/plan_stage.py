"""What a planned step of an experiment is: the :class:`Stage` records ``build_plan`` lists.

A stage, and what the judge's suggested rounds carry (:class:`JudgeRounds` of
:class:`JudgePair`). Made by :mod:`.plan` (and :mod:`.judge_plan`, :mod:`.persona_plan`),
run by :mod:`.stages` and :mod:`.judge_rounds`, counted by :mod:`.progress` and shown by
:mod:`.tables`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.ranking.ties import TiePolicy

if TYPE_CHECKING:
    from prefjudge.backends.config import BackendConfig
    from prefjudge.judge.run import JudgeFileSettings

__all__ = ["JudgePair", "JudgeRounds", "Stage"]


@dataclass
class Stage:
    """One step of an experiment.

    Attributes:
        kind: ``augment``, ``generate``, ``score``, ``merge-scores``, ``judge``,
            ``judge-rounds``, ``merge-battles``, ``rank``, ``correlate``, ``report``,
            ``leaderboard``, ``view``, ``persona-rewrite``, ``persona-originals``,
            ``persona-compare``.
        label: What the progress display calls it.
        output: The file it writes.
        settings: The typed settings of the stage's use case (``AugmentSettings``,
            ``GenerateSettings``, ``ScoreSettings``, ``JudgeFileSettings``, ...); None for
            the steps done here (merges, original answers, leaderboard, rounds).
        backend: The model backend it asks (None: no model); ``run`` opens each distinct
            backend once (:class:`prefjudge.backends.pool.BackendPool`).
        requests: Model requests a fresh run of it makes.
        records: Records its output holds once done, that ``requests`` make (for what is
            left of it: :func:`prefjudge.experiment.progress.requests_left`).
        bound: ``""`` when ``requests`` is exact, ``"≥"`` when it is a lower bound (the
            judge's refinement depends on ties, a rewrite may be tried again), ``"≤"``
            when an upper bound (persona stages run on the rewrites that were accepted;
            the judging budget of suggested rounds), ``"about"`` when neither.
        inputs: Files it reads (merge steps).
        rounds: The suggested rounds (``judge-rounds`` only).
    """

    kind: str
    label: str
    output: Path
    settings: Any = None
    backend: BackendConfig | None = None
    requests: int = 0
    records: int = 0
    bound: str = ""
    inputs: list[Path] = field(default_factory=list)
    rounds: JudgeRounds | None = None


@dataclass(frozen=True, eq=False)  # each model pair's own: hashed by identity
class JudgePair:
    """One model pair's judging, for the rounds of ``strategy = "suggest"``.

    Attributes:
        model_a: The first model's name (as its verdicts name it).
        model_b: The second model's name.
        output: Its verdict file.
        settings: Its judging settings without ``limit`` (each round raises the limit;
            the judge resumes, so only the new pairs are judged).
        backend: The judge model (None for a method that asks none).
    """

    model_a: str
    model_b: str
    output: Path
    settings: JudgeFileSettings
    backend: BackendConfig | None = None


@dataclass(frozen=True)
class JudgeRounds:
    """The rounds after round 0 of ``[judge] strategy = "suggest"``.

    Attributes:
        budget: Judgments in all, round 0 included (capped by what the pairs allow).
        rounds: Rounds after round 0.
        seeded: Judgments of round 0 (``seed_judgments`` per model pair).
        per_pair: The most judgments one model pair can get (its pairs to judge).
        ties: Tie policy of the fits between rounds (``[rank] ties``).
        alpha: Regularisation of those fits (``[rank] alpha``).
        pairs: Every model pair's judging.
    """

    budget: int
    rounds: int
    seeded: int
    per_pair: int
    ties: TiePolicy
    alpha: float
    pairs: tuple[JudgePair, ...]

    def target(self, round_number: int) -> int:
        """Judgments in all once round ``round_number`` (0 … ``rounds``) is done."""
        extra = self.budget - self.seeded
        return self.seeded + -(-extra * round_number // self.rounds)
