"""What a node can do for a scoring run, and which nodes the driver accepts.

Every node of the cluster reports, before any shard is scheduled, its sandbox isolation
mode and the versions of what decides verdicts (Ruff, prefjudge, the test harness,
Python). The driver compares them with its own: a node whose verdicts could differ is
refused, and a node that can only sandbox in the ``rlimits`` fallback (no network or
filesystem isolation) is refused unless the user allows degraded isolation.
"""

from __future__ import annotations

import platform
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prefjudge import __version__

SANDBOX_RESOURCE = "prefjudge_sandbox"
"""The Ray custom resource that marks nodes allowed to run model-written code.

Start such nodes with ``ray start --resources '{"prefjudge_sandbox": N}'`` (N: the
shards it may run at once, usually its CPU count). A node without it gets no shard that
runs unit tests.
"""

DEGRADED_MODES = frozenset({"rlimits"})


@dataclass(frozen=True)
class NodeReport:
    """One node's answer to the driver's probe.

    Attributes:
        node_id: Ray's node id (hex).
        host: The node's host name.
        mode: Sandbox isolation mode there (``namespaces``, ``userns`` or ``rlimits``),
            or ``unavailable`` when no sandbox can start there.
        reason: Why that mode (or why none).
        versions: What decides verdicts: ``ruff``, ``prefjudge``, ``harness``, ``python``.
        cpus: The node's CPUs (Ray's ``CPU`` resource).
        sandbox_slots: Its units of :data:`SANDBOX_RESOURCE` (0: may not sandbox).
    """

    node_id: str
    host: str
    mode: str
    reason: str
    versions: Mapping[str, str]
    cpus: float = 0.0
    sandbox_slots: float = 0.0

    @property
    def short_id(self) -> str:
        """The first 12 hex digits of the node id (what records carry)."""
        return self.node_id[:12]

    def label(self) -> str:
        """``host (id)`` for messages."""
        return f"{self.host} ({self.short_id})"


@dataclass
class Acceptance:
    """The driver's decision about the cluster's nodes.

    Attributes:
        accepted: Nodes that get shards.
        refused: ``(node, why)`` for the others.
        capacity: Shards each accepted node runs at once, by node id.
    """

    accepted: list[NodeReport] = field(default_factory=list)
    refused: list[tuple[NodeReport, str]] = field(default_factory=list)
    capacity: dict[str, int] = field(default_factory=dict)

    def modes(self) -> str:
        """The isolation modes of the accepted nodes, sorted and joined with ``+``."""
        return "+".join(sorted({node.mode for node in self.accepted}))


def verdict_versions() -> dict[str, str]:
    """The versions of what decides verdicts, on this machine."""
    from prefjudge.sandbox import harness_digest
    from prefjudge.scoring.verify import ruff_version

    return {"ruff": ruff_version(), "prefjudge": __version__, "harness": harness_digest(),
            "python": ".".join(platform.python_version_tuple()[:2])}


def node_report_here(node_id: str, cpus: float = 0.0, sandbox_slots: float = 0.0) -> NodeReport:
    """Probe this machine: its isolation mode and verdict versions.

    Runs on each node (inside a Ray task) and also serves the local engine's tests.

    Args:
        node_id: Ray's id of this node.
        cpus: Its CPUs, as the cluster lists them.
        sandbox_slots: Its units of :data:`SANDBOX_RESOURCE`.

    Returns:
        The report; ``mode`` is ``unavailable`` when no sandbox can start here.
    """
    from prefjudge.sandbox import SandboxUnavailableError, isolation_report

    try:
        report = isolation_report()
        mode, reason = str(report["mode"]), str(report["reason"])
    except SandboxUnavailableError as exc:
        mode, reason = "unavailable", str(exc)
    return NodeReport(node_id=node_id, host=socket.gethostname(), mode=mode, reason=reason,
                      versions=verdict_versions(), cpus=cpus, sandbox_slots=sandbox_slots)


def accept_nodes(
    reports: Iterable[NodeReport],
    *,
    tests: bool,
    allow_degraded: bool,
    cpus_per_shard: int,
    expected: Mapping[str, str],
) -> Acceptance:
    """Decide which nodes get shards and how many at once.

    A node is refused when its verdict versions differ from ``expected`` (the driver's),
    when it has fewer CPUs than one shard asks for, and -- for runs with unit tests --
    when it lacks :data:`SANDBOX_RESOURCE`, has no working sandbox, or can only isolate
    in a degraded mode and ``allow_degraded`` is False.

    Args:
        reports: Every node's report.
        tests: Whether the shards run unit tests (untrusted code).
        allow_degraded: Accept nodes in the ``rlimits`` fallback.
        cpus_per_shard: CPUs one shard asks for.
        expected: The driver's :func:`verdict_versions`.

    Returns:
        The accepted nodes with their capacity, and the refused ones with the reason.
    """
    decision = Acceptance()
    for node in sorted(reports, key=lambda report: report.node_id):
        why = _refusal(node, tests=tests, allow_degraded=allow_degraded,
                       cpus_per_shard=cpus_per_shard, expected=expected)
        if why:
            decision.refused.append((node, why))
            continue
        slots = int(node.cpus // cpus_per_shard)
        if tests:
            slots = min(slots, int(node.sandbox_slots))
        decision.accepted.append(node)
        decision.capacity[node.node_id] = slots
    return decision


def _refusal(node: NodeReport, *, tests: bool, allow_degraded: bool, cpus_per_shard: int,
             expected: Mapping[str, str]) -> str | None:
    differing = [f"{name} {node.versions.get(name)!s} (driver: {value})"
                 for name, value in expected.items() if node.versions.get(name) != value]
    if differing:
        return "different verdict versions: " + ", ".join(differing)
    if node.cpus < cpus_per_shard:
        return f"{node.cpus:g} CPUs, fewer than one shard's {cpus_per_shard}"
    if not tests:
        return None
    if node.sandbox_slots < 1:
        return f"no {SANDBOX_RESOURCE} resource (not marked as able to run untrusted code)"
    if node.mode == "unavailable":
        return f"no sandbox: {node.reason}"
    if node.mode in DEGRADED_MODES and not allow_degraded:
        return (f"sandbox only in the {node.mode} fallback (no network or filesystem "
                f"isolation: {node.reason}); --allow-degraded accepts it")
    return None
