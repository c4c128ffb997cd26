"""The Ray engine as an engine of :func:`prefjudge.scoring.run.score_file` (``--engine ray``).

Scoring knows nothing of Ray: ``score_file`` scores on this machine unless its settings name
an engine (:class:`prefjudge.scoring.run.ScoringEngine`). :class:`RayEngine` is that engine
for a Ray cluster::

    settings = ScoreSettings(gens, output=out, engine=RayEngine(RaySettings(address="auto")))
    score_file(settings, reporter)  # reports the cluster's nodes, then scores on them

Ray is imported only when the engine starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prefjudge.records import ScoredSample
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.scale.ray_engine import (
    RayEngineError,
    RayRun,
    RaySettings,
    connect,
    ray_score_batches,
)
from prefjudge.scoring.run import EngineWork


@dataclass(frozen=True)
class RayEngine:
    """Score on the nodes of a Ray cluster that can sandbox (a :class:`ScoringEngine`).

    Attributes:
        settings: How the Ray engine runs (address, shards, degraded nodes).
    """

    settings: RaySettings = field(default_factory=RaySettings)

    def start(self, *, tests: bool, reporter: Reporter) -> RayScoring:
        """Connect to the cluster, probe its nodes and report them (the ``Ray nodes`` table).

        Args:
            tests: Whether the run has unit tests (only sandbox-capable nodes then).
            reporter: Where the nodes table and the refused nodes' reasons go.

        Returns:
            The connection, for one run.

        Raises:
            StageError: Without Ray, or when no node of the cluster can take shards.
        """
        return RayScoring(
            start_ray(self.settings, tests=tests, reporter=reporter, nothing="Nothing was scored.")
        )


def start_ray(settings: RaySettings, *, tests: bool, reporter: Reporter, nothing: str) -> RayRun:
    """Connect, probe the nodes and report them: how every Ray path starts.

    Args:
        settings: How the Ray engine runs.
        tests: Whether shards run untrusted code (only sandbox-capable nodes then).
        reporter: Where the ``Ray nodes`` table and the refused nodes' reasons go.
        nothing: What the error adds when no node is accepted (``Nothing was scored.``).

    Returns:
        The connection and its node decisions.

    Raises:
        StageError: Without Ray, or when no node of the cluster can take shards.
    """
    try:
        run = connect(settings, tests=tests)
    except RayEngineError as exc:
        raise StageError(f"{exc}\n{nothing}") from exc
    reporter.table(ray_nodes_table(run))
    for node, why in run.acceptance.refused:  # whole, not wrapped in a narrow column
        reporter.warn(f"refused {node.label()}: {why}")
    return run


class RayScoring:
    """A Ray connection scoring one run (a :class:`prefjudge.scoring.run.EngineRun`).

    Args:
        run: The connection and the nodes the driver accepted.

    Attributes:
        run: The connection and the nodes the driver accepted.
        sandbox: ``Ray: N node(s), MODES`` with unit tests, else "".
        sandbox_mode: The accepted nodes' isolation modes with unit tests, else "".
    """

    def __init__(self, run: RayRun) -> None:
        self.run = run
        self.sandbox_mode = run.acceptance.modes() if run.tests else ""
        self.sandbox = (
            f"Ray: {len(run.acceptance.accepted)} node(s), {self.sandbox_mode}" if run.tests else ""
        )

    def batches(self, work: EngineWork) -> Iterator[list[ScoredSample]]:
        """Score the work's shards on the accepted nodes, a shard's records at a time.

        Args:
            work: What to score (:class:`~prefjudge.scoring.run.EngineWork`); its events
                are about the cluster (a node lost, a shard again).

        Yields:
            The records of each finished shard.

        Raises:
            StageError: When the engine cannot go on (a shard failing for good, no node left).
        """
        try:
            yield from ray_score_batches(
                self.run, work.job.keys, [gen for _, gen in work.job.generations], work.tasks,
                done=work.done, limits=work.limits, profile=work.profile, zygote=work.zygote,
                preload=work.preload, on_progress=work.on_progress, on_event=work.on_event,
            )
        except RayEngineError as exc:
            raise StageError(str(exc)) from exc

    def summary(self) -> dict[str, object]:
        """Where the scoring ran, for the summary file: the address and the nodes' modes."""
        run = self.run
        return {
            "name": "ray",
            "address": run.settings.address,
            "shard_size": run.settings.shard_size,
            "cpus_per_shard": run.settings.cpus_per_shard,
            "nodes": [
                {
                    "id": node.short_id,
                    "host": node.host,
                    "mode": node.mode,
                    "shards_at_once": run.acceptance.capacity[node.node_id],
                    "versions": dict(node.versions),
                }
                for node in run.acceptance.accepted
            ],
            "refused": [
                {"id": node.short_id, "host": node.host, "mode": node.mode, "why": why}
                for node, why in run.acceptance.refused
            ],
        }

    def close(self) -> None:
        """Disconnect from the cluster (and stop a Ray instance started here)."""
        self.run.close()


def ray_nodes_table(run: RayRun) -> TextTable:
    """The Ray cluster's nodes: accepted (with their mode and shard slots) and refused.

    Args:
        run: The connection and its node decisions.

    Returns:
        A table on the run (not a result).
    """
    rows = [
        [
            node.short_id,
            node.host,
            node.mode,
            str(run.acceptance.capacity[node.node_id]),
            "accepted",
        ]
        for node in run.acceptance.accepted
    ]
    rows += [
        [node.short_id, node.host, node.mode, "0", "refused"] for node, _ in run.acceptance.refused
    ]
    columns = ("node", "host", "sandbox", "shards at once", "status")
    return TextTable("Ray nodes", columns, rows, result=False)


__all__ = ["RayEngine", "RayScoring", "ray_nodes_table", "start_ray"]
