"""The IF/Func composite, ``α·IF + (1 − α)·Func``: the one formula, for scalars and arrays.

It imports no numeric library, so the leaderboard of ``prefjudge run`` uses it on plain
numbers and :func:`prefjudge.ranking.correlate.composite` on numpy arrays (any operands
that support ``*``, ``+`` and ``-`` work).
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def composite_score(pass1: T, if_score: T, alpha: float | T) -> T:
    """``alpha · if_score + (1 − alpha) · pass1``: the weight ``alpha`` is on IF.

    Args:
        pass1: Functional score (pass@1), a number or an array.
        if_score: Instruction-following score, same shape.
        alpha: Weight on instruction following (a number, or an array broadcasting
            against the scores).

    Returns:
        The composite, of the operands' type.
    """
    return alpha * if_score + (1 - alpha) * pass1  # type: ignore[operator]
