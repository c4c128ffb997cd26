"""The judge-bias section of a ``prefjudge report`` page, from a ``judge-eval`` ``summary.json``.

:func:`judge_summary_problem` checks the summary's ``bias`` entries (the first field the
section cannot use); :func:`judge_bias_section` puts the judge's biases beside the
humans' (rates of picking the first-shown, longer and more formatted response, and the
style regression's coefficients, each with its interval). :func:`rate_text` and
:func:`coef_text` write one rate or coefficient for any reporter.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from prefjudge.testbed.report_types import ReportSection, ReportTable


def rate_text(entry: dict[str, Any]) -> str:
    """A bias rate as ``61.3 % [55–67] (n=120)`` (``n/a`` when undefined)."""
    if entry.get("rate") is None:
        return "n/a"
    ci = entry.get("ci")
    band = f" [{100 * ci[0]:.0f}–{100 * ci[1]:.0f}]" if ci else ""
    return f"{100 * entry['rate']:.1f} %{band} (n={entry['n']})"


def coef_text(regression: dict[str, Any], name: str) -> str:
    """A style-regression coefficient as ``+0.72 [+0.37, +1.17]`` (``n/a`` when absent)."""
    coef = regression.get("coefficients", {}).get(name)
    if coef is None:
        return "n/a"
    ci = coef.get("ci")
    band = f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else ""
    return f"{coef['value']:+.2f}{band}"


def _coef_value(regression: dict[str, Any], name: str) -> float:
    coef = regression.get("coefficients", {}).get(name)
    return float("nan") if coef is None else float(coef["value"])


BIAS_RATES = ("first_shown", "longer", "more_formatted")
"""The bias rates of a ``judge-eval`` summary the report shows, per judge and humans."""


BIAS_COEFFICIENTS = ("token_len", "markdown")
"""The style-regression coefficients the report shows."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _interval_problem(value: Any) -> str | None:
    if value is None or (isinstance(value, list) and len(value) == 2
                         and all(_is_number(v) for v in value)):
        return None
    return "must be null or a list of two numbers"


def _bias_problem(bias: Any) -> tuple[str, str] | None:
    """The first field of one method's ``bias`` entry the report cannot use, or None."""
    if not isinstance(bias, dict):
        return "", "must be an object"
    for key in BIAS_RATES:
        for who in ("judge", "human"):
            entry = bias.get(key, {}).get(who) if isinstance(bias.get(key), dict) else None
            if not isinstance(entry, dict):
                return f".{key}.{who}", "is missing (an object with rate, ci and n)"
            rate = entry.get("rate")
            if rate is not None and not _is_number(rate):
                return f".{key}.{who}.rate", "must be a number or null"
            if rate is not None and not _is_number(entry.get("n")):
                return f".{key}.{who}.n", "must be a number"
            if problem := _interval_problem(entry.get("ci")):
                return f".{key}.{who}.ci", problem
    regressions = bias.get("style_regression")
    for who in ("judge", "human"):
        regression = regressions.get(who) if isinstance(regressions, dict) else None
        if not isinstance(regression, dict):
            return f".style_regression.{who}", "is missing (an object with coefficients)"
        coefficients = regression.get("coefficients", {})
        if not isinstance(coefficients, dict):
            return f".style_regression.{who}.coefficients", "must be an object"
        for name in BIAS_COEFFICIENTS:
            coef = coefficients.get(name)
            where = f".style_regression.{who}.coefficients.{name}"
            if coef is None:
                continue
            if not isinstance(coef, dict) or not _is_number(coef.get("value")):
                return where + ".value", "must be a number"
            if problem := _interval_problem(coef.get("ci")):
                return where + ".ci", problem
    return None


def judge_summary_problem(summary: Any) -> tuple[str, str] | None:
    """The first field of a ``judge-eval`` summary that :func:`judge_bias_section` cannot use.

    Args:
        summary: The parsed ``summary.json``.

    Returns:
        ``(field, problem)``, e.g. ``("methods.pairwise.bias.longer.human", "is missing
        ...")``, or None when the section can be built from it.
    """
    if not isinstance(summary, dict) or not isinstance(summary.get("methods"), dict):
        return "methods", "is missing (an object of methods)"
    for method, result in summary["methods"].items():
        if not isinstance(result, dict):
            return f"methods.{method}", "must be an object"
        if not result.get("bias"):
            continue
        if found := _bias_problem(result["bias"]):
            return f"methods.{method}.bias{found[0]}", found[1]
    return None


def judge_bias_section(summary: dict[str, Any]) -> ReportSection:
    """The judge's biases beside the humans', from a ``judge-eval`` ``summary.json``.

    Args:
        summary: The parsed summary (its methods' ``bias`` entries are used); one that
            :func:`judge_summary_problem` accepts.

    Returns:
        A section with one table: per method, the judge's and the humans' rates of picking
        the first-shown, longer and more formatted response, and the style regression's
        length and markdown coefficients, each with its 95 % interval.
    """
    rows, shown_rows = [], []
    tokenizer = "?"
    for method, result in summary.get("methods", {}).items():
        bias = result.get("bias")
        if not bias:
            continue
        tokenizer = bias.get("tokenizer", tokenizer)
        for who in ("judge", "human"):
            regression = bias["style_regression"][who]
            length, length_text = _coef_value(regression, "token_len"), coef_text(
                regression, "token_len")
            markdown, markdown_text = _coef_value(regression, "markdown"), coef_text(
                regression, "markdown")
            rates = {key: bias[key][who] for key in BIAS_RATES}
            rows.append({"method": method, "who": who,
                         **{key: rates[key].get("rate") for key in rates},
                         "length_coef": length, "markdown_coef": markdown})
            shown_rows.append({"method": method, "who": who,
                               **{"picks " + key.replace("_", " "): rate_text(rates[key])
                                  for key in rates},
                               "length coef.": length_text, "markdown coef.": markdown_text})
    text = (f"From judge-eval on {summary.get('pairs', '?')} labelled pairs "
            f"({summary.get('pairs_file', '')}): how often each judge and the humans pick the "
            "first-shown, the longer and the more formatted response, and a logistic "
            "regression of their choices on the standardised length and markdown differences "
            f"(95 % bootstrap intervals; tokens: {tokenizer}).")
    return ReportSection(
        key="judge-bias", title="Judge bias beside the humans'", text=text,
        tables=[ReportTable("judge and human picks on the same pairs", pd.DataFrame(rows),
                            pd.DataFrame(shown_rows))],
    )
