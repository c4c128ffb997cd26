"""What every command that runs a stage shares: ``--force-new``, journals, outputs, backends."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from prefjudge.backends import Backend, BackendError, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.journal import JournalError, check_writable

F = TypeVar("F", bound=Callable[..., Any])


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
    try:
        check_writable(path)
    except JournalError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def open_backend(config: BackendConfig) -> Backend:
    """Create the backend or fail with a clear message."""
    try:
        return create_backend(config)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
