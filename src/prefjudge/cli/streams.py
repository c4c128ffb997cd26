"""``-`` on the command line: stdin for an input file, stdout for a single output file.

An input argument typed :class:`InputFile` reads ``-`` as stdin: the stream is copied to
a temporary file for the command's run (the stages read files: formats are sniffed, files
are read twice, journals fingerprint their inputs), removed when the command ends.

An output option typed :class:`OutputFile` either accepts ``-`` as stdout (a single
output file a person may pipe on) or refuses it with the reason (a resumable journal, a
folder, a prefix of several files, a picture): never a file named ``-``. ``./-`` still
names such a file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

DASH = "-"
_SPOOLED: set[str] = set()


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether an output value means stdout (``-``)."""
    return path is not None and os.fspath(path) == DASH


def shown(path: str | os.PathLike[str]) -> str:
    """How to name an input in messages and summaries: ``-`` for stdin, else the path."""
    return DASH if os.fspath(path) in _SPOOLED else os.fspath(path)


def is_stdin(path: str | os.PathLike[str]) -> bool:
    """Whether an input file is stdin copied by :class:`InputFile`."""
    return os.fspath(path) in _SPOOLED


def spool_stdin(ctx: click.Context) -> Path:
    """Copy stdin to a temporary file that lives as long as the command's context.

    Args:
        ctx: The command's context (the file is removed when it closes).

    Returns:
        The temporary file, named ``stdin``.

    Raises:
        click.UsageError: When stdin is a terminal (nothing is piped in).
    """
    stream = sys.stdin.buffer
    if stream.isatty():
        raise click.UsageError("'-' reads stdin, but nothing is piped in (stdin is a terminal)")
    folder = ctx.with_resource(tempfile.TemporaryDirectory(prefix="prefjudge-stdin-"))
    path = Path(folder) / "stdin"
    with path.open("wb") as handle:
        shutil.copyfileobj(stream, handle)
    _SPOOLED.add(os.fspath(path))
    ctx.call_on_close(lambda: _SPOOLED.discard(os.fspath(path)))
    return path


class InputFile(click.Path):
    """An existing file, or ``-`` for stdin (see the module docstring); converts to a Path."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Spool ``-`` from stdin; check any other value as an existing file."""
        if os.fspath(value) == DASH and ctx is not None and not ctx.resilient_parsing:
            return spool_stdin(ctx)
        return super().convert(value, param, ctx)


class OutputFile(click.Path):
    """An output path: ``-`` is stdout where allowed, else refused with the reason.

    Args:
        stdout_ok: Whether ``-`` means stdout.
        why: Why ``-`` cannot be used (when not ``stdout_ok``).
        folder: The output is a folder, not a file.
    """

    def __init__(self, *, stdout_ok: bool = False, why: str = "", folder: bool = False) -> None:
        super().__init__(dir_okay=folder, file_okay=not folder, path_type=Path)
        self.stdout_ok = stdout_ok
        self.why = why or ("it names a folder" if folder else "it is not a single file")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return ``Path('-')`` for stdout when allowed; refuse ``-`` otherwise."""
        if os.fspath(value) == DASH:
            if self.stdout_ok:
                return Path(DASH)
            self.fail(f"'-' (stdout) cannot be used here: {self.why}", param, ctx)
        return super().convert(value, param, ctx)


JOURNAL = OutputFile(why="the output is a resumable journal; name a file")
"""The type of a journaled ``-o/--output``."""


def one_stdout(**paths: Path | None) -> bool:
    """Check that at most one output goes to stdout; return whether one does.

    Args:
        **paths: Flag (``--json``, ``-o/--output`` ...) → its value.

    Raises:
        click.UsageError: When two outputs are ``-``.
    """
    dashes = [flag for flag, path in paths.items() if is_stdout(path)]
    if len(dashes) > 1:
        raise click.UsageError(f"only one output can go to stdout ('-'): {' and '.join(dashes)}")
    return bool(dashes)


def write_output(path: Path, text: str, what: str = "") -> None:
    """Write text to a file, or to stdout for ``-``; a failure names the file.

    Args:
        path: The file, or ``Path('-')``.
        text: What to write.
        what: Shown in a failure message (``--json`` ...).

    Raises:
        click.ClickException: When the file cannot be written.
    """
    if is_stdout(path):
        click.echo(text, nl=False)
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        label = f"{what} " if what else ""
        raise click.ClickException(f"cannot write {label}{path}: {exc.strerror or exc}") from None
