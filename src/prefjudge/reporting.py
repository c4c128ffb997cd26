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

import re
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
        wrap: Names of the columns of prose, wrapped over lines where the table is too
            wide; the other left-aligned columns hold names (models, tasks), which are
            shortened in the middle instead (:func:`display_names`).
    """

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]] = field(default_factory=list)
    right: frozenset[str] = frozenset()
    result: bool = True
    wrap: frozenset[str] = frozenset()


NAME_WIDTH = 60
"""Most characters of a name (model, task id) a table, a plot label or a page shows.

The full names are in the machine-readable outputs (CSV, JSON, JSONL); a 4 MiB model
name costs a table or a plot no more than a 60-character one.
"""

TEXT_WIDTH = 400
"""Most characters of one cell of prose a table shows (its middle is cut)."""

ELLIPSIS = "…"

_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
r"""Control characters (a terminal would obey them) and lone surrogates (no encoding can
write them): shown as their Python escape (``\x1b``, ``\udcff``)."""


def _escaped(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]


def _cut(text: str, width: int, head: int | None = None) -> str:
    if len(text) <= width:
        return text
    head = (width - 1) // 2 if head is None else head
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[len(text) - tail :] if tail > 0 else "")


def display_name(name: object, width: int = NAME_WIDTH) -> str:
    r"""A name as a person is shown it: at most ``width`` characters, cut in the middle.

    ``smollm2-135m-instruct`` at 16 characters is ``smollm2…instruct``; control characters
    and lone surrogates are shown as escapes (``\x1b``, ``\udcff``), so printing the name
    can neither fail nor drive the terminal. Reading the name costs at most ``width``
    characters of work, whatever its length.

    Args:
        name: A model name, task id, file name ... (made text with ``str``).
        width: Most characters shown (at least 1).

    Returns:
        The name to show.
    """
    return _shown(name, width, _UNSHOWABLE)


_UNSHOWABLE_IN_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def display_text(text: object, width: int) -> str:
    """A message or a cell of prose as a person is shown it, line breaks and tabs kept.

    As :func:`display_name`, but a message's lines and tabs are its own.

    Args:
        text: The text (made text with ``str``).
        width: Most characters shown (at least 1); the middle of a longer text is cut.

    Returns:
        The text to show.
    """
    return _shown(text, width, _UNSHOWABLE_IN_TEXT)


def _shown(value: object, width: int, unshowable: re.Pattern[str]) -> str:
    """``value`` cut to ``width`` characters, with what ``unshowable`` finds escaped."""
    width = max(1, width)
    shown = _cut(str(value), width)  # cut first: a 4 MiB name costs ``width`` of work
    if unshowable.search(shown):
        shown = _cut(unshowable.sub(_escaped, shown), width)
    return shown


def display_names(names: Sequence[object], width: int = NAME_WIDTH) -> list[str]:
    """Names of one column shortened to ``width``, kept apart where the middle cut would merge them.

    The cut is in the middle (:func:`display_name`); when that makes two different names
    look the same (``HuggingFaceTB/SmolLM2-135M-Instruct`` and ``…-360M-Instruct`` share
    both ends), the cut moves until they differ, if some place does.

    Args:
        names: The column's cells.
        width: Most characters shown per name (at least 1).

    Returns:
        The names to show, in order.
    """
    width = max(1, width)
    shown = [display_name(name, width) for name in names]
    distinct = len(set(map(str, names)))
    if len(set(shown)) == distinct or len(names) > 5000:
        return shown
    texts = [_UNSHOWABLE.sub(_escaped, _cut(str(name), 4 * width)) for name in names]
    middle = (width - 1) // 2
    for head in sorted(range(width), key=lambda h: abs(h - middle)):
        moved = [_cut(text, width, head) for text in texts]
        if len(set(moved)) == distinct:
            return moved
    return shown


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


def nothing_done(total: int, errors: int, *, what: str, where: object, example: str = "",
                 rerun: str = "") -> StageError | None:
    """The failure of a run whose every result is an error (it judged nothing).

    One rule for every judging command (``judge``, ``judge-eval`` per method, ``persona
    compare``): a run whose every verdict or comparison is an error, e.g. because the judge
    model was unreachable, measured nothing. Its tables hold only errors and must not leave
    with exit status 0 as if it had worked. A run with at least one result that is not an
    error is a result (its error count is shown beside it). The errored results stay
    written either way; the command raises the returned error after showing them.

    Args:
        total: Results of the run (earlier runs' kept ones included).
        errors: Those that are errors.
        what: What the results are, plural (``verdicts``, ``comparisons``).
        where: The output holding them (named in the message).
        example: One result's error, quoted (cut to 200 characters).
        rerun: What to run to ask again, when the command can (e.g. ``--retry-errors``).

    Returns:
        The error to raise, or None when something was done (or there were no results).
    """
    if total == 0 or errors < total:
        return None
    because = f" (the first: {display_text(example, 200)})" if example else ""
    again = f"; fix the cause and rerun with {rerun}" if rerun else ""
    return StageError(f"{where}: all {total} {what} are errors{because}, so nothing was "
                      f"judged; they are kept in it{again}")


__all__ = [
    "ELLIPSIS",
    "NAME_WIDTH",
    "TEXT_WIDTH",
    "Advance",
    "Reporter",
    "SilentReporter",
    "StageError",
    "TextTable",
    "display_name",
    "display_names",
    "display_text",
    "nothing_done",
]
