"""Answering "at most T" rules for many values of T from a single Ruff run.

Ruff's metric rules report the measured value next to the limit, e.g. PLR0912's
``Too many branches (5 > 2)``, and report exactly the findings whose value exceeds the
limit, at places that do not depend on the limit. So one run with the smallest limit
any check asks for answers every larger limit: keep the findings whose value exceeds
the check's own limit and write its limit into the message. The result is what a run
with that limit prints (the benchmark and the tests compare them).

E501 and W505 have one limit-dependent exemption: a line ending in a URL that starts
before the limit is not reported. A file with a line that contains ``://`` and may be
wider than the shared limit is therefore checked with its own limit. Anything
unexpected in a message (no ``(N > T)`` at its end, or a limit other than the one
configured) also sends the check to a run with its own limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from prefjudge.verify.ruff_engine import Diagnostic

# Rule code -> the setting that holds its limit.
THRESHOLD_RULES: dict[str, str] = {
    "E501": "lint.pycodestyle.max-line-length",
    "W505": "lint.pycodestyle.max-doc-length",
    "C901": "lint.mccabe.max-complexity",
    "PLR0912": "lint.pylint.max-branches",
    "PLR0914": "lint.pylint.max-locals",
    "PLR0915": "lint.pylint.max-statements",
    "PLR0916": "lint.pylint.max-bool-expr",
    "PLR1702": "lint.pylint.max-nested-blocks",
}
# Rules with the URL exemption, whose findings depend on the limit beyond "value > limit".
URL_EXEMPT_RULES = frozenset({"E501", "W505"})
_MEASURE = re.compile(r"\((\d+) > (\d+)\)$")


@dataclass(frozen=True)
class Threshold:
    """The single limit of a check that selects one threshold rule.

    Attributes:
        code: The rule.
        key: Setting holding the limit.
        value: The check's own limit.
    """

    code: str
    key: str
    value: int


def threshold_of(
    select: tuple[str, ...], settings: tuple[tuple[str, Any], ...]
) -> Threshold | None:
    """The check's threshold when it selects exactly one threshold rule and only sets its limit."""
    if len(select) != 1 or select[0] not in THRESHOLD_RULES or len(settings) != 1:
        return None
    (key, value), code = settings[0], select[0]
    if key != THRESHOLD_RULES[code] or isinstance(value, bool) or not isinstance(value, int):
        return None
    return Threshold(code, key, value)


def can_share(threshold: Threshold, code: str, ran_with: int) -> bool:
    """Whether the check may be answered from a run with the smaller limit ``ran_with``.

    Args:
        threshold: The check's threshold.
        code: The code of the file it checks.
        ran_with: The shared limit.
    """
    if threshold.code not in URL_EXEMPT_RULES or "://" not in code:
        return True
    # Lines split on "\n" only are never shorter than Ruff's lines (which also end at "\r").
    return all(_widest(line) <= ran_with for line in code.split("\n") if "://" in line)


def _widest(line: str) -> int:
    """An upper bound of Ruff's width of a line: tabs up to 4 columns, wide characters 2."""
    return len(line) + 3 * line.count("\t") + sum(1 for char in line if ord(char) > 127)


def narrow(
    diagnostics: list[Diagnostic], threshold: Threshold, ran_with: int
) -> list[Diagnostic] | None:
    """The findings a run with the check's own limit would report.

    Args:
        diagnostics: Findings of the check's rule (and non-rule findings) from a run with
            limit ``ran_with`` <= ``threshold.value``.
        threshold: The check's threshold.
        ran_with: The limit the run used.

    Returns:
        The findings, messages rewritten with the check's limit; None when a message is not
        of the expected form (the check must then run with its own limit).
    """
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code != threshold.code:
            kept.append(diagnostic)
            continue
        match = _MEASURE.search(diagnostic.message)
        if match is None or int(match.group(2)) != ran_with:
            return None
        measured = int(match.group(1))
        if measured > threshold.value:
            message = diagnostic.message[: match.start()] + f"({measured} > {threshold.value})"
            kept.append(
                Diagnostic(
                    diagnostic.row, diagnostic.column, diagnostic.code, diagnostic.name, message
                )
            )
    return kept
