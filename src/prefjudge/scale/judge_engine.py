"""Evidence judging on a Ray cluster (``judge``/``judge-eval``/``run --engine ray``).

The heavy part of ``evidence`` and ``hybrid`` judging is finding the facts: correctness runs
both responses' tests in the sandbox, efficiency measures A, B and the task's baseline,
interleaved. :class:`RayJudgeEngine` finds them on the cluster's sandbox-capable nodes
(probed and accepted as for ``score --engine ray``, :func:`~prefjudge.scale.score_engine.
start_ray`), in shards of whole pairs scheduled by the one rule of every Ray path
(:func:`~prefjudge.scale.ray_engine.ray_run_shards`: node affinity, lost nodes' shards
scheduled again elsewhere). The driver stays the only writer: it turns each finished
shard's facts into verdicts with the method's own rule
(:meth:`~prefjudge.judge.facts.judge.EvidenceJudge.decide`) -- for ``hybrid``, asking the
fallback model here, on the driver, about the pairs the facts leave undecided -- and the
judging run journals them, so a killed driver resumes with the pairs not yet written.

Results the score stage found already (``--scores``) are looked up here, on the driver, and
go with each shard (:func:`~prefjudge.judge.facts.from_scores.known_sides`): the nodes run
only the sides they lack. Verdicts equal a local run's, the efficiency facts' measurements
aside (they differ from run to run, locally too).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prefjudge.backends import Backend
from prefjudge.records import Fact, Pair, Verdict
from prefjudge.reporting import Reporter, StageError
from prefjudge.scale.judge_shard import JudgeShard, shard_facts
from prefjudge.scale.ray_engine import (
    JUDGE_SHARD_SIZE,
    RayEngineError,
    RayRun,
    RaySettings,
    ray_run_shards,
)
from prefjudge.scale.score_engine import start_ray

if TYPE_CHECKING:
    from prefjudge.judge.common import JudgeSettings, OnResult


@dataclass(frozen=True)
class RayJudgeEngine:
    """Find evidence facts on the nodes of a Ray cluster that can sandbox.

    Attributes:
        settings: How the Ray engine runs (address, degraded nodes, CPUs per shard); its
            ``shard_size`` (generations) is the scoring engine's.
        shard_size: Pairs per shard.
    """

    settings: RaySettings = field(default_factory=RaySettings)
    shard_size: int = JUDGE_SHARD_SIZE

    def start(self, *, tests: bool, reporter: Reporter) -> RayJudging:
        """Connect to the cluster, probe its nodes and report them (the ``Ray nodes`` table).

        Args:
            tests: Whether the pairs' tests run (only sandbox-capable nodes then).
            reporter: Where the nodes table and the refused nodes' reasons go.

        Returns:
            The connection, for one judging run.

        Raises:
            StageError: Without Ray, or when no node of the cluster can take shards.
        """
        return RayJudging(
            start_ray(self.settings, tests=tests, reporter=reporter, nothing="Nothing was judged."),
            reporter,
            self.shard_size,
        )


class RayJudging:
    """A Ray connection finding the facts of one judging run.

    Args:
        run: The connection and the nodes the driver accepted.
        reporter: Where lost and joining nodes are reported.
        shard_size: Pairs per shard.
    """

    def __init__(self, run: RayRun, reporter: Reporter, shard_size: int = JUDGE_SHARD_SIZE) -> None:
        self.run = run
        self.reporter = reporter
        self.shard_size = shard_size

    def facts(
        self, pairs: Sequence[Pair], settings: JudgeSettings
    ) -> Iterator[tuple[list[Pair], list[list[Fact]]]]:
        """Find the pairs' facts on the cluster, a finished shard at a time.

        Args:
            pairs: The pairs to judge (unique ids).
            settings: The run's :class:`~prefjudge.judge.common.JudgeSettings` (its
                ``tests``, ``criterion`` and verification profile).

        Yields:
            ``(pairs, facts)`` of each finished shard, in the order shards finish.

        Raises:
            StageError: When the engine cannot go on (a shard failing for good, no node left).
        """
        from prefjudge.judge.facts.correctness import runnable_task
        from prefjudge.judge.facts.from_scores import known_sides
        from prefjudge.judge.facts.judge import EvidenceSettings, evidence_profile
        from prefjudge.sandbox.preload import modules_to_preload

        tests = dict(settings.tests)
        profile = evidence_profile(settings)  # the nodes check instructions as here
        scores = settings.scores if isinstance(settings, EvidenceSettings) else None
        size = self.shard_size
        # The local run's zygotes import every --tests task's modules: so do the nodes'.
        preload = tuple(modules_to_preload(tests.values(), ()))
        shards = []
        for index, start in enumerate(range(0, len(pairs), size)):
            part = list(pairs[start : start + size])
            needed = {p.task_id: tests[p.task_id] for p in part if p.task_id in tests}
            shards.append(
                JudgeShard(
                    index=index,
                    pairs=part,
                    tasks=needed,
                    criterion=settings.criterion,
                    preload=preload,
                    workers=self.run.settings.cpus_per_shard,
                    profile=profile,
                    # the score stage's results, looked up here: the nodes run the rest
                    known={} if scores is None else known_sides(scores, part, profile=profile),
                )
            )
        sandboxed = [any(runnable_task(p, shard.tasks) for p in shard.pairs) for shard in shards]
        try:
            for index, found in ray_run_shards(
                self.run, shards, shard_facts, sandboxed=sandboxed, on_event=self.reporter.warn
            ):
                yield (
                    list(shards[index].pairs),
                    [[Fact.model_validate_json(line) for line in lines] for lines in found],
                )
        except RayEngineError as exc:
            raise StageError(str(exc)) from exc

    def judge_pairs(
        self,
        pairs: Sequence[Pair],
        backend: Backend,
        settings: JudgeSettings,
        *,
        chunk_size: int,
        on_result: OnResult | None = None,
    ) -> Iterator[Verdict]:
        """Judge pairs with an evidence method, their facts found on the cluster.

        What :func:`prefjudge.judge.judge_pairs` does locally, but verdicts come as shards
        finish (not in input order): the method decides each shard's pairs from their facts
        (``hybrid`` asks its fallback model here, ``chunk_size`` pairs per batch).

        Args:
            pairs: Pairs with unique ``pair_id``.
            backend: The judge model (``hybrid``'s fallback; :class:`NoModel` otherwise).
            settings: The run's :class:`~prefjudge.judge.common.JudgeSettings`.
            chunk_size: Pairs per fallback batch.
            on_result: Called per backend result (progress).

        Yields:
            One verdict per pair, with its style features, as its shard finishes.

        Raises:
            StageError: When the engine cannot go on.
        """
        from prefjudge.features import tokenizer_for
        from prefjudge.judge import METHODS, check_unique_ids, with_features
        from prefjudge.judge.common import Ledger
        from prefjudge.judge.facts.judge import EvidenceJudge

        check_unique_ids(pairs)
        method = METHODS[settings.method](backend, settings, Ledger())
        if not isinstance(method, EvidenceJudge):
            raise StageError(
                f"--engine ray finds evidence facts; --method {settings.method} has none"
            )
        counter = tokenizer_for(settings.tokenizer)
        try:
            for part, facts in self.facts(pairs, settings):
                for start in range(0, len(part), chunk_size):
                    chunk = part[start : start + chunk_size]
                    decided = method.decide(chunk, facts[start : start + chunk_size], on_result)
                    for pair, verdict in zip(chunk, decided, strict=True):
                        yield with_features(verdict, pair, counter)
        finally:
            method.close()

    def close(self) -> None:
        """Disconnect from the cluster (and stop a Ray instance started here)."""
        self.run.close()


__all__ = ["JUDGE_SHARD_SIZE", "RayJudgeEngine", "RayJudging"]
