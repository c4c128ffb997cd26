"""A real two-node Ray cluster on this machine, started and stopped by the tests.

Ray is the ``prefjudge[ray]`` extra: without it these tests skip with the reason, unless
``PREFJUDGE_REQUIRE_RAY=1`` (CI), where a missing Ray fails them instead.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

OBJECT_STORE = 80 * 1024 * 1024
"""Each node's object store: small, the machine has 2 cores and other tests beside."""


def require_ray() -> None:
    """Skip (or, with ``PREFJUDGE_REQUIRE_RAY=1``, fail) when Ray is not installed."""
    if importlib.util.find_spec("ray") is not None:
        return
    reason = "Ray is not installed (pip install 'prefjudge[ray]')"
    if os.environ.get("PREFJUDGE_REQUIRE_RAY") == "1":
        pytest.fail(f"PREFJUDGE_REQUIRE_RAY=1 but {reason}")
    pytest.skip(reason)


class LocalCluster:
    """``ray.cluster_utils.Cluster``: a head with no CPU (the driver's) and worker nodes."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "object_store_memory": OBJECT_STORE, "include_dashboard": False})
        self.nodes: dict[str, Any] = {}

    @property
    def address(self) -> str:
        """The head's address, for ``--address``."""
        return self.cluster.address

    def add(self, name: str, *, sandbox: bool = True, cpus: int = 1,
            env: dict[str, str] | None = None) -> str:
        """Start a worker node; returns its Ray node id."""
        resources = {"prefjudge_sandbox": cpus} if sandbox else {}
        node = self.cluster.add_node(num_cpus=cpus, resources=resources,
                                     object_store_memory=OBJECT_STORE, env_vars=env or {})
        self.cluster.wait_for_nodes()
        self.nodes[name] = node
        return node.node_id

    def remove(self, name: str) -> None:
        """Stop a worker node as a lost machine would go: at once, its work unfinished."""
        self.cluster.remove_node(self.nodes.pop(name), allow_graceful=False)

    def shutdown(self) -> None:
        """Stop every node."""
        self.cluster.shutdown()


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[LocalCluster]:
    """Two sandbox nodes of one CPU each ("a", "b"), for the whole package."""
    require_ray()
    cluster = LocalCluster()
    try:
        cluster.add("a")
        cluster.add("b")
        yield cluster
    finally:
        cluster.shutdown()
