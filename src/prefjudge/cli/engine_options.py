"""``--engine local|ray`` and the Ray engine's options (``score`` and ``run``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.scale.ray_engine import RayRun, RaySettings

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


def engine_args(engine: str, address: str, allow_degraded: bool, shard_size: int,
                shard_cpus: int, max_in_flight: int | None) -> list[str]:
    """The same options as arguments for a stage's command line (``run``)."""
    if engine == "local":
        return []
    args = ["--engine", engine, "--address", address, "--shard-size", str(shard_size),
            "--shard-cpus", str(shard_cpus)]
    if allow_degraded:
        args.append("--allow-degraded")
    if max_in_flight is not None:
        args += ["--max-in-flight", str(max_in_flight)]
    return args


def print_nodes(run: RayRun, console: Console) -> None:
    """The cluster's nodes: accepted (with their mode and shard slots) and refused (why)."""
    table = Table(title="Ray nodes", title_justify="left")
    for column in ("node", "host", "sandbox", "shards at once", "status"):
        table.add_column(column)
    for node in run.acceptance.accepted:
        table.add_row(node.short_id, escape(node.host), node.mode,
                      str(run.acceptance.capacity[node.node_id]), "[green]accepted[/]")
    for node, _ in run.acceptance.refused:
        table.add_row(node.short_id, escape(node.host), node.mode, "0", "[red]refused[/]")
    console.print(table)
    for node, why in run.acceptance.refused:  # whole, not wrapped in a narrow column
        console.print(f"[red]refused {escape(node.label())}: {escape(why)}[/]")
