"""What every command that runs a stage shares: ``--force-new``, journals, outputs, backends.

Light to import (the journal and the backends load when a command runs), so that the
commands' ``--help`` pays for neither.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends import Backend
    from prefjudge.backends.config import BackendConfig
    from prefjudge.cli.reporter import ConsoleReporter

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def force_new_option(func: F) -> F:
    """Add ``--force-new``: start the output again instead of resuming it."""
    return click.option(
        "--force-new",
        is_flag=True,
        help="Start OUTPUT again instead of resuming it (the old file is kept as OUTPUT.bak). "
        "Needed when OUTPUT was made from other inputs or settings.",
    )(func)


def check_output(path: str | os.PathLike[str] | None, hint: str) -> None:
    """Fail now, before any work, when an output file could not be written at the end.

    Creates the file's folder. Use it for files a command writes once it is done
    (summaries, plots, a single verdict); journals check their own output.

    Args:
        path: The file, or None when the option was not given.
        hint: The option that named it (``-o/--output``), for the message.

    Raises:
        click.BadParameter: When the folder cannot be created or the file not written.
    """
    if path is None:
        return
    from prefjudge.journal import JournalError, check_writable

    try:
        check_writable(path)
    except JournalError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def open_backend(config: BackendConfig) -> Backend:
    """Create the backend or fail with a clear message."""
    from prefjudge.backends import BackendError, create_backend

    try:
        return create_backend(config)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc


def check_result_files(output: Path | None, json_path: Path | None, plot_path: Path | None) -> bool:
    """Check ``-o``, ``--json`` and ``--plot`` before any work (``rank``, ``correlate``).

    Args:
        output: ``-o/--output`` (a CSV), or None.
        json_path: ``--json``, or None.
        plot_path: ``--plot`` (a PNG), or None.

    Returns:
        Whether one of them is stdout: the tables then print on stderr.

    Raises:
        click.UsageError: When both ``-o`` and ``--json`` are ``-``.
        click.BadParameter: When a file could not be written.
    """
    from prefjudge.cli.streams import is_stdout, one_stdout

    piped = one_stdout(**{"-o/--output": output, "--json": json_path})
    for path, hint in ((output, "-o/--output"), (json_path, "--json"), (plot_path, "--plot")):
        if not is_stdout(path):
            check_output(path, hint)
    return piped


def run_ranking_stage(stage: Callable[..., R], settings: Any, console: Any) -> R:
    """Run a ranking stage (``rank_file``, ``correlate_file``); its errors become click's.

    Args:
        stage: The stage function, called with the settings and a console reporter.
        settings: Its settings.
        console: The stderr console its notes and progress go to.

    Returns:
        The stage's outcome.

    Raises:
        click.UsageError: For a ``SettingsError`` (naming the option when it names one).
        click.ClickException: For any other stage error.
    """
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.ranking.run import SettingsError
    from prefjudge.reporting import StageError

    try:
        return stage(settings, ConsoleReporter(console))
    except SettingsError as exc:
        raise settings_usage_error(exc) from None
    except StageError as exc:
        raise click.ClickException(str(exc)) from None


def settings_usage_error(exc: Any) -> click.UsageError:
    """The usage error for a ranking ``SettingsError``, naming its option when it has one."""
    if exc.option:
        return click.BadParameter(str(exc), param_hint=exc.option)
    return click.UsageError(str(exc))


def stderr_reporter() -> tuple[Console, ConsoleReporter]:
    """A console on stderr for notes, and the reporter that writes to it (loaded with rich)."""
    from rich.console import Console

    from prefjudge.cli.reporter import ConsoleReporter

    console = Console(stderr=True)
    return console, ConsoleReporter(console)
