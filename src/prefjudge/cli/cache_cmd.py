"""``prefjudge cache``: where the response cache is, what it holds, and clearing it."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import CONFIG_NAME
from prefjudge.cli.options import format_option, old_json_switch
from prefjudge.reporting import TextTable, display_name

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends.cache import CacheStats

_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help=f"Configuration file [default: ./{CONFIG_NAME} when present].",
)
_cache_option = click.option(
    "--cache",
    "cache_file",
    type=click.Path(dir_okay=False),
    help="Response cache file [default: $PREFJUDGE_CACHE, else "
    "~/.cache/prefjudge/responses.sqlite].",
)


_experiment_option = click.option(
    "--experiment",
    "experiment_file",
    type=click.Path(exists=True, dir_okay=False),
    help="An experiment TOML: the cache `prefjudge run` uses for it "
    "(results/<experiment>/cache.sqlite) instead of the commands' cache.",
)


def experiment_cache(experiment_file: str) -> Path:
    """Return the response cache ``prefjudge run EXPERIMENT`` uses.

    Read from the experiment's plan (the cache its stages' backends are given), so it is
    where ``run`` puts it, wherever that is.

    Args:
        experiment_file: The experiment TOML.

    Raises:
        click.ClickException: When the experiment file is not valid, or runs no model.
    """
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan
    from prefjudge.io import InputError

    try:
        experiment, base = load_experiment(experiment_file)
        _, stages = build_plan(experiment, base, 0)
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    caches = sorted({s.backend.cache_path() for s in stages if s.backend is not None})
    if not caches:
        raise click.ClickException(f"{experiment_file}: the experiment asks no model (no cache)")
    return caches[0]


def cache_path(
    config_file: str | None, cache_file: str | None, experiment_file: str | None = None
) -> Path:
    """Return the cache file the other commands would use with the same settings.

    ``--cache``, else the experiment's (``--experiment``), else ``cache`` in
    ``prefjudge.toml`` (relative to that file), else ``$PREFJUDGE_CACHE``, else
    ``~/.cache/prefjudge/responses.sqlite``.

    Args:
        config_file: ``--config``.
        cache_file: ``--cache``.
        experiment_file: ``--experiment``.
    """
    from prefjudge.backends.config import ConfigError, load_backend_config

    if experiment_file and not cache_file:
        return experiment_cache(experiment_file)
    try:
        config = load_backend_config(config_file, overrides={"cache": cache_file})
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    return config.cache_path()


@main.group("cache")
def cache_group() -> None:
    """Show and clear the response cache (valid model replies, keyed by request)."""


@cache_group.command("info")
@_config_option
@_cache_option
@_experiment_option
@old_json_switch
@format_option
def info(
    config_file: str | None,
    cache_file: str | None,
    experiment_file: str | None,
    output_format: str,
) -> None:
    """Print where the cache is, its size, and its entries by backend and model.

    Model identities too long for the terminal are cut in the middle in the table (with
    …); --format json gives them whole. `prefjudge run` keeps each experiment's cache in its
    results folder: --experiment FILE shows that one.
    """
    from rich.console import Console
    from rich.markup import escape

    from prefjudge.backends.cache import CacheError, ResponseCache
    from prefjudge.cli.display import PipeConsole
    from prefjudge.io import dumps_json

    path = cache_path(config_file, cache_file, experiment_file)
    stats: CacheStats | None = None
    if path.is_file():
        try:
            with ResponseCache(path) as cache:
                stats = cache.stats()
        except CacheError as exc:
            raise click.ClickException(str(exc)) from exc
    if stats is not None and stats.damaged_entries:
        _warn_damaged(Console(stderr=True), stats)
    if output_format == "json":
        found = {"path": str(path), "exists": False} if stats is None else stats.as_dict()
        found["exists"] = stats is not None
        click.echo(dumps_json(found, indent=2))
        return
    console = PipeConsole()
    if stats is None:
        console.print(f"cache: {escape(str(path))} (no file yet)", soft_wrap=True)
        return
    _print_stats(console, stats)


def _warn_damaged(console: Console, stats: CacheStats) -> None:
    """Say on stderr how many rows are damaged, and name the first ones."""
    from rich.markup import escape

    n = stats.damaged_entries
    console.print(
        f"[yellow]warning:[/yellow] {_entries(n)} of {escape(str(stats.path))} "
        f"{'is' if n == 1 else 'are'} damaged (not what prefjudge writes): never read, "
        "in no group (`prefjudge cache clear --damaged` removes them)",
        soft_wrap=True,
        highlight=False,
    )
    for row in stats.damaged:
        key = "no key" if row.key is None else f"key {display_name(row.key)!r}"
        console.print(f"  row {row.row} ({escape(key)}): {row.problem}", highlight=False)
    if n > len(stats.damaged):
        console.print(f"  ... and {n - len(stats.damaged):,} more", highlight=False)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    try:
        return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):  # a damaged row's time
        return "?"


def _print_stats(console: Console, stats: CacheStats) -> None:
    from rich.markup import escape

    from prefjudge.cli.display import rich_table, shown_cells

    console.print(f"cache: {escape(str(stats.path))}", soft_wrap=True)  # a path stays whole
    damaged = f", {stats.damaged_entries:,} damaged" if stats.damaged_entries else ""
    console.print(f"size: {stats.size_bytes / 1e6:,.2f} MB, {stats.entries:,} entries{damaged}")
    if stats.groups:
        # names cut in the middle to fit the terminal, one line per group (the one table
        # drawing of the commands); --format json has them whole
        rows = [
            [
                group.backend or "?",
                group.model,
                group.endpoint or "?",
                f"{group.entries:,}",
                _when(group.newest),
            ]
            for group in stats.groups
        ]
        columns = ("backend", "model", "endpoint", "entries", "last stored")
        text = TextTable("", columns, rows, right=frozenset({"entries"}))
        console.print(rich_table(text, console.width))
        if shown_cells(text, console.width) != rows:
            console.print("(long names are cut in the middle: --format json shows them whole)")
    if stats.old_format_entries:
        console.print(
            f"{stats.old_format_entries:,} entries of an older cache format are never read "
            "(`prefjudge cache clear --old-format` removes them)"
        )


@cache_group.command("clear")
@_config_option
@_cache_option
@_experiment_option
@click.option(
    "--model", "model", metavar="NAME", help="Only this model (as `cache info` lists it)."
)
@click.option(
    "--older-than",
    "older_than",
    type=click.FloatRange(min=0),
    metavar="DAYS",
    help="Only entries stored more than DAYS days ago.",
)
@click.option("--old-format", is_flag=True, help="Only entries of an older cache format.")
@click.option(
    "--damaged",
    is_flag=True,
    help="Only damaged entries: rows that are not what prefjudge writes (`cache info` names them).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def clear(
    config_file: str | None,
    cache_file: str | None,
    experiment_file: str | None,
    model: str | None,
    older_than: float | None,
    old_format: bool,
    damaged: bool,
    yes: bool,
) -> None:
    """Delete cache entries (all, or those matching every filter given), then compact."""
    from prefjudge.backends.cache import CacheError

    path = cache_path(config_file, cache_file, experiment_file)
    if not path.is_file():
        click.echo(f"removed 0 entries: {path} does not exist")
        return
    filters = {
        "model": model,
        "older_than_days": older_than,
        "old_format": old_format,
        "damaged": damaged,
    }
    try:
        _clear(path, filters, yes)
    except CacheError as exc:
        raise click.ClickException(str(exc)) from exc


def _clear(path: Path, filters: dict, yes: bool) -> None:
    from prefjudge.backends.cache import ResponseCache

    with ResponseCache(path) as cache:
        matching, total = cache.count(**filters), len(cache)
        if matching == 0:
            click.echo(f"removed 0 entries from {path} (none matched)")
            return
        if not yes:
            click.confirm(
                f"Delete {matching:,} of {total:,} entries from {path}?", abort=True, err=True
            )
        removed = cache.clear(**filters)
        cache.vacuum()
        size = cache.size_bytes()
    click.echo(
        f"removed {_entries(removed)} from {path} ({total - removed:,} left, {size:,} bytes)"
    )


def _entries(n: int) -> str:
    return f"{n:,} entr{'y' if n == 1 else 'ies'}"
