"""``judge-eval``'s tables: each method's accuracy per split, and its bias beside the humans'.

The per-split table shows each method's accuracy (ties as half) with its interval, tie
rate, errors and cost, and the published human figure beside it
(:func:`prefjudge.judge.splits.human_reference`); what a split is and how several are read
is in :mod:`prefjudge.judge.splits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.table import Table

from prefjudge.judge.splits import human_reference
from prefjudge.testbed.report import coef_text, rate_text


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def split_table(
    by_split: Mapping[str, Mapping[str, Mapping[str, Any]]], criteria: Mapping[str, str]
) -> Table:
    """Per method and split: accuracy (ties half) [CI], tie rate, errors, cost, humans.

    Args:
        by_split: Method → split → :func:`~prefjudge.judge.evaluation.evaluate_verdicts`.
        criteria: Split → criterion (from :func:`prefjudge.judge.splits.split_criteria`).

    Returns:
        The table.
    """
    humans = human_reference()["human_accuracy"]
    table = Table(
        title="accuracy per split (over all pairs, ties and errors count half; "
        "judged: over the pairs decided or tied; humans: the benchmark paper's "
        "developers)",
        title_justify="left",
    )
    for column in (
        "method",
        "split",
        "criterion",
        "pairs",
        "accuracy",
        "95 % CI",
        "judged: accuracy",
        "ties",
        "errors",
        "decided by evidence",
        "calls/pair",
        "humans",
    ):
        table.add_column(
            column, justify="left" if column in ("method", "split", "criterion") else "right"
        )
    for method, splits in by_split.items():
        for name, result in splits.items():
            ci = result.get("accuracy_all_half_ci")
            decided = result.get("decided_by") or {}
            table.add_row(
                method,
                escape(name),
                criteria.get(name, "-"),
                str(result["n"]),
                _pct(result["accuracy_all_half"]),
                f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}" if ci else "",
                _pct(result["accuracy_ties_half"]),
                _pct(result["tie_rate"]),
                str(result["n_error"]),
                _pct(decided.get("evidence_share")) if decided else "-",
                f"{result['cost']['per_pair']['model_calls'] or 0:.2f}",
                _pct(humans.get(name)) if name in humans else "-",
            )
    return table


def bias_table(bias: Mapping[str, Mapping[str, Any]]) -> Table:
    """Per method: the judge's and the humans' first-shown, longer and more formatted picks.

    Beside them, the style regression's length and markdown coefficients.

    Args:
        bias: Method → :func:`~prefjudge.judge.bias.bias_diagnostics` result.

    Returns:
        The table (two rows per method: the judge, then the humans on the same pairs).
    """
    some = next(iter(bias.values()), {})
    table = Table(
        title=f"judge bias beside the humans' on the same pairs (tokens: "
        f"{some.get('tokenizer', '?')}; 95 % bootstrap intervals)",
        title_justify="left",
    )
    for column in (
        "method",
        "who",
        "picks first shown",
        "picks longer",
        "picks more formatted",
        "length coef.",
        "markdown coef.",
    ):
        table.add_column(column, justify="left" if column in ("method", "who") else "right")
    for method, result in bias.items():
        for who in ("judge", "human"):
            regression = result["style_regression"][who]
            table.add_row(
                method if who == "judge" else "",
                who,
                rate_text(result["first_shown"][who]),
                rate_text(result["longer"][who]),
                rate_text(result["more_formatted"][who]),
                coef_text(regression, "token_len"),
                coef_text(regression, "markdown"),
            )
    return table
