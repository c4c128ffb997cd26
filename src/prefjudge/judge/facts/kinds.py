"""Each kind of evidence as one function over a chunk of pairs, and what they share.

:class:`EvidenceRun` holds what the kinds share across chunks: the tasks whose tests and
inputs are run, the sandbox limits, the verification profile of the instruction checks, the
results the score stage found already (:mod:`prefjudge.judge.facts.from_scores`: a side
found there is not tested or checked again) and the zygotes runs are forked from (started
on first use -- only when some side is to run --, stopped by :meth:`EvidenceRun.close`).
:data:`KIND_RUNNERS` maps each kind to a function ``(run, pairs) -> facts``, one fact per
pair, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prefjudge.judge.facts.correctness import correctness_facts
from prefjudge.judge.facts.efficiency import efficiency_facts
from prefjudge.judge.facts.from_scores import ScoreFacts
from prefjudge.judge.facts.instructions import instruction_facts
from prefjudge.judge.facts.provenance import Known
from prefjudge.judge.facts.time_limits import efficiency_from_tests
from prefjudge.records import Fact, Pair, Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation
from prefjudge.sandbox.preload import modules_to_preload
from prefjudge.sandbox.zygote import ZygotePool, zygote_default
from prefjudge.scoring.profiles import JUDGE_PROFILE


@dataclass
class EvidenceRun:
    """What the evidence kinds share while judging one file.

    Attributes:
        tasks: Tasks by id (their tests and inputs).
        limits: Limits of every sandboxed run.
        correctness: Correctness facts already found, by pair id (efficiency needs both
            responses to pass first).
        workers: Sandboxed test runs at once (None: the CPU count; a Ray shard: its CPUs).
        profile: Verification profile of the instruction checks (``--profile``).
        scores: ``prefjudge score`` outputs whose records give sides' results (None: none).
        known: Sides' results found beforehand, by ``(pair_id, side, "tests" | "checks")``
            (a Ray shard's, looked up on the driver from the same score files).
        perf_client: A served model whose generators make the efficiency fact's inputs
            (``--perf-inputs model``); None: inputs grown from the task's.
    """

    tasks: Mapping[str, Task]
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    correctness: dict[str, Fact] = field(default_factory=dict)
    workers: int | None = None
    profile: str = JUDGE_PROFILE
    scores: ScoreFacts | None = None
    known: Mapping[tuple[str, str, str], Known] = field(default_factory=dict)
    perf_client: Any = None
    _pool: ZygotePool | None = None
    _pool_tried: bool = False

    def reused_tests(self, pair: Pair, side: Literal["A", "B"]) -> Known | None:
        """A side's test outcome found beforehand (None: run its tests here)."""
        found = self.known.get((pair.pair_id, side, "tests"))
        if found is None and self.scores is not None:
            found = self.scores.test_result(pair, side, self.limits)
        return found

    def reused_checks(self, pair: Pair, side: Literal["A", "B"]) -> Known | None:
        """A side's instruction check results found beforehand (None: check them here)."""
        found = self.known.get((pair.pair_id, side, "checks"))
        if found is None and self.scores is not None:
            found = self.scores.check_results(pair, side, self.profile)
        return found

    def pool(self) -> ZygotePool | None:
        """Zygotes for the sandboxed runs (None when zygotes are off)."""
        if not self._pool_tried:
            self._pool_tried = True
            if zygote_default():
                self._pool = ZygotePool(resolve_isolation(),
                                        modules_to_preload(self.tasks.values(), ()))
        return self._pool

    def close(self) -> None:
        """Stop the zygotes, if any were started."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def run_correctness(run: EvidenceRun, pairs: Sequence[Pair]) -> list[Fact]:
    """Correctness facts of a chunk, remembered for the efficiency kind."""
    todo = [p for p in pairs if p.pair_id not in run.correctness]
    if todo:  # the zygotes start only when some side is to run here
        for pair, fact in zip(todo, correctness_facts(todo, run.tasks, limits=run.limits,
                                                      pool=run.pool, workers=run.workers,
                                                      reused=run.reused_tests),
                              strict=True):
            run.correctness[pair.pair_id] = fact
    return [run.correctness[p.pair_id] for p in pairs]


def run_instructions(run: EvidenceRun, pairs: Sequence[Pair]) -> list[Fact]:
    """Instruction-following facts of a chunk, checked under the run's profile."""
    return instruction_facts(pairs, run.profile, reused=run.reused_checks)


def run_security(run: EvidenceRun, pairs: Sequence[Pair]) -> list[Fact]:
    """Security facts of a chunk (static analysis; the code never runs)."""
    del run
    from prefjudge.judge.facts.security import security_facts

    return security_facts(pairs)


def run_efficiency(run: EvidenceRun, pairs: Sequence[Pair]) -> list[Fact]:
    """Efficiency facts of a chunk.

    Pairs whose two responses both pass are measured (:func:`efficiency_facts`); every
    other pair is decided from its tests alone (:func:`efficiency_from_tests`: one side
    that runs out of time where the other finishes loses; other failures leave cost
    undecidable).
    """
    facts = [efficiency_from_tests(fact) for fact in run_correctness(run, pairs)]
    measured = [index for index, fact in enumerate(facts) if fact is None]
    if measured:
        pool = run.pool()
        found = efficiency_facts([pairs[i] for i in measured], run.tasks, limits=run.limits,
                                 runner=None if pool is None else pool.run,
                                 perf_client=run.perf_client)
        for index, fact in zip(measured, found, strict=True):
            facts[index] = fact
    return [fact for fact in facts if fact is not None]


KIND_RUNNERS: dict[str, Callable[[EvidenceRun, Sequence[Pair]], list[Fact]]] = {
    "correctness": run_correctness,
    "instructions": run_instructions,
    "efficiency": run_efficiency,
    "security": run_security,
}
