"""The command line's reporter: rich progress bars and notes on stderr, result tables on stdout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from prefjudge.cli.display import progress_bars, rich_table
from prefjudge.cli.display import stdout as stdout_console
from prefjudge.reporting import Advance, TextTable, display_name, display_text

MESSAGE_WIDTH = 2000
"""Most characters of one note or warning shown (a 4 MiB model name inside one is cut)."""


class ConsoleReporter:
    """A :class:`prefjudge.reporting.Reporter` for people at a terminal.

    Notes, warnings and progress go to ``console`` (stderr), result tables to ``stdout``.

    Args:
        console: Where notes, warnings, progress bars and run tables go.
        stdout: Where result tables go.
    """

    def __init__(self, console: Console | None = None, stdout: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.stdout = stdout or stdout_console

    def note(self, message: str) -> None:
        """Print the note as it is."""
        self.console.print(escape(display_text(message, MESSAGE_WIDTH)), soft_wrap=True)

    def warn(self, message: str) -> None:
        """Print the warning in yellow."""
        self.console.print(
            f"[yellow]{escape(display_text(message, MESSAGE_WIDTH))}[/yellow]", soft_wrap=True
        )

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Advance]:
        """A transient progress bar on stderr (none when there is nothing to do, or no terminal).

        With none to draw, no rich ``Progress`` is made at all (a disabled one draws
        nothing either): a run whose stderr is a file or pipe does not import it.
        """
        if total == 0 or not self.console.is_terminal:
            yield lambda n: None
            return
        progress = progress_bars(self.console)
        task = progress.add_task(escape(display_name(description)), total=total)
        with progress:
            yield lambda n: progress.advance(task, n)

    def table(self, table: TextTable) -> None:
        """Print the table: a result on stdout, a note on the run on stderr."""
        console = self.stdout if table.result else self.console
        console.print(rich_table(table, console.width))


__all__ = ["ConsoleReporter"]
