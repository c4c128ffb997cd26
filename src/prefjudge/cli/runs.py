"""What every resumable command shares: ``--force-new``, opening journals, backend identity."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from prefjudge.backends import Backend, Sampling
from prefjudge.journal import Journal, JournalError, check_writable

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


def open_journal(journal: Journal[Any], console: Console) -> Journal[Any]:
    """Open a journal for a command: errors become usage messages, notes are printed.

    Args:
        journal: The journal to open.
        console: Where notes go.

    Returns:
        The open journal (close it, or use it in a ``with`` block).

    Raises:
        click.ClickException: When the journal cannot be opened (the message says why).
    """
    try:
        journal.open()
    except JournalError as exc:
        raise click.ClickException(str(exc)) from exc
    for note in journal.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
    return journal


def model_settings(backend: Backend, sampling: Sampling) -> dict[str, Any]:
    """The settings a model stage's output depends on: who answers, and how it samples.

    Args:
        backend: The backend (its identity covers kind, model, endpoint and output options).
        sampling: The stage's sampling parameters.

    Returns:
        ``{"model": identity, "sampling": ...}`` for a journal's settings.
    """
    return {"model": backend.identity(), "sampling": sampling.model_dump(mode="json")}


def content_digest(path: str | os.PathLike[str]) -> str:
    """A short SHA-256 of a file, or of every file under a folder (names and contents).

    Used to bind outputs to the prompt templates and rubrics that shaped them.

    Args:
        path: A file or a folder.

    Returns:
        16 hex digits.
    """
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        digest.update(str(file.relative_to(root) if root.is_dir() else file.name).encode())
        digest.update(b"\0")
        digest.update(file.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
