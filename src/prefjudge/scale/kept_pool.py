"""One zygote pool per Ray worker process, kept across the shards it runs.

A local run starts its zygotes once (they import the tests' libraries: pandas, numpy,
matplotlib, scipy... about 2 core-seconds each) and forks every run of the job from them.
A Ray worker process runs many shards of one job in turn; starting a pool per shard would
pay those imports again for every shard. :func:`kept_pool` keeps the pool in the worker
process instead, so every shard after the first forks from zygotes that are already
warm. The pool replaces its zygotes on the same budget as a local run's
(:attr:`~prefjudge.sandbox.zygote.ZygotePool.max_runs` runs, or their memory growth),
counted across shards, and is closed when the worker process exits (its zygotes would
die with the process anyway).

The pool is keyed by what decides what its zygotes are: the isolation mode, the modules
they preload, and the run limits (the first zygote's scratch space is sized by them). A
shard with another key closes the kept pool and starts a new one: a worker keeps at most
one.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence

from prefjudge.sandbox import SandboxLimits, resolve_isolation
from prefjudge.sandbox.zygote import ZygotePool

_lock = threading.Lock()
_kept: dict[tuple[object, ...], ZygotePool] = {}


def kept_pool(preload: Sequence[str], limits: SandboxLimits) -> ZygotePool:
    """The worker's zygote pool for ``preload`` and ``limits``, started on first use.

    Args:
        preload: Every module the zygotes import (the whole run's, so that every shard of
            the run has the same key).
        limits: The runs' sandbox limits.

    Returns:
        The kept pool (the caller must not close it).
    """
    plan = resolve_isolation()
    key = (plan.mode, tuple(preload), limits)
    with _lock:
        pool = _kept.get(key)
        if pool is not None:
            return pool
        stale = list(_kept.values())
        _kept.clear()
        pool = _kept[key] = ZygotePool(plan, preload)
    for old in stale:
        old.close()
    return pool


def close_kept_pools() -> None:
    """Close the kept pool (at worker exit; also for tests)."""
    with _lock:
        pools = list(_kept.values())
        _kept.clear()
    for pool in pools:
        pool.close()


atexit.register(close_kept_pools)
