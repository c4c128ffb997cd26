"""Scale-out: score a study on a Ray cluster with the same records as a local run.

The unit of work is a *shard*: a few hundred generations that one Ray task scores with the
existing local scoring (:func:`prefjudge.scoring.score.score_batches`: Ruff batching and
the sandbox stay inside the shard). The driver is the only writer: it skips finished keys,
keeps a bounded number of shards in flight, pins each shard to a node it accepted (its
sandbox isolation probed first) and appends finished shards through the run's journal, so
a killed driver resumes and a lost node costs only its shards, which are scheduled again
on another node.

Modules:

- :mod:`prefjudge.scale.nodes` -- what each node reports (isolation, tool versions) and
  which nodes are accepted.
- :mod:`prefjudge.scale.shard` -- scoring one shard (runs on a node; plain Python).
- :mod:`prefjudge.scale.ray_engine` -- connecting to Ray and the driver's loop.

Ray is an optional extra (``pip install 'prefjudge[ray]'``); nothing here imports it at
module level.
"""

from prefjudge.scale.nodes import SANDBOX_RESOURCE, NodeReport, accept_nodes, node_report_here
from prefjudge.scale.shard import Shard, score_shard

__all__ = [
    "SANDBOX_RESOURCE",
    "NodeReport",
    "Shard",
    "accept_nodes",
    "node_report_here",
    "score_shard",
]
