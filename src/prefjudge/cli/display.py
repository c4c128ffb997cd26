"""What commands show a person: rich tables, progress bars and the model usage report.

Stage logic never prints; commands print through these helpers (tables on stdout,
progress and notes on stderr).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.reporting import (
    NAME_WIDTH,
    TEXT_WIDTH,
    TextTable,
    display_name,
    display_names,
    display_text,
)

if TYPE_CHECKING:
    import pandas as pd
    from rich.progress import Progress

    from prefjudge.backends.base import Backend, OnResult, Result


class PipeConsole(Console):
    """A rich console whose closed pipe ends the command quietly, with exit status 0.

    Rich's own reaction to a reader that went away (``prefjudge instructions | head -1``)
    is to exit with status 1; this one raises :class:`BrokenPipeError`, which the
    top-level group turns into a quiet exit 0.
    """

    def on_broken_pipe(self) -> None:
        """Stop writing and let the top-level group end the command."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of the output has gone")


stdout = PipeConsole()
if not stdout.is_terminal:  # logs and pipes: don't wrap tables at 80 columns
    stdout.width = 160


NAME_MIN = 12
"""Fewest characters a name column is cut to when the table is too wide for the terminal."""

PROSE_MIN = 16
"""Fewest characters a prose column (:attr:`TextTable.wrap`) is wrapped at."""


def _name_widths(natural: Sequence[int], floors: Sequence[int], budget: int) -> list[int]:
    """Share ``budget`` characters among name columns: narrow ones whole, the rest alike."""
    widths = list(natural)
    while sum(widths) > budget:
        widest = max(widths)
        if widest <= max(floors):
            break
        second = max((w for w in widths if w < widest), default=0)
        over = sum(widths) - budget
        count = sum(1 for w in widths if w == widest)
        target = max(second, widest - -(-over // count))
        widths = [max(floor, target) if w == widest else w
                  for w, floor in zip(widths, floors, strict=True)]
        if target == second == 0:
            break
    return [max(w, floor) for w, floor in zip(widths, floors, strict=True)]


def shown_cells(table: TextTable, width: int) -> list[list[str]]:
    """The cells of ``table`` as a terminal ``width`` characters wide shows them.

    Names (left-aligned columns not in :attr:`~prefjudge.reporting.TextTable.wrap`) are
    cut in the middle (:func:`~prefjudge.reporting.display_names`) to at most
    :data:`~prefjudge.reporting.NAME_WIDTH` characters, and further, down to
    :data:`NAME_MIN`, when the table would not fit; prose is cut to
    :data:`~prefjudge.reporting.TEXT_WIDTH` (rich wraps it); numbers are kept whole.

    Args:
        table: The table.
        width: The terminal's width in characters.

    Returns:
        One list of cell texts per row (plain text: no markup is escaped yet).
    """
    columns = list(table.columns)
    cells = [[display_name(cell, NAME_WIDTH) if name not in table.right | table.wrap
              else display_text(cell, TEXT_WIDTH) for name, cell in zip(columns, row, strict=True)]
             for row in table.rows]
    names = [i for i, name in enumerate(columns)
             if name not in table.right and name not in table.wrap]
    natural = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(columns)]
    fixed = sum(natural[i] for i, name in enumerate(columns) if name in table.right)
    prose = sum(min(natural[i], PROSE_MIN) for i, name in enumerate(columns) if name in table.wrap)
    budget = width - (3 * len(columns) + 1) - fixed - prose
    floors = [min(natural[i], max(NAME_MIN, len(columns[i]))) for i in names]
    targets = _name_widths([natural[i] for i in names], floors, budget)
    for i, target in zip(names, targets, strict=True):
        if target < natural[i]:
            for row, short in zip(cells, display_names([row[i] for row in cells], target),
                                  strict=True):
                row[i] = short
    return cells


def _min_width(table: TextTable) -> int:
    """The fewest characters the table takes as columns (names at :data:`NAME_MIN`)."""
    total = 3 * len(table.columns) + 1
    for index, name in enumerate(table.columns):
        longest = max([len(name), *(len(row[index]) for row in table.rows)])
        if name in table.right:
            total += min(longest, TEXT_WIDTH)
        else:
            floor = PROSE_MIN if name in table.wrap else max(NAME_MIN, len(name))
            total += min(longest, floor)
    return total


def _records(table: TextTable, width: int, caption: str | None,
             markup: Callable[[str], str]) -> Table:
    """A table too wide for the terminal, one record after another (a line per column)."""
    title = display_text(table.title, TEXT_WIDTH)
    shown = Table(title=escape(title), show_header=False, min_width=min(width, len(title)),
                  caption=None if caption is None else escape(caption))
    labels = [display_name(name) for name in table.columns]
    label_width = max(map(len, labels), default=0)
    shown.add_column(no_wrap=True, style="bold")
    shown.add_column(overflow="fold")
    value_width = max(NAME_MIN, width - label_width - 7)
    last = len(table.rows) - 1
    for number, row in enumerate(table.rows):
        for index, (label, name, cell) in enumerate(zip(labels, table.columns, row,
                                                        strict=True)):
            text = (display_text(cell, TEXT_WIDTH) if name in table.wrap
                    else display_name(cell, value_width))
            shown.add_row(escape(label), markup(text),
                          end_section=index == len(labels) - 1 and number != last)
    return shown


def rich_table(table: TextTable, width: int, *, caption: str | None = None,
               markup: Callable[[str], str] = escape) -> Table:
    """Draw a plain table as rich shows it in a terminal ``width`` characters wide.

    The one way commands turn a :class:`~prefjudge.reporting.TextTable` into a rich table:
    names cut in the middle to fit (:func:`shown_cells`), numbers and names on one line,
    prose wrapped. A table whose columns cannot fit even so is shown one record after
    another, a line per column.

    Args:
        table: The table.
        width: The terminal's width in characters (``console.width``).
        caption: Shown under the table (plain text).
        markup: Turns a cell's text into rich markup (default: escaped as it is).

    Returns:
        The rich table.
    """
    if table.rows and _min_width(table) > width:
        return _records(table, width, caption, markup)
    shown = Table(title=escape(display_text(table.title, TEXT_WIDTH)),
                  caption=None if caption is None else escape(caption))
    cells = shown_cells(table, width)
    for index, name in enumerate(table.columns):
        column = [name, *(row[index] for row in cells)]
        prose = name in table.wrap
        shown.add_column(escape(display_name(name)),
                         justify="right" if name in table.right else "left",
                         no_wrap=not prose,
                         min_width=None if prose else max(map(len, column)))
    for row in cells:
        shown.add_row(*(markup(cell) for cell in row))
    return shown


def print_frame(frame: pd.DataFrame, *, title: str = "") -> None:
    """Print a DataFrame as a rich table on stdout.

    Args:
        frame: Rows to show; floats are shown with three decimals.
        title: Table title (rich markup; cut to
            :data:`~prefjudge.reporting.TEXT_WIDTH` characters).
    """
    from pandas.api.types import is_numeric_dtype  # not at import: commands start faster

    columns = [str(column) for column in frame.columns]
    right = frozenset(column for column, key in zip(columns, frame.columns, strict=True)
                      if is_numeric_dtype(frame[key]))
    rows = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
            for row in frame.itertuples(index=False)]
    shown = rich_table(TextTable("", columns, rows, right=right), stdout.width)
    shown.title = display_text(title, TEXT_WIDTH)
    stdout.print(shown)


def progress_bars(console: Console, *, transient: bool = True, disable: bool = False) -> Progress:
    """The house progress display: label, bar, done/total, elapsed.

    Every command's progress goes through here (one look, on stderr).

    Args:
        console: Where to draw (normally stderr).
        transient: Clear the bars when done (False: leave them as a record of the run).
        disable: Draw nothing (e.g. when there is nothing to count).

    Returns:
        A rich ``Progress`` to add tasks to and enter as a context manager.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
        disable=disable,
    )


@contextmanager
def backend_progress(
    console: Console, total: int, description: str = "model calls"
) -> Iterator[OnResult]:
    """Show a progress bar over requests; yields the ``on_result`` callback to pass.

    Args:
        console: Where to draw (normally stderr).
        total: Number of requests.
        description: Label of the bar.

    Yields:
        A callback that advances the bar by one result.
    """
    progress = progress_bars(console)
    task = progress.add_task(description, total=total)

    def advance(_result: Result) -> None:
        progress.advance(task)

    with progress:
        yield advance


def usage_table(backend: Backend, *, elapsed: float | None = None, width: int = 160) -> Table:
    """Return a table of the backend's usage (requests, tokens, cache hits, errors).

    Args:
        backend: The backend after the run.
        elapsed: Wall-clock seconds of the run, when known.
        width: The terminal's width (a narrow one shows a line per count).

    Returns:
        A rich table (:func:`rich_table`).
    """
    usage = backend.usage
    counts = {
        "requests": usage.requests,
        "model calls": usage.model_calls,
        "cache hits": usage.cache_hits,
        "prompt tokens": usage.prompt_tokens,
        "completion tokens": usage.completion_tokens,
        "retries": usage.retries,
        "invalid outputs": usage.invalid_outputs,
        "errors": usage.errors,
    }
    cells = [f"{v:,}" for v in counts.values()]
    if elapsed is not None:
        counts["seconds"] = round(elapsed, 1)
        cells.append(str(counts["seconds"]))
    title = f"model usage: {backend.kind} · {display_name(backend.model_id)}"
    table = TextTable(title, list(counts), [cells], right=frozenset(counts))
    return rich_table(table, width)


def report_usage(console: Console, backend: Backend, *, started: float | None = None) -> None:
    """Print the backend's notice (if any) and its usage table; call at the end of a run.

    Args:
        console: Where to print.
        backend: The backend after the run.
        started: ``time.monotonic()`` at the start of the run, to show the elapsed time.
    """
    from rich.markup import escape

    elapsed = None if started is None else time.monotonic() - started
    if backend.notice:
        console.print(f"[yellow]note:[/yellow] {escape(backend.notice)}")
    console.print(usage_table(backend, elapsed=elapsed, width=console.width))
