"""``--engine local|ray`` and the Ray engine's options (``score`` and ``run``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from prefjudge.scale.ray_engine import RaySettings
from prefjudge.scale.score_engine import RayEngine

ENGINES = ("local", "ray")


def engine_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--engine``, ``--address``, ``--allow-degraded`` and the shard options."""
    defaults = RaySettings()
    options = [
        click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                     help="Where to score: this machine, or a Ray cluster (pip install "
                          "'prefjudge[ray]'); same records either way."),
        click.option("--address", default=defaults.address, show_default=True,
                     help="Ray cluster (--engine ray): 'auto' (the cluster this machine "
                          "belongs to), ray://HOST:PORT, HOST:PORT of the head node, or "
                          "'local' (start Ray here)."),
        click.option("--allow-degraded", is_flag=True,
                     help="--engine ray: accept nodes that only sandbox in the rlimits "
                          "fallback (no network or filesystem isolation)."),
        click.option("--shard-size", type=click.IntRange(min=1), default=defaults.shard_size,
                     show_default=True, help="--engine ray: generations per Ray task."),
        click.option("--shard-cpus", type=click.IntRange(min=1),
                     default=defaults.cpus_per_shard, show_default=True,
                     help="--engine ray: CPUs (and parallel sandboxes) per shard."),
        click.option("--max-in-flight", type=click.IntRange(min=1), default=None,
                     help="--engine ray: most shards submitted at once "
                          "[default: every accepted slot plus one waiting per node]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def ray_settings(address: str, allow_degraded: bool, shard_size: int, shard_cpus: int,
                 max_in_flight: int | None) -> RaySettings:
    """The Ray engine's settings from the command's options."""
    return RaySettings(address=address, allow_degraded=allow_degraded, shard_size=shard_size,
                       cpus_per_shard=shard_cpus, max_in_flight=max_in_flight)


def scoring_engine(engine: str, address: str, allow_degraded: bool, shard_size: int,
                   shard_cpus: int, max_in_flight: int | None) -> RayEngine | None:
    """The engine ``score_file`` runs on: None for this machine, else the Ray engine."""
    if engine == "local":
        return None
    return RayEngine(ray_settings(address, allow_degraded, shard_size, shard_cpus,
                                  max_in_flight))
