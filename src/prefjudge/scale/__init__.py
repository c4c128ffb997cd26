"""Scale-out: score a study, and find its evidence facts, on a Ray cluster, as locally.

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
- :mod:`prefjudge.scale.kept_pool` -- a worker's zygotes, kept from one shard to the next.
- :mod:`prefjudge.scale.ray_engine` -- connecting to Ray and the driver's loop (one
  scheduling rule for every kind of shard).
- :mod:`prefjudge.scale.score_engine` -- the engine of ``score_file``.
- :mod:`prefjudge.scale.judge_shard` and :mod:`prefjudge.scale.judge_engine` -- evidence
  judging: a shard of whole pairs' facts found on a node, verdicts made and journaled by
  the driver (``judge``/``judge-eval``/``run --engine ray``).

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
