"""Where a fact came from: a side's result found beforehand, and a fact's ``source``.

A fact found by the judge itself has an empty :attr:`~prefjudge.records.Fact.source`; a fact
built on a result found beforehand (a ``prefjudge score`` record's:
:mod:`prefjudge.judge.facts.from_scores`) names it, side by side (:func:`fact_source`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HERE = "judged here"
"""How a fact's source names a side found by the judge itself."""


@dataclass(frozen=True)
class Known:
    """A side's result found beforehand.

    Attributes:
        value: The test outcome (a :class:`~prefjudge.records.FuncResult`) or the check
            results (a list of :class:`~prefjudge.records.CheckResult`, in the
            instructions' order).
        source: Where it came from (``scores <file name>``).
    """

    value: Any
    source: str


def fact_source(source_a: str, source_b: str) -> str:
    """A fact's source from its two sides' (``""``: found here).

    Args:
        source_a: Where side A's result came from (``""``: found here).
        source_b: Where side B's.

    Returns:
        ``""`` when both were found here, else ``A: <source>; B: <source>``.
    """
    if not source_a and not source_b:
        return ""
    return f"A: {source_a or HERE}; B: {source_b or HERE}"
