"""``judge-eval``'s tables: each method's accuracy, per split, and its bias beside the humans'.

The method table and the per-split table show the same two accuracies, named and counted
alike (:data:`ACCURACY_NOTE`): accuracy over all pairs (ties and errors as half) with its
interval, and strict accuracy over the pairs judged (ties wrong); beside them the tie rate,
errors, undecided pairs and cost, and per split the published human figure
(:func:`prefjudge.judge.splits.human_reference`); what a split is and how several are read
is in :mod:`prefjudge.judge.splits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from prefjudge.judge.splits import human_reference
from prefjudge.testbed.report import coef_text, rate_text

if TYPE_CHECKING:
    from rich.console import Console

ACCURACY_NOTE = (
    "accuracy: over all pairs, a tie or an error counts half where the humans picked a side "
    "(an undecided pair is a tie); strict accuracy: over the pairs judged, a tie counts wrong"
)
"""What both of ``judge-eval``'s accuracy tables count (they show the same two figures)."""


def _pct(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{100 * value:.1f} %"


def _ci(ci: Any) -> str:
    return f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}" if ci and ci[0] == ci[0] else ""


def _undecided(result: Mapping[str, Any]) -> str:
    return str(result.get("n_undecided", 0)) if result.get("decided_by") else "-"


def methods_table(results: Mapping[str, Mapping[str, Any]], title: str) -> Table:
    """Per method: accuracy [CI], strict accuracy, macro-F1, ties, errors, undecided, cost.

    The accuracy columns count what :func:`split_table`'s do (:data:`ACCURACY_NOTE`).

    Args:
        results: Method → :func:`~prefjudge.judge.evaluation.evaluate_verdicts`.
        title: What the table is about (the pairs, the judge model); the note follows.

    Returns:
        The table.
    """
    table = Table(title=f"{title} — {ACCURACY_NOTE}", title_justify="left")
    columns = (
        "method",
        "pairs",
        "accuracy",
        "95 % CI",
        "strict accuracy",
        "macro-F1",
        "ties",
        "errors",
        "undecided",
        "position-consistent",
        "calls/pair",
        "tokens/pair",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "method" else "right")
    for method, result in results.items():
        per_pair = result["cost"]["per_pair"]
        tokens = (per_pair["prompt_tokens"] or 0) + (per_pair["completion_tokens"] or 0)
        table.add_row(
            escape(method),
            str(result["n"]),
            _pct(result["accuracy_all_half"]),
            _ci(result.get("accuracy_all_half_ci")),
            _pct(result["accuracy"]),
            "n/a" if result["macro_f1"] is None else f"{result['macro_f1']:.3f}",
            _pct(result["tie_rate"]),
            str(result["n_error"]),
            _undecided(result),
            _pct(result["position_consistency"]),
            f"{per_pair['model_calls'] or 0:.2f}",
            f"{tokens:.0f}",
        )
    return table


def split_table(
    by_split: Mapping[str, Mapping[str, Mapping[str, Any]]], criteria: Mapping[str, str]
) -> Table:
    """Per method and split: accuracy [CI], strict accuracy, ties, errors, cost, humans.

    The accuracy columns count what :func:`methods_table`'s do (:data:`ACCURACY_NOTE`).

    Args:
        by_split: Method → split → :func:`~prefjudge.judge.evaluation.evaluate_verdicts`.
        criteria: Split → criterion (from :func:`prefjudge.judge.splits.split_criteria`).

    Returns:
        The table.
    """
    humans = human_reference()["human_accuracy"]
    table = Table(
        title=f"accuracy per split ({ACCURACY_NOTE}; humans: the benchmark paper's developers)",
        title_justify="left",
    )
    for column in (
        "method",
        "split",
        "criterion",
        "pairs",
        "accuracy",
        "95 % CI",
        "strict accuracy",
        "ties",
        "errors",
        "undecided",
        "decided by evidence",
        "calls/pair",
        "humans",
    ):
        table.add_column(
            column, justify="left" if column in ("method", "split", "criterion") else "right"
        )
    for method, splits in by_split.items():
        for name, result in splits.items():
            decided = result.get("decided_by") or {}
            table.add_row(
                method,
                escape(name),
                criteria.get(name, "-"),
                str(result["n"]),
                _pct(result["accuracy_all_half"]),
                _ci(result.get("accuracy_all_half_ci")),
                _pct(result["accuracy"]),
                _pct(result["tie_rate"]),
                str(result["n_error"]),
                _undecided(result),
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


def confusion_table(method: str, confusion: dict[str, dict[str, int]]) -> Table:
    """One method's confusion matrix: human labels (rows) by the judge's verdicts (columns)."""
    columns = sorted(
        {c for row in confusion.values() for c in row}, key=["A", "B", "tie", "error"].index
    )
    table = Table(
        title=f"{method}: human label (rows) × judge verdict (columns)", title_justify="left"
    )
    table.add_column("human")
    for column in columns:
        table.add_column(column, justify="right")
    for gold, row in confusion.items():
        table.add_row(gold, *(str(row.get(c, 0)) for c in columns))
    return table


def print_judge_eval(outcome: Any, stdout: Console) -> None:
    """Print ``judge-eval``'s tables: agreement, confusion, bias, splits, paired differences."""
    from prefjudge.cli.judging import interval_text
    from prefjudge.reporting import display_name

    results, methods = outcome.results, outcome.methods
    stdout.print(
        methods_table(
            results,
            f"judge agreement with human labels ({outcome.pairs} pairs, "
            f"{escape(display_name(outcome.judge_model))})",
        )
    )
    for method in methods:
        stdout.print(confusion_table(method, results[method]["confusion"]))
    stdout.print(bias_table({m: results[m]["bias"] for m in methods}))
    if outcome.by_split:
        stdout.print(split_table(outcome.by_split, outcome.criteria))
    for method in methods[1:]:
        diff = outcome.paired[f"{method} - {methods[0]}"]
        if diff["n"]:
            stdout.print(
                f"{method} − {methods[0]}: accuracy difference {diff['difference']:+.3f} "
                f"{interval_text(diff['difference_ci'])} on {diff['n']} pairs both judged, "
                f"McNemar p = {diff['p_value']:.3g}"
            )
