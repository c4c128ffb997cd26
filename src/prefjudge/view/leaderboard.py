"""The viewer's leaderboard table: human column names, numbers to read, intervals in one cell.

``leaderboard.csv`` may have any columns (``prefjudge rank -o`` writes ``model, rating,
lower, upper, rank, rank_lower, rank_upper, battles, win_rate``; ``prefjudge run`` writes
``elo, elo_lower, elo_upper, pass1, if_instruction`` ...). The page shows each column under
the name :data:`COLUMN_LABELS` gives it, a value with its interval columns as one cell
(``1022 [985, 1065]``, rank ``1 (1–3)``), and numbers to :func:`number_text`'s precision
with the number as written in the file as the cell's tooltip. The CSV keeps every digit.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

COLUMN_LABELS = {
    "model": "model",
    "rating": "rating",
    "elo": "Elo",
    "rank": "rank",
    "battles": "battles",
    "win_rate": "win rate",
    "pass1": "pass@1",
    "if_instruction": "IF (instruction)",
    "if_task": "IF (task)",
    "composite": "composite",
    "judge_errors": "judge errors",
    "generation_errors": "generation errors",
    "n": "samples",
    "category": "category",
    "func": "functional",
}
"""How the page names a leaderboard column; any other is shown with spaces for ``_``."""

INTERVALS = {
    "rating": ("lower", "upper", "{value} [{lower}, {upper}]", "rating [95% CI]"),
    "elo": ("elo_lower", "elo_upper", "{value} [{lower}, {upper}]", "Elo [95% CI]"),
    "rank": ("rank_lower", "rank_upper", "{value} ({lower}–{upper})", "rank (95% range)"),
}
"""Value column → its bound columns, how the three are shown in one cell, and the label."""


def column_label(name: str) -> str:
    """A leaderboard column's name as the page shows it (:data:`COLUMN_LABELS`).

    Args:
        name: The column's name in the CSV.

    Returns:
        The label.
    """
    return COLUMN_LABELS.get(name, name.replace("_", " ").strip() or name)


def number_text(text: str) -> str:
    """A CSV cell as the page shows it: a number to three significant digits.

    Whole numbers stay as written (counts, ranks); from 100 up a number is shown whole
    (an Elo rating); below, to three significant digits (``0.16666666666666666`` is
    ``0.167``). Text that is no finite number is returned as it is.

    Args:
        text: The cell as written in the CSV.

    Returns:
        The cell to show.
    """
    stripped = text.strip()
    if not stripped or len(stripped) > 40:
        return text
    try:
        value = float(stripped)
    except ValueError:
        return text
    if not math.isfinite(value) or stripped.lstrip("+-").isdigit():
        return text
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


@dataclass(frozen=True)
class _Column:
    label: str
    cells: Callable[[Sequence[str]], tuple[str, str | None]]
    numeric: bool


def _cell(row: Sequence[str], index: int) -> str:
    return row[index] if index < len(row) else ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numeric(rows: Sequence[Sequence[str]], index: int) -> bool:
    """Whether every filled cell of a column is a number (it is then aligned right)."""
    filled = [cell for row in rows if (cell := _cell(row, index).strip())]
    return bool(filled) and all(len(cell) <= 40 and _is_number(cell) for cell in filled)


def _columns(names: Sequence[str], rows: Sequence[Sequence[str]]) -> list[_Column]:
    """The columns shown: interval columns folded into their value's column."""
    position = {name: index for index, name in enumerate(names)}
    folded: set[str] = set()
    for value, (lower, upper, _, _) in INTERVALS.items():
        if {value, lower, upper} <= position.keys():
            folded |= {lower, upper}
    columns = []
    for index, name in enumerate(names):
        if name in folded:
            continue
        spec = INTERVALS.get(name)
        if spec is not None and {spec[0], spec[1]} <= folded:
            low, high, pattern, label = spec
            columns.append(
                _Column(label, _interval(index, position[low], position[high], pattern), True)
            )
        else:
            columns.append(_Column(column_label(name), _single(index), _numeric(rows, index)))
    return columns


def _single(index: int) -> Callable[[Sequence[str]], tuple[str, str | None]]:
    def cells(row: Sequence[str]) -> tuple[str, str | None]:
        raw = _cell(row, index)
        shown = number_text(raw)
        return shown, (raw if shown != raw else None)

    return cells


def _interval(
    value: int, lower: int, upper: int, pattern: str
) -> Callable[[Sequence[str]], tuple[str, str | None]]:
    def cells(row: Sequence[str]) -> tuple[str, str | None]:
        raw = [_cell(row, i) for i in (value, lower, upper)]
        if not raw[1].strip() and not raw[2].strip():
            return number_text(raw[0]), None
        shown = pattern.format(
            value=number_text(raw[0]), lower=number_text(raw[1]), upper=number_text(raw[2])
        )
        return shown, f"{raw[0]} [{raw[1]}, {raw[2]}]"

    return cells


def leaderboard_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], text: Callable[[str], str]
) -> str:
    """The leaderboard as an HTML table (every text escaped).

    Args:
        columns: The CSV's header.
        rows: Its rows.
        text: Cuts a text to the page's length limit.

    Returns:
        ``<table class="leaderboard">…</table>``.
    """
    shown = _columns(columns, rows)
    parts = ['<table class="leaderboard"><thead><tr>']
    parts += [f"<th{_class(c)}>{_escape(c.label)}</th>" for c in shown]
    parts.append("</tr></thead><tbody>")
    for row in rows:
        cells = []
        for column in shown:
            value, exact = column.cells(row)
            tip = f' title="{_escape(text(exact))}"' if exact else ""
            cells.append(f"<td{_class(column)}{tip}>{_escape(text(value))}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def _class(column: _Column) -> str:
    return ' class="num"' if column.numeric else ' class="name"'


def _escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


__all__ = ["COLUMN_LABELS", "INTERVALS", "column_label", "leaderboard_table", "number_text"]
