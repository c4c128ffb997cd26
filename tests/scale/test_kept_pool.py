"""A Ray worker's zygotes, kept across the shards it scores (real sandbox, no Ray needed)."""

from __future__ import annotations

import pytest

from prefjudge.records import Generation, Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation
from prefjudge.sandbox.zygote import zygote_default
from prefjudge.scale.kept_pool import close_kept_pools, kept_pool
from prefjudge.scale.shard import Shard, score_shard
from prefjudge.scoring.score import ScoreJob, score_batches

pytestmark = pytest.mark.slow


def _job(n: int) -> tuple[dict[str, Task], list[Generation]]:
    tasks, gens = {}, []
    for index in range(n):
        task = Task(
            task_id=f"K/{index}",
            entry_point="f",
            test_format="humaneval",
            prompt="def f(x):\n",
            tests=f"import json\n\n\ndef check(candidate):\n"
            f"    assert candidate({index}) == {index * index}\n",
        )
        tasks[task.task_id] = task
        body = "x * x" if index % 2 == 0 else "x + 1"
        gens.append(
            Generation(
                id=f"g{index}",
                task_id=task.task_id,
                model="m",
                response=f"```python\ndef f(x):\n    return {body}\n```",
            )
        )
    return tasks, gens


def test_shards_of_one_worker_fork_from_the_same_zygotes() -> None:
    if not zygote_default() or resolve_isolation().mode == "rlimits":
        pytest.skip("zygotes need a namespace sandbox mode and PREFJUDGE_SANDBOX_ZYGOTE on")
    tasks, gens = _job(4)
    preload = ("json",)
    limits = SandboxLimits()
    shards = [
        Shard(
            index=i,
            keys=[f"k{j}" for j in range(2 * i, 2 * i + 2)],
            generations=gens[2 * i : 2 * i + 2],
            tasks={g.task_id: tasks[g.task_id] for g in gens[2 * i : 2 * i + 2]},
            tests=True,
            limits=limits,
            preload=preload,
        )
        for i in range(2)
    ]
    close_kept_pools()
    try:
        first = score_shard(shards[0])
        pool = kept_pool(preload, limits)
        assert pool.stats.started == 1 and pool.fallback is None
        second = score_shard(shards[1])
        assert kept_pool(preload, limits) is pool  # the second shard found it warm
        assert pool.stats.started == 1, "the second shard started zygotes of its own"
        # The same records as one local job over both shards.
        job = ScoreJob(
            generations=list(enumerate(gens, start=1)),
            keys=[f"k{j}" for j in range(4)],
            tasks=tasks,
        )
        local = [
            r
            for batch in score_batches(
                job,
                workers=1,
                isolation=first[0].meta["sandbox"],
                separate_process=False,
                preload=preload,
            )
            for r in batch
        ]
        assert [r.model_dump() for r in first + second] == [r.model_dump() for r in local]
        assert [r.func.status for r in local] == ["pass", "fail", "pass", "fail"]
        # Another run's key replaces it (one pool per worker), closing the old one.
        other = kept_pool((), limits)
        assert other is not pool
    finally:
        close_kept_pools()
