"""Finding the evidence facts of one shard of pairs: what a Ray task runs on a node.

A judging shard is a group of whole pairs with the tasks they need. Its facts are found by
the same code as a local run's (:meth:`prefjudge.judge.facts.judge.EvidenceJudge.facts`):
every kind in the order of each pair's criterion, correctness in parallel sandboxes, and
the efficiency of a pair measured -- A, B and the task's baseline interleaved -- in this
one process, so a pair is never split across nodes. Sides whose results the score stage
found already come with the shard (:attr:`JudgeShard.known`) and are not run again. The
driver turns the facts into verdicts (and asks ``hybrid``'s fallback model about the pairs
they leave undecided).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prefjudge.judge.facts.kinds import EvidenceRun
from prefjudge.judge.facts.provenance import Known
from prefjudge.records import Pair, Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.profiles import JUDGE_PROFILE


@dataclass(frozen=True)
class JudgeShard:
    """A group of whole pairs, with everything a node needs to find their facts.

    Attributes:
        index: Position of the shard in the run (for messages).
        pairs: The pairs.
        tasks: The tasks these pairs refer to (their tests and inputs).
        criterion: ``--criterion`` (None: each pair's own, else the default order).
        preload: Every module the zygotes import: the whole run's (as a local run's zygotes
            import it), so that one kept pool per worker serves every shard.
        limits: Limits of every sandboxed run.
        workers: Sandboxed test runs at once (the shard's CPUs).
        profile: Verification profile of the instruction facts (``--profile``).
        known: Sides' results the score files give (looked up on the driver:
            :func:`~prefjudge.judge.facts.from_scores.known_sides`), by
            ``(pair_id, side, "tests" | "checks")``; those sides are not run again.
    """

    index: int
    pairs: Sequence[Pair]
    tasks: dict[str, Task]
    criterion: str | None
    preload: tuple[str, ...] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    workers: int = 1
    profile: str = JUDGE_PROFILE
    known: Mapping[tuple[str, str, str], Known] = field(default_factory=dict)


@dataclass
class KeptEvidenceRun(EvidenceRun):
    """An :class:`EvidenceRun` whose runs fork from the worker's kept zygotes.

    Attributes:
        preload: The whole run's preload (the kept pool's key).
    """

    preload: tuple[str, ...] = ()

    def pool(self) -> ZygotePool | None:
        """The worker's kept zygotes (None when zygotes are off)."""
        from prefjudge.sandbox.zygote import zygote_default
        from prefjudge.scale.kept_pool import kept_pool

        return kept_pool(self.preload, self.limits) if zygote_default() else None

    def close(self) -> None:
        """Nothing: the worker keeps its zygotes for the next shard."""


def shard_facts(shard: JudgeShard, node: dict[str, str] | None = None) -> list[list[str]]:
    """Find the facts of a shard's pairs here, as a local run would.

    Args:
        shard: The pairs.
        node: Where this runs (``id``, ``host``, ``mode``); facts do not carry it.

    Returns:
        Per pair, in order, its facts as JSON (exact round trip of the measurements).
    """
    del node
    from prefjudge.judge.common import Ledger
    from prefjudge.judge.facts.judge import EvidenceJudge, EvidenceSettings

    settings = EvidenceSettings(method="evidence", criterion=shard.criterion,
                                tests=shard.tasks, profile=shard.profile)
    run = KeptEvidenceRun(
        shard.tasks, limits=shard.limits, workers=shard.workers, preload=shard.preload,
        profile=shard.profile, known=shard.known,
    )
    judge = EvidenceJudge(None, settings, Ledger(), run=run)
    return [[fact.model_dump_json() for fact in found] for found in judge.facts(list(shard.pairs))]
