"""The Ray engine's driver: connect, probe the nodes, schedule shards, collect records.

The driver never scores anything itself. It pins each shard to an accepted node (Ray's
node-affinity scheduling, hard), asks for the shard's CPUs, memory and -- when it runs
unit tests -- one unit of :data:`~prefjudge.scale.nodes.SANDBOX_RESOURCE`, and keeps at
most ``max_in_flight`` shards submitted. A shard whose node is lost (or whose worker dies
past Ray's own retries) is scheduled again on another accepted node, up to
``max_retries`` times; an exception raised by prefjudge's own code inside a shard is a
bug, not a lost node, and stops the run with the shard named. Nodes that join during the
run are probed and used when accepted.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prefjudge.records import Generation, ScoredSample, Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.scale.nodes import (
    SANDBOX_RESOURCE,
    Acceptance,
    NodeReport,
    accept_nodes,
    node_report_here,
    verdict_versions,
)
from prefjudge.scale.shard import Shard, score_shard
from prefjudge.scoring.score import job_preload

RAY_EXTRA_HINT = "--engine ray needs Ray: pip install 'prefjudge[ray]'"
PROBE_TIMEOUT_S = 120.0
REFRESH_S = 30.0
"""How often the driver looks for nodes that joined the cluster."""


class RayEngineError(RuntimeError):
    """The Ray engine cannot go on (no Ray, no accepted node, a shard failing for good)."""


JUDGE_SHARD_SIZE = 25
"""Pairs per judging shard when ``--shard-size`` is not given: an efficiency pair takes
seconds to measure, so shards stay small enough to spread over the nodes and to lose little.
Here, beside the scoring shards' default, so the command line reads both without importing
the judge."""


@dataclass(frozen=True)
class RaySettings:
    """How the Ray engine runs (``--engine ray`` and its options).

    Attributes:
        address: ``auto`` (the cluster this machine belongs to), ``ray://host:port``,
            ``host:port`` of a head node, or ``local`` (start a Ray instance on this machine
            whose CPUs are all marked able to sandbox).
        allow_degraded: Accept nodes that only sandbox in the rlimits fallback.
        shard_size: Generations per shard.
        cpus_per_shard: CPUs a shard asks for (and sandboxes it runs at once).
        memory_mb_per_shard: Memory a shard asks Ray for (logical; Ray's ``memory``).
        max_in_flight: Most shards submitted at once (None: every accepted slot plus one
            waiting per node).
        max_retries: Ray's retries of a shard whose worker died, and the driver's
            reschedulings of a shard whose node was lost.
    """

    address: str = "auto"
    allow_degraded: bool = False
    shard_size: int = 200
    cpus_per_shard: int = 1
    memory_mb_per_shard: int = 1024
    max_in_flight: int | None = None
    max_retries: int = 3


@dataclass
class RayRun:
    """A connection to the cluster and the nodes the driver accepted.

    Attributes:
        settings: The engine's settings.
        acceptance: Accepted and refused nodes.
        tests: Whether shards run unit tests.
        seen: Ids of the nodes probed so far (a node that joins later is probed once).
    """

    settings: RaySettings
    acceptance: Acceptance
    tests: bool
    seen: set[str] = field(default_factory=set)

    def close(self) -> None:
        """Disconnect from the cluster (and stop a Ray instance started here)."""
        import ray

        if ray.is_initialized():
            ray.shutdown()


def import_ray() -> Any:
    """Ray, or a clear error naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise RayEngineError(RAY_EXTRA_HINT) from exc
    return ray


def connect(settings: RaySettings, *, tests: bool) -> RayRun:
    """Connect to the cluster, probe every node and decide which get shards.

    Args:
        settings: The engine's settings.
        tests: Whether the shards run unit tests (only sandbox-capable nodes then).

    Returns:
        The run's connection and node decisions.

    Raises:
        RayEngineError: Without Ray, or when no node is accepted (the reasons listed).
    """
    ray = import_ray()
    init_args: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING",
                                 "include_dashboard": False}
    if settings.address == "local":
        import os

        cpus = os.cpu_count() or 1
        ray.init(num_cpus=cpus, resources={SANDBOX_RESOURCE: cpus}, **init_args)
    elif "://" in settings.address:  # Ray Client: the server's own settings stay
        ray.init(address=settings.address, log_to_driver=False)
    else:
        ray.init(address=settings.address, **init_args)
    run = RayRun(settings=settings, acceptance=Acceptance(), tests=tests)
    try:
        reports = probe_nodes(run.seen)
        run.acceptance = _decide(reports, settings, tests)
        if not run.acceptance.accepted:
            refused = "\n".join(f"  {node.label()}: {why}"
                                for node, why in run.acceptance.refused)
            raise RayEngineError("no node of the Ray cluster can take shards:\n"
                                 + (refused or "  the cluster has no alive node"))
    except BaseException:
        run.close()
        raise
    return run


def _decide(reports: Sequence[NodeReport], settings: RaySettings, tests: bool) -> Acceptance:
    return accept_nodes(reports, tests=tests, allow_degraded=settings.allow_degraded,
                        cpus_per_shard=settings.cpus_per_shard, expected=verdict_versions())


def probe_nodes(seen: set[str]) -> list[NodeReport]:
    """Probe every alive node not in ``seen`` (added to it): isolation and versions.

    Each probe is a Ray task pinned to its node that asks for no CPU, so a busy node
    answers too. A node that does not answer within :data:`PROBE_TIMEOUT_S` is reported
    as ``unavailable``.
    """
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0, max_retries=0)(node_report_here)
    pending = {}
    for node in ray.nodes():
        node_id = node["NodeID"]
        if not node.get("Alive") or node_id in seen:
            continue
        seen.add(node_id)
        resources = node.get("Resources", {})
        cpus, slots = float(resources.get("CPU", 0)), float(resources.get(SANDBOX_RESOURCE, 0))
        if cpus <= 0:  # a head node kept free of work: nothing to run there
            continue
        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        ref = probe.options(scheduling_strategy=strategy).remote(node_id, cpus, slots)
        pending[ref] = (node_id, node.get("NodeManagerHostname", "?"), cpus, slots)
    reports = []
    ready, late = ray.wait(list(pending), num_returns=len(pending), timeout=PROBE_TIMEOUT_S)
    for ref in ready:
        node_id, host, cpus, slots = pending[ref]
        try:
            reports.append(ray.get(ref))
        except ray.exceptions.RayError as exc:
            reports.append(NodeReport(node_id, host, "unavailable", f"probe failed: {exc}",
                                      {}, cpus, slots))
    for ref in late:
        node_id, host, cpus, slots = pending[ref]
        ray.cancel(ref, force=True)
        reports.append(NodeReport(node_id, host, "unavailable",
                                  f"no answer to the probe in {PROBE_TIMEOUT_S:g} s", {},
                                  cpus, slots))
    return reports


def _run_shard(shard: Shard, node: dict[str, str]) -> list[str]:
    """The Ray task: score the shard on this node; records as JSON (exact round trip)."""
    return [record.model_dump_json() for record in score_shard(shard, node)]


ProgressCallback = Callable[[str, int], None]
NodeCallback = Callable[[str], None]
ShardT = TypeVar("ShardT")
ResultT = TypeVar("ResultT")


def ray_run_shards(
    run: RayRun,
    shards: Sequence[ShardT],
    shard_function: Callable[[ShardT, dict[str, str]], ResultT],
    *,
    sandboxed: Sequence[bool],
    on_event: NodeCallback | None = None,
) -> Iterator[tuple[int, ResultT]]:
    """Run every shard on an accepted node; yield ``(index, result)`` as each finishes.

    The scheduling rule of every Ray path (scoring, evidence judging): each shard is a Ray
    task pinned to one accepted node (hard node affinity) with the shard's CPUs and memory,
    and -- when it runs untrusted code -- one unit of :data:`SANDBOX_RESOURCE`; at most
    ``max_in_flight`` are submitted (by default every accepted slot plus one waiting per
    node), to the least loaded node first. A shard lost with its node or worker is
    scheduled again, on another node when its own is gone, up to ``max_retries`` times;
    an exception raised by ``shard_function`` is a bug and stops the run with the shard
    named. Nodes that join are probed and used when accepted.

    Args:
        run: The connection from :func:`connect`.
        shards: The shards (each sent to its node as is).
        shard_function: What a node runs: ``shard_function(shard, node)`` where ``node``
            is ``{"id", "host", "mode"}`` of the node; a module-level function.
        sandboxed: Per shard, whether it runs untrusted code (then only on nodes with
            :data:`SANDBOX_RESOURCE`).
        on_event: Called with a line when a node is lost, refused or joins.

    Yields:
        ``(index, result)`` of each finished shard, in the order shards finish.

    Raises:
        RayEngineError: When every accepted node is gone, or a shard failed past its retries.
    """
    ray = import_ray()
    settings = run.settings
    remote = ray.remote(
        num_cpus=settings.cpus_per_shard,
        memory=settings.memory_mb_per_shard * 1024 * 1024,
        max_retries=settings.max_retries,
    )(shard_function)
    scheduler = _ShardScheduler(ray, run, shards, remote, sandboxed, on_event)
    last_refresh = time.monotonic()
    try:
        while scheduler.waiting or scheduler.in_flight:
            scheduler.fill()
            ready, _ = ray.wait(list(scheduler.in_flight), num_returns=1, timeout=REFRESH_S)
            if time.monotonic() - last_refresh >= REFRESH_S:
                last_refresh = time.monotonic()
                _take_new_nodes(run, scheduler.nodes, on_event)
            for ref in ready:
                done = scheduler.finished(ref)
                if done is not None:
                    yield done
    finally:
        scheduler.cancel()


class _ShardScheduler:
    """One :func:`ray_run_shards` call's shards: waiting, in flight, and the nodes' load.

    Args:
        ray: The imported ``ray`` module.
        run: The connection (its settings and accepted nodes).
        shards: The shards.
        remote: ``shard_function`` as a Ray remote function.
        sandboxed: Per shard, whether it runs untrusted code.
        on_event: Called with a line when a shard is lost.
    """

    def __init__(self, ray: Any, run: RayRun, shards: Sequence[Any], remote: Any,
                 sandboxed: Sequence[bool], on_event: NodeCallback | None) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ray, self._run, self._shards, self._remote = ray, run, shards, remote
        self._sandboxed, self._on_event = sandboxed, on_event
        self._affinity = NodeAffinitySchedulingStrategy
        self.waiting: deque[int] = deque(range(len(shards)))
        self.in_flight: dict[Any, tuple[int, NodeReport]] = {}
        self.nodes = {node.node_id: node for node in run.acceptance.accepted}
        self._load: Counter[str] = Counter()
        self._failures: Counter[int] = Counter()

    def _submit(self, index: int, node: NodeReport) -> None:
        resources = {SANDBOX_RESOURCE: 1} if self._sandboxed[index] else {}
        ref = self._remote.options(
            resources=resources,
            scheduling_strategy=self._affinity(node.node_id, soft=False),
        ).remote(self._shards[index], {"id": node.short_id, "host": node.host,
                                       "mode": node.mode})
        self.in_flight[ref] = (index, node)
        self._load[node.node_id] += 1

    def fill(self) -> None:
        """Submit waiting shards, least loaded node first, up to the in-flight limit.

        Raises:
            RayEngineError: When shards wait and no accepted node is alive to run them.
        """
        capacity = self._run.acceptance.capacity
        limit = self._run.settings.max_in_flight or sum(
            capacity[node_id] + 1 for node_id in self.nodes)
        while self.waiting and len(self.in_flight) < limit:
            node = _least_loaded(self.nodes, capacity, self._load)
            if node is None:
                break
            self._submit(self.waiting.popleft(), node)
        if not self.in_flight:
            raise RayEngineError(f"{len(self.waiting)} shard(s) left and no accepted node "
                                 "alive to run them")

    def finished(self, ref: Any) -> tuple[int, Any] | None:
        """``(index, result)`` of a finished shard; None when it was lost and waits again.

        Raises:
            RayEngineError: When the shard's own code failed, or it was lost past its retries.
        """
        ray = self._ray
        index, node = self.in_flight.pop(ref)
        self._load[node.node_id] -= 1
        try:
            return index, ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # prefjudge's own code failed
            raise RayEngineError(f"shard {index} failed on {node.label()}: {exc}") from exc
        except ray.exceptions.RayError as exc:  # node or worker lost
            self._lost(index, node, exc)
            return None

    def _lost(self, index: int, node: NodeReport, exc: Exception) -> None:
        """Schedule a lost shard again (first), dropping its node when that is gone."""
        ray, retries = self._ray, self._run.settings.max_retries
        self._failures[index] += 1
        gone = (ray.exceptions.TaskUnschedulableError, ray.exceptions.NodeDiedError)
        # Unschedulable with hard affinity: the node is gone, even while the
        # cluster still lists it as alive.
        if isinstance(exc, gone) or not _alive(node.node_id):
            self.nodes.pop(node.node_id, None)
        if self._on_event:
            self._on_event(f"shard {index} lost on {node.label()} ({type(exc).__name__}); "
                           f"scheduled again ({self._failures[index]} of {retries})")
        if self._failures[index] > retries:
            raise RayEngineError(f"shard {index} was lost {self._failures[index]} "
                                 f"times; last on {node.label()}: {exc}") from exc
        self.waiting.appendleft(index)

    def cancel(self) -> None:
        """Cancel every shard still in flight."""
        for ref in self.in_flight:
            self._ray.cancel(ref, force=True)


def ray_score_batches(
    run: RayRun,
    keys: Sequence[str],
    generations: Sequence[Generation],
    tasks: Mapping[str, Task],
    *,
    done: set[str] | frozenset[str] = frozenset(),
    limits: SandboxLimits | None = None,
    profile: str = "reference",
    zygote: bool | None = None,
    preload: Sequence[str] = (),
    on_progress: ProgressCallback | None = None,
    on_event: NodeCallback | None = None,
) -> Iterator[list[ScoredSample]]:
    """Score on the cluster, yielding each finished shard's records (the driver writes them).

    Args:
        run: The connection from :func:`connect`.
        keys: Journal key of each generation.
        generations: The run's validated generations, in file order.
        tasks: Tasks by id (empty: no unit tests).
        done: Keys already scored (skipped).
        limits: Sandbox limits per run.
        profile: Verification profile name.
        zygote: Fork runs from zygotes (None: each node's default).
        preload: Extra modules the zygotes import.
        on_progress: Called with ``(phase, n)`` as a shard finishes (``verify``, ``tests``).
        on_event: Called with a line when a node is lost, refused or joins.

    Yields:
        The records of each finished shard, in the order shards finish.

    Raises:
        RayEngineError: When every accepted node is gone, or a shard failed past its retries.
    """
    settings = run.settings
    todo = [(key, gen) for key, gen in zip(keys, generations, strict=True) if key not in done]
    # The whole run's preload, as a local run's zygotes import it: every shard has the same,
    # so a worker's kept zygotes serve them all (prefjudge.scale.kept_pool).
    run_preload = tuple(job_preload(todo, tasks if run.tests else {}, preload))
    shards = [_make_shard(index, todo[start:start + settings.shard_size], tasks, run.tests,
                          limits or SandboxLimits(), profile, settings, zygote, run_preload)
              for index, start in enumerate(range(0, len(todo), settings.shard_size))]
    tested = [shard.tested() for shard in shards]  # unit-test runs per shard
    for index, lines in ray_run_shards(run, shards, _run_shard,
                                       sandboxed=[count > 0 for count in tested],
                                       on_event=on_event):
        records = [ScoredSample.model_validate_json(line) for line in lines]
        if on_progress:
            on_progress("verify", len(shards[index].keys))
            if tested[index]:
                on_progress("tests", tested[index])
        yield records


def _make_shard(index: int, part: Sequence[tuple[str, Generation]], tasks: Mapping[str, Task],
                tests: bool, limits: SandboxLimits, profile: str, settings: RaySettings,
                zygote: bool | None, preload: Sequence[str]) -> Shard:
    needed = {gen.task_id: tasks[gen.task_id] for _, gen in part if gen.task_id in tasks}
    return Shard(index=index, keys=[key for key, _ in part],
                 generations=[gen for _, gen in part], tasks=needed, tests=tests,
                 limits=limits, profile=profile, workers=settings.cpus_per_shard,
                 zygote=zygote, preload=tuple(preload))


def _least_loaded(nodes: Mapping[str, NodeReport], capacity: Mapping[str, int],
                  load: Mapping[str, int]) -> NodeReport | None:
    """The accepted node with the most free share of its slots (one waiting shard allowed)."""
    best, best_share = None, None
    for node_id in sorted(nodes):
        slots = max(capacity[node_id], 1)
        if load.get(node_id, 0) >= slots + 1:
            continue
        share = load.get(node_id, 0) / slots
        if best_share is None or share < best_share:
            best, best_share = nodes[node_id], share
    return best


def _alive(node_id: str) -> bool:
    import ray

    return any(node["NodeID"] == node_id and node.get("Alive") for node in ray.nodes())


def _take_new_nodes(run: RayRun, nodes: dict[str, NodeReport],
                    on_event: NodeCallback | None) -> None:
    """Probe nodes that joined since the last look; use those accepted."""
    reports = probe_nodes(run.seen)
    if not reports:
        return
    decision = _decide(reports, run.settings, run.tests)
    for node in decision.accepted:
        nodes[node.node_id] = node
        run.acceptance.accepted.append(node)
        run.acceptance.capacity[node.node_id] = decision.capacity[node.node_id]
        if on_event:
            on_event(f"node joined: {node.label()}, {node.mode}")
    for node, why in decision.refused:
        run.acceptance.refused.append((node, why))
        if on_event:
            on_event(f"node refused: {node.label()}: {why}")
