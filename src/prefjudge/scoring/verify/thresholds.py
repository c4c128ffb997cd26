"""Answering "at most T" rules for many values of T from a few Ruff runs.

Ruff's metric rules report the measured value next to the limit, e.g. PLR0912's
``Too many branches (5 > 2)``, and report exactly the findings whose value exceeds the
limit, at places that do not depend on the limit. So a run with a smaller limit R
answers a check with limit T >= R: keep the findings whose value exceeds T and write T
into the message. The result is what a run with limit T prints (the benchmark and the
tests compare them).

E501 and W505 have one limit-dependent exemption: a line ending in a URL that starts
before the limit is not reported. A run with limit R answers such a check only when
every line containing ``://`` is at most R wide (then no URL line is reported at R or
at T). Each check thus accepts the limits R in an interval ``[floor, T]``, and
:func:`shared_limits` picks as few limits as possible that serve every check (the check
with ``floor > T`` gets its own limit, which is exact). Anything unexpected in a message
(no ``(N > T)`` at its end, or a limit other than the one configured) sends the check
to a run with its own limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from prefjudge.scoring.verify.ruff_engine import Diagnostic

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


def floor(threshold: Threshold, code: str) -> int:
    """The smallest limit of a run that can answer the check on this code.

    Args:
        threshold: The check's threshold.
        code: The code of the file it checks.

    Returns:
        0 unless the rule has the URL exemption and the code has lines with ``://``:
        then an upper bound of their width.
    """
    if threshold.code not in URL_EXEMPT_RULES or "://" not in code:
        return 0
    # Lines split on "\n" only are never shorter than Ruff's lines (which also end at "\r").
    return max(_widest(line) for line in code.split("\n") if "://" in line)


def shared_limits(wanted: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Choose few run limits such that each check gets one within its interval.

    Args:
        wanted: Check key to ``(floor, limit)``; a floor above the limit means only the
            check's own limit will do.

    Returns:
        Check key to the limit of the run that answers it (greedy interval stabbing,
        which uses the fewest distinct limits).
    """
    chosen: dict[int, int] = {}
    current: int | None = None
    for key, (low, high) in sorted(wanted.items(), key=lambda entry: (entry[1][1], entry[0])):
        if current is None or min(low, high) > current:
            current = high
        chosen[key] = current
    return chosen


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
