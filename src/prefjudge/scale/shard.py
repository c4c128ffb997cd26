"""Scoring one shard: what a Ray task runs on a node (plain Python, no Ray needed).

A shard is a slice of the run's generations with the tasks they need. It is scored by the
same code as a local run (:func:`prefjudge.scoring.score.score_batches`), so its records
equal a local run's; each also carries ``meta.node``: where it was scored and in which
isolation mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prefjudge.records import Generation, ScoredSample, Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.score import has_tests


@dataclass(frozen=True)
class Shard:
    """A slice of a scoring run, with everything a node needs to score it.

    Attributes:
        index: Position of the shard in the run (for messages).
        keys: The generations' journal keys, in order.
        generations: The generations (validated on the driver).
        tasks: The tasks these generations refer to.
        tests: Run unit tests where a task has any (the run has tasks and tests are on);
            as in a local run, every record then carries the sandbox line in ``meta``.
        limits: Sandbox limits per run.
        profile: Verification profile name.
        workers: Parallel Ruff groups and sandboxes inside the shard.
        zygote: Fork runs from zygotes (None: the node's default).
        preload: Every module the zygotes import: the whole run's (its tasks' imports and
            the extra modules asked for), so that one kept pool per worker process serves
            every shard of the run (:func:`prefjudge.scale.kept_pool.kept_pool`).
    """

    index: int
    keys: Sequence[str]
    generations: Sequence[Generation]
    tasks: dict[str, Task]
    tests: bool
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    profile: str = "reference"
    workers: int = 1
    zygote: bool | None = None
    preload: Sequence[str] = ()

    def tested(self) -> int:
        """How many of its generations have unit tests to run."""
        if not self.tests:
            return 0
        return sum(has_tests(gen, self.tasks) for gen in self.generations)


def score_shard(shard: Shard, node: dict[str, str] | None = None) -> list[ScoredSample]:
    """Score a shard here, as a local run would, and mark where.

    Unit-test runs fork from the worker process's kept zygotes
    (:func:`~prefjudge.scale.kept_pool.kept_pool`), started by its first shard and reused
    by the next ones, as a local run reuses its zygotes from chunk to chunk.

    Args:
        shard: What to score.
        node: ``meta.node`` for every record (``id``, ``host``, ``mode``); None leaves
            ``meta`` exactly as a local run writes it.

    Returns:
        The scored records, in the shard's order.
    """
    from prefjudge.sandbox import isolation_line, isolation_report
    from prefjudge.sandbox.zygote import ZygotePool, zygote_default
    from prefjudge.scale.kept_pool import kept_pool
    from prefjudge.scoring.score import ScoreJob, score_batches

    isolation = ""
    zygote: bool | ZygotePool = False
    if shard.tests:
        use_zygote = zygote_default() if shard.zygote is None else shard.zygote
        isolation = isolation_line(isolation_report(), use_zygote)
        if use_zygote and shard.tested():
            zygote = kept_pool(shard.preload, shard.limits)
    job = ScoreJob(generations=list(enumerate(shard.generations, start=1)),
                   keys=list(shard.keys), tasks=shard.tasks)
    records: list[ScoredSample] = []
    for batch in score_batches(job, workers=shard.workers, limits=shard.limits,
                               run_tests=shard.tests, isolation=isolation,
                               profile=shard.profile, separate_process=False,
                               zygote=zygote, preload=shard.preload):
        records.extend(batch)
    if node is not None:
        for record in records:
            record.meta["node"] = dict(node)
    return records
