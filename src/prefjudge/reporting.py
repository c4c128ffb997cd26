"""How a stage tells a person what it is doing, without printing: the reporter interface.

Every stage's use case (``score_file``, ``generate_file``, ``judge_file`` ...) takes a
:class:`Reporter` and never prints: the command line gives it one that draws rich progress
bars and tables (``prefjudge.cli.reporter.ConsoleReporter``), tests and Ray workers give
it :class:`SilentReporter`, and ``prefjudge run`` gives every stage the same one. A use
case that cannot go on raises :class:`StageError` with a message for a person; the
command shows it as a usage error, ``run`` stops there (a rerun resumes).

Messages are plain text (no markup): the reporter decides how they look.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

Advance = Callable[[int], None]
"""Called with how many units of a progress bar were done since the last call."""


class StageError(Exception):
    """A stage cannot go on; the message says why and what to do (no traceback needed).

    Records already written are kept: rerunning the stage resumes after them.
    """


@dataclass(frozen=True)
class TextTable:
    """A table of plain text, for a reporter to show.

    Attributes:
        title: Shown above the table.
        columns: Column names.
        rows: One list of cell texts per row, as many as ``columns``.
        right: Names of the columns aligned right (numbers).
        result: True for a result (stdout in the command line), False for a note on the
            run (stderr).
    """

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]] = field(default_factory=list)
    right: frozenset[str] = frozenset()
    result: bool = True


class Reporter(Protocol):
    """Where a stage's notes, warnings, progress and tables go."""

    def note(self, message: str) -> None:
        """Say something about the run (resuming, skipped records, a file written)."""

    def warn(self, message: str) -> None:
        """Say something the person should look at (failed records, a weak model)."""

    def progress(self, description: str, total: int | None) -> AbstractContextManager[Advance]:
        """A progress bar over ``total`` units (None: unknown); yields its advance callback."""

    def table(self, table: TextTable) -> None:
        """Show a table."""


class SilentReporter:
    """A reporter that shows nothing (tests, Ray workers, library use).

    Attributes:
        messages: Every note and warning, as ``(level, message)``, for tests to read.
        tables: Every table shown.
    """

    def __init__(self) -> None:
        self.messages: list[tuple[Literal["note", "warn"], str]] = []
        self.tables: list[TextTable] = []

    def note(self, message: str) -> None:
        """Keep the note."""
        self.messages.append(("note", message))

    def warn(self, message: str) -> None:
        """Keep the warning."""
        self.messages.append(("warn", message))

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Advance]:
        """A progress bar that draws nothing."""
        del description, total
        yield lambda _n: None

    def table(self, table: TextTable) -> None:
        """Keep the table."""
        self.tables.append(table)


__all__ = ["Advance", "Reporter", "SilentReporter", "StageError", "TextTable"]
