"""``prefjudge rank --suggest N``: the model pairs worth judging next, printed and as JSON.

:func:`prefjudge.ranking.run.rank_file` finds the pairs
(:func:`~prefjudge.ranking.run.suggest_for_rank`, valued by :mod:`prefjudge.ranking.suggest`,
with the tasks each pair was not judged on when the battles carry ``task_id``); this
module prints them as a rich table (:func:`print_and_write_suggestions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.cli.display import rich_table
from prefjudge.cli.streams import is_stdout, write_output
from prefjudge.ranking.reports import dumps
from prefjudge.ranking.run import suggestion_records
from prefjudge.ranking.suggest import Suggestion
from prefjudge.ranking.tables import suggestions_table as suggestions_text


def suggestions_table(suggestions: Sequence[Suggestion], width: int) -> Table:
    """The suggestions as a rich table, best first (cells as ``ranking.tables`` writes them).

    Args:
        suggestions: Best first.
        width: The terminal's width in characters.

    Returns:
        The rich table (:func:`~prefjudge.cli.display.rich_table`).
    """
    return rich_table(suggestions_text(suggestions), width)


def print_and_write_suggestions(
    console: Console,
    suggestions: Sequence[Suggestion],
    json_path: Path | None,
) -> None:
    """Print the suggestions as a table and optionally write them as JSON.

    Args:
        console: Where the table goes.
        suggestions: Best first (:func:`~prefjudge.ranking.run.suggest_for_rank`).
        json_path: ``{"suggestions": [...]}`` is written there (``-``: stdout); None
            writes nothing. ``prefjudge rank --json`` instead adds the same list to its
            own payload under ``suggestions``
            (:func:`~prefjudge.ranking.run.suggestion_records`).

    Raises:
        click.ClickException: When the JSON file cannot be written.
    """
    console.print(suggestions_table(suggestions, console.width))
    if json_path is not None:
        write_output(Path(json_path), dumps({"suggestions": suggestion_records(suggestions)}),
                     "--json")
        if not is_stdout(json_path):
            Console(stderr=True).print(f"suggestions → {escape(str(json_path))}")


__all__ = ["print_and_write_suggestions", "suggestions_table"]
