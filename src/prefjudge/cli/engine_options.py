"""``--engine local|ray`` and the Ray engine's options (score, judge, judge-eval, run).

``score`` scores its shards on the cluster; ``judge`` and ``judge-eval`` find the evidence
facts of ``--method evidence|hybrid`` there (``hybrid``'s fallback model is asked on this
machine); ``run`` does both for its stages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli.defaults import JUDGE_SHARD_SIZE, RAY_DEFAULTS
from prefjudge.cli.options import apply_options

if TYPE_CHECKING:
    from prefjudge.scale.judge_engine import RayJudgeEngine
    from prefjudge.scale.ray_engine import RaySettings
    from prefjudge.scale.score_engine import RayEngine

ENGINES = ("local", "ray")


def engine_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--engine``, ``--address``, ``--allow-degraded`` and the shard options."""
    options = [
        click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                     help="Where to score, and to find the facts of --method evidence|hybrid: "
                          "this machine, or a Ray cluster (pip install 'prefjudge[ray]'); "
                          "same records and verdicts either way."),
        click.option("--address", default=RAY_DEFAULTS["address"], show_default=True,
                     help="Ray cluster (--engine ray): 'auto' (the cluster this machine "
                          "belongs to), ray://HOST:PORT, HOST:PORT of the head node, or "
                          "'local' (start Ray here)."),
        click.option("--allow-degraded", is_flag=True,
                     help="--engine ray: accept nodes that only sandbox in the rlimits "
                          "fallback (no network or filesystem isolation)."),
        click.option("--shard-size", type=click.IntRange(min=1), default=None,
                     help="--engine ray: generations per Ray task when scoring "
                          f"[default: {RAY_DEFAULTS['shard_size']}], pairs per Ray task when "
                          f"judging [default: {JUDGE_SHARD_SIZE}]."),
        click.option("--shard-cpus", type=click.IntRange(min=1),
                     default=RAY_DEFAULTS["cpus_per_shard"], show_default=True,
                     help="--engine ray: CPUs (and parallel sandboxes) per shard."),
        click.option("--max-in-flight", type=click.IntRange(min=1), default=None,
                     help="--engine ray: most shards submitted at once "
                          "[default: every accepted slot plus one waiting per node]."),
    ]
    return apply_options(command, options)


def ray_settings(address: str, allow_degraded: bool, shard_size: int | None, shard_cpus: int,
                 max_in_flight: int | None) -> RaySettings:
    """The Ray engine's settings from the command's options (``shard_size``: generations)."""
    from prefjudge.scale.ray_engine import RaySettings

    return RaySettings(address=address, allow_degraded=allow_degraded,
                       shard_size=shard_size or RaySettings().shard_size,
                       cpus_per_shard=shard_cpus, max_in_flight=max_in_flight)


def judging_engine(engine: str, address: str, allow_degraded: bool, shard_size: int | None,
                   shard_cpus: int, max_in_flight: int | None) -> RayJudgeEngine | None:
    """Where evidence facts are found: None for this machine, else the Ray engine."""
    if engine == "local":
        return None
    from prefjudge.scale.judge_engine import RayJudgeEngine  # the judge: only when asked
    from prefjudge.scale.ray_engine import JUDGE_SHARD_SIZE

    return RayJudgeEngine(ray_settings(address, allow_degraded, None, shard_cpus,
                                       max_in_flight),
                          shard_size=shard_size or JUDGE_SHARD_SIZE)


def scoring_engine(engine: str, address: str, allow_degraded: bool, shard_size: int | None,
                   shard_cpus: int, max_in_flight: int | None) -> RayEngine | None:
    """The engine ``score_file`` runs on: None for this machine, else the Ray engine."""
    if engine == "local":
        return None
    from prefjudge.scale.score_engine import RayEngine

    return RayEngine(ray_settings(address, allow_degraded, shard_size, shard_cpus,
                                  max_in_flight))


def check_judging_engine(engine: str, methods: tuple[str, ...], fallback: str) -> None:
    """Refuse ``--engine ray`` when no method finds evidence facts (nothing would run there).

    Raises:
        click.UsageError: Naming the methods, when none of them is ``evidence``/``hybrid``.
    """
    from prefjudge.judge.run import uses_evidence_facts

    if engine == "local" or any(uses_evidence_facts(m, fallback) for m in methods):
        return
    raise click.UsageError(
        f"--engine ray finds the evidence facts of --method evidence|hybrid on a Ray "
        f"cluster; --method {', '.join(methods)} has none (its work is model calls, made "
        "from this machine): drop --engine ray", ctx=None)
