"""The outputs of the ``rank`` and ``correlate`` use cases: files written, or text given back.

An output path of :data:`STDOUT` (``-``) means "give the text back" (the command line
writes it to stdout); at most one output may be it (:class:`SettingsError` otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefjudge.journal import JournalError, check_writable
from prefjudge.reporting import Reporter, StageError

STDOUT = Path("-")
"""An output path meaning "give the text back" (the command line writes it to stdout)."""


class SettingsError(StageError):
    """Settings that do not go together, found before any work (a usage error).

    Args:
        message: What is wrong, naming the options as the command line spells them.
        option: The one option at fault (``--alpha``), or None when several are.
    """

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether an output path is :data:`STDOUT` (``-``)."""
    return path is not None and os.fspath(path) == os.fspath(STDOUT)


def _check_outputs(outputs: Mapping[str, Path | None]) -> None:
    """At most one output is ``-``; the others can be written (their folders are made).

    Raises:
        SettingsError: When two outputs are ``-``.
        StageError: When a file could not be written.
    """
    dashes = [name for name, path in outputs.items() if is_stdout(path)]
    if len(dashes) > 1:
        raise SettingsError(f"only one output can go to stdout ('-'): {' and '.join(dashes)}")
    for path in outputs.values():
        if path is not None and not is_stdout(path):
            try:
                check_writable(path)
            except JournalError as exc:
                raise StageError(str(exc)) from None


def _deliver(path: Path, text: str, reporter: Reporter, what: str) -> None:
    """Write ``text`` to ``path`` and say so (nothing for :data:`STDOUT`: it is given back).

    Raises:
        StageError: When the file cannot be written.
    """
    if is_stdout(path):
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise StageError(f"cannot write {path}: {exc.strerror or exc}") from None
    reporter.note(f"{what} → {path}")


def _written(texts: Mapping[Path, str], plot: Path | None) -> dict[str, Any]:
    """An outcome's ``written`` (the files, plot last) and ``stdout`` (the text for ``-``)."""
    files = [path for path in texts if not is_stdout(path)] + ([plot] if plot else [])
    stdout = next((text for path, text in texts.items() if is_stdout(path)), None)
    return {"written": tuple(files), "stdout": stdout}


def _plot(draw: Any, path: Path, reporter: Reporter, what: str) -> None:
    """Draw a PNG plot to ``path`` and say so.

    Raises:
        StageError: When the file cannot be written.
    """
    try:
        draw()
    except OSError as exc:
        raise StageError(f"cannot write {path}: {exc.strerror or exc}") from None
    reporter.note(f"{what} → {path}")
