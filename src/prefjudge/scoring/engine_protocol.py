"""What an engine that scores a run elsewhere offers :func:`~prefjudge.scoring.run.score_file`.

A :class:`ScoringEngine` (``prefjudge.scale.score_engine.RayEngine``, ``--engine ray``) is
started for one run and returns an :class:`EngineRun`, whose batches of scored records the
run writes as they come; :class:`EngineWork` is what the run gives it to score. Scoring
knows nothing of Ray: the engine sits above the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from prefjudge.records import ScoredSample, Task
    from prefjudge.reporting import Reporter
    from prefjudge.sandbox import SandboxLimits
    from prefjudge.scoring.score import ScoreJob


@dataclass(frozen=True)
class EngineWork:
    """What an engine scores in one run (the argument of :meth:`EngineRun.batches`).

    Attributes:
        job: The validated generations and their keys.
        tasks: Tasks by id (empty: no unit tests).
        done: Keys the output already holds.
        limits: Each test run's sandbox limits.
        profile: Verification profile.
        zygote: Fork test runs from a zygote (None: the default).
        preload: Modules the zygotes import besides the tasks' own.
        on_progress: Called with the phase (``verify``, ``tests``) and units done.
        on_event: Called with a line about the engine (a node lost, a shard again).
    """

    job: ScoreJob
    tasks: Mapping[str, Task]
    done: set[str]
    limits: SandboxLimits
    profile: str
    zygote: bool | None
    preload: Sequence[str]
    on_progress: Callable[[str, int], None]
    on_event: Callable[[str], None]


class EngineRun(Protocol):
    """A scoring engine connected for one run (what :meth:`ScoringEngine.start` returns).

    Attributes:
        sandbox: How the unit tests are isolated, for the summary ("" without tests).
        sandbox_mode: The isolation mode bound in the output's journal ("" without tests).
    """

    sandbox: str
    sandbox_mode: str

    def batches(self, work: EngineWork) -> Iterable[list[ScoredSample]]:
        """Score the work's generations whose keys are not done, in finished batches.

        Args:
            work: What to score, and where progress and events go.

        Returns:
            Scored records, a batch at a time, as they finish.

        Raises:
            StageError: When the engine cannot go on (records already written are kept).
        """
        ...

    def summary(self) -> dict[str, object]:
        """Where the scoring ran, for the summary file's ``engine``."""
        ...

    def close(self) -> None:
        """Let the engine's resources go (disconnect)."""
        ...


class ScoringEngine(Protocol):
    """Where a run's records are scored when not on this machine.

    ``prefjudge.scale.score_engine.RayEngine`` (``--engine ray``) is one; scoring knows
    nothing of Ray (the engine sits above the stages).
    """

    def start(self, *, tests: bool, reporter: Reporter) -> EngineRun:
        """Connect for one run and report where the records will be scored.

        Args:
            tests: Whether the run has unit tests to run.
            reporter: Where the engine reports (its nodes, refused ones).

        Returns:
            The connected engine; the run closes it.

        Raises:
            StageError: When nothing can be scored there.
        """
        ...


__all__ = ["EngineRun", "EngineWork", "ScoringEngine"]
