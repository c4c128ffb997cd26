"""The result tables of ``rank`` and ``correlate`` as plain text, for any reporter to show.

Each function turns a fitted leaderboard, its style coefficients, the suggested pairs or
an α sweep into a :class:`~prefjudge.reporting.TextTable` whose cells are the text the
command line prints (it draws them as rich tables, :mod:`prefjudge.cli.rank_cmd`);
``prefjudge run`` can hand the same tables to its reporter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import correlate as corr
from prefjudge.ranking import style as sc
from prefjudge.ranking.reports import Sweep
from prefjudge.ranking.suggest import Suggestion
from prefjudge.reporting import TextTable

Scale = Literal["elo", "bt"]
"""Elo points, or Bradley–Terry strengths normalised to sum to 1."""

SHOWN_TASKS = 3
"""Untried tasks shown per pair in the suggestions table (the JSON lists them all)."""


def scale_name(scale: Scale) -> str:
    """How the ratings of a scale are named in titles and on the plot's axis."""
    return "BT strength (sums to 1)" if scale == "bt" else "Elo"


def _fmt(value: float, scale: Scale) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}" if scale == "bt" else f"{value:.0f}"


def _interval(lower: float, upper: float, scale: Scale) -> str:
    """``lower–upper``, or ``–`` when there is no interval (no bootstrap)."""
    if all(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lower, upper)):
        return "–"
    return f"{_fmt(lower, scale)}–{_fmt(upper, scale)}"


LEADERBOARD_COLUMNS = ("rank", "model", "rating", "95% CI", "ranks", "battles", "win rate")


def leaderboard_title(board: bt.Leaderboard, label: str, *, scale: Scale, by: str | None,
                      control: str | None, ties: str) -> str:
    """The title of one leaderboard's table.

    Args:
        board: The leaderboard (its battle count is shown).
        label: Its group (``by``'s value), ``""`` without ``by``.
        scale: The scale of its ratings.
        by: The column the battles were split by, or None.
        control: The style control, or None.
        ties: The tie policy.

    Returns:
        E.g. ``Elo leaderboard — category easy, style-controlled (length) (120 battles,
        ties: half)``.
    """
    title = f"{scale_name(scale)} leaderboard"
    title += f" — {by} {label}" if by else ""
    title += f", style-controlled ({control})" if control else ""
    return title + f" ({board.n_battles} battles, ties: {ties})"


def leaderboard_table(board: bt.Leaderboard, title: str, scale: Scale) -> TextTable:
    """One leaderboard as a table: rank, model, rating, interval, rank range, battles, win rate.

    Args:
        board: The leaderboard.
        title: Its title (:func:`leaderboard_title`).
        scale: The scale of its ratings (Elo points are shown whole).

    Returns:
        The table (a result).
    """
    rows = []
    for row in board.table.itertuples(index=False):
        battles = f"{row.battles:.0f}" if float(row.battles).is_integer() else f"{row.battles:.1f}"
        rows.append([
            str(row.rank), str(row.model), _fmt(row.rating, scale),
            _interval(row.lower, row.upper, scale),
            f"{row.rank_lower}–{row.rank_upper}", battles, f"{row.win_rate:.3f}",
        ])
    return TextTable(title, LEADERBOARD_COLUMNS, rows,
                     right=frozenset(LEADERBOARD_COLUMNS) - {"model"})


STYLE_CAPTION = "coef: log-odds per SD of z"
"""What the style table's coefficients are (the command line shows it under the table)."""


def style_table(board: sc.StyleLeaderboard) -> TextTable:
    """The style coefficients of a style-controlled leaderboard, with their intervals.

    Args:
        board: A style-controlled leaderboard.

    Returns:
        The table (a result; its unit is :data:`STYLE_CAPTION`).
    """
    rows = []
    for row in board.style.itertuples(index=False):
        if not row.estimable:
            rows.append([row.feature, "–", "–", "same in every battle: not estimable"])
            continue
        interval = "–" if math.isnan(row.lower) else f"{row.lower:+.4f} – {row.upper:+.4f}"
        rows.append([row.feature, f"{row.coef:+.4f}", interval, f"{row.elo_per_sd:+.1f}"])
    columns = ("feature", "coef", "95% CI", "Elo per SD")
    return TextTable(f"Style coefficients ({board.control}, penalty {board.penalty})", columns,
                     rows, right=frozenset(columns) - {"feature"})


SUGGESTION_COLUMNS = ("#", "model A", "model B", "battles", "P(A wins)", "P(order wrong)",
                      "value", "untried tasks", "why")


def _tasks_cell(tasks: tuple[str, ...] | None) -> str:
    if tasks is None:
        return "–"
    if not tasks:
        return "none left"
    shown = ", ".join(tasks[:SHOWN_TASKS])
    more = f", … (+{len(tasks) - SHOWN_TASKS})" if len(tasks) > SHOWN_TASKS else ""
    return f"{len(tasks)}: {shown}{more}"


def suggestions_table(suggestions: Sequence[Suggestion]) -> TextTable:
    """The suggestions as a table, best first (untried tasks: :data:`SHOWN_TASKS` per pair).

    Args:
        suggestions: Best first (:func:`suggest_for_rank`).

    Returns:
        The table (a result).
    """
    title = (f"Pairs worth judging next ({len(suggestions)}; value = expected misordered "
             "pairs one more judgment removes)")
    rows = []
    for rank, s in enumerate(suggestions, start=1):
        value = "connect" if s.kind == "connect" else (
            f"{s.score:.3g}" if math.isfinite(s.score) else "–")
        rows.append([str(rank), s.model_a, s.model_b, str(s.battles), f"{s.p_model_a_wins:.2f}",
                     f"{s.p_order_flip:.2f}", value, _tasks_cell(s.untried_tasks), s.reason])
    return TextTable(title, SUGGESTION_COLUMNS, rows,
                     right=frozenset({"#", "battles", "P(A wins)", "P(order wrong)", "value"}),
                     wrap=frozenset({"untried tasks", "why"}))


BEST_MARK = " ★"
"""Ends the cell of the best α of a correlation type in :func:`correlation_tables`."""


def correlation_tables(sweep: Sweep) -> tuple[TextTable, TextTable]:
    """One IF column's α sweep as two tables: the curve, and the best α per type.

    Args:
        sweep: The sweep.

    Returns:
        The curve (one row per α; the best α of a type ends in :data:`BEST_MARK`) and the
        best α per correlation type with its intervals.
    """
    result = sweep.result
    kinds = list(corr.CORRELATIONS)
    curve_columns = ["α (IF weight)", *kinds]
    best_rows = {kind: result.best[kind]["alpha"] for kind in kinds}
    rows = []
    for row in result.curve.itertuples(index=False):
        cells = []
        for kind in kinds:
            text = f"{getattr(row, kind):.4f}"
            if best_rows[kind] is not None and math.isclose(row.alpha, best_rows[kind]):
                text += BEST_MARK
            cells.append(text)
        rows.append([f"{row.alpha:.2f}", *cells])
    curve = TextTable(f"Correlation with Elo of α·{sweep.if_col} + (1−α)·Func "
                      f"({len(result.models)} models)", curve_columns, rows,
                      right=frozenset(curve_columns))
    summary_columns = ("type", "best α", "r", "r 95% CI", "best-α 95% CI")
    summary_rows = []
    for kind in kinds:
        best = result.best[kind]
        if best["alpha"] is None:
            summary_rows.append([kind, "–", "–", "–", "–"])
            continue
        ci, aci = best["ci"], best["alpha_ci"]
        summary_rows.append([
            kind, f"{best['alpha']:.2f}", f"{best['r']:.4f}",
            "–" if ci[0] is None else f"{ci[0]:.3f} – {ci[1]:.3f}",
            "–" if aci[0] is None else f"{aci[0]:.2f} – {aci[1]:.2f}",
        ])
    summary = TextTable("Best α per correlation type (95 % bootstrap over models)",
                        summary_columns, summary_rows,
                        right=frozenset(summary_columns) - {"type"})
    return curve, summary


__all__ = [
    "BEST_MARK",
    "LEADERBOARD_COLUMNS",
    "SHOWN_TASKS",
    "STYLE_CAPTION",
    "SUGGESTION_COLUMNS",
    "Scale",
    "correlation_tables",
    "leaderboard_table",
    "leaderboard_title",
    "scale_name",
    "style_table",
    "suggestions_table",
]
