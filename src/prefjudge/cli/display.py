"""What commands show a person: rich tables, progress bars and the model usage report.

Stage logic never prints; commands print through these helpers (tables on stdout,
progress and notes on stderr).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

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


def print_frame(frame: pd.DataFrame, *, title: str = "") -> None:
    """Print a DataFrame as a rich table on stdout.

    Args:
        frame: Rows to show; floats are shown with three decimals.
        title: Table title.
    """
    from pandas.api.types import is_numeric_dtype  # not at import: commands start faster

    table = Table(title=title, show_lines=False)
    for column in frame.columns:
        numeric = is_numeric_dtype(frame[column])
        table.add_column(str(column), justify="right" if numeric else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    stdout.print(table)


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


def usage_table(backend: Backend, *, elapsed: float | None = None) -> Table:
    """Return a table of the backend's usage (requests, tokens, cache hits, errors).

    Args:
        backend: The backend after the run.
        elapsed: Wall-clock seconds of the run, when known.

    Returns:
        A rich table.
    """
    from rich.markup import escape
    from rich.table import Table

    usage = backend.usage
    title = escape(f"model usage: {backend.kind} · {backend.model_id}")
    table = Table(title=title, title_justify="left")
    for name in (
        "requests",
        "model calls",
        "cache hits",
        "prompt tokens",
        "completion tokens",
        "retries",
        "invalid outputs",
        "errors",
    ):
        table.add_column(name, justify="right")
    row = [
        usage.requests,
        usage.model_calls,
        usage.cache_hits,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.retries,
        usage.invalid_outputs,
        usage.errors,
    ]
    if elapsed is not None:
        table.add_column("seconds", justify="right")
        row.append(round(elapsed, 1))
    table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row))
    return table


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
    console.print(usage_table(backend, elapsed=elapsed))
