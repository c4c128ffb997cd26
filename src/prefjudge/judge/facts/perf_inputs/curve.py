"""A side's cost as a curve: time per call at each scale, a fitted growth, one decision.

Each measured scale gives, per side, the net CPU time of one call (the run's median minus
the baseline's, divided by the rounds) and a decision of its own
(:func:`prefjudge.judge.facts.efficiency.decide`). The growth of a side is the slope of
``log(time)`` against ``log(factor)`` (least squares over the scales): about 1 for a
side whose cost is linear in the input's size, 2 for a quadratic one.

The pair's decision (:func:`combine`):

- the largest scale decides when it decides (the most performance-exercising input; a
  smaller scale that says otherwise is where the faster-growing side's constant still
  wins);
- where it is a tie, a side whose growth is lower by at least :data:`GROWTH_GAP` and that
  is not dearer there wins (linear against quadratic is a clear decision even when one
  scale overlaps);
- where it is a tie, a side that is cheaper at every scale wins when that is clear: a
  smaller scale decided for it, or every scale's runs set it apart (Mann-Whitney
  p <= :data:`~prefjudge.judge.facts.efficiency_measure.ALPHA` at each) though by less
  than the ratio one scale needs (1 +
  :data:`~prefjudge.judge.facts.efficiency_measure.MIN_RELATIVE`; two scales' separate runs
  agreeing are not noise);
- otherwise a tie: the costs agree across the scales.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from prefjudge.judge.facts.efficiency_measure import ALPHA

SIDES = ("A", "B")
GROWTH_GAP = 0.3
FLOOR_S = 1e-7


@dataclass(frozen=True)
class ScalePoint:
    """One measured scale.

    Attributes:
        factor: How many times the seed input the measured input is.
        outcome: That scale's own decision (``A``, ``B`` or ``tie``).
        per_call_s: Net CPU seconds of one call, per side.
        ratio: Dearer over cheaper net cost.
        p_value: The Mann-Whitney p-value of the two sides' runs.
        rounds: Calls per run.
        fact: That scale's decision in words.
    """

    factor: int
    outcome: str
    per_call_s: dict[str, float]
    ratio: float
    p_value: float
    rounds: int
    fact: str

    def to_dict(self) -> dict[str, Any]:
        """The point as plain data (for the fact's detail)."""
        return asdict(self)


def growth(points: Sequence[ScalePoint], side: str) -> float | None:
    """The least-squares slope of log cost against log factor (None below two scales)."""
    if len(points) < 2:
        return None
    xs = [math.log(point.factor) for point in points]
    ys = [math.log(max(point.per_call_s[side], FLOOR_S)) for point in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def combine(points: Sequence[ScalePoint]) -> tuple[str, str]:
    """The pair's outcome over its scales and why (see the module docstring)."""
    top = points[-1]
    if top.outcome in SIDES:
        return top.outcome, "decided at the largest input"
    slopes = {side: growth(points, side) for side in SIDES}
    if slopes["A"] is not None and slopes["B"] is not None:
        slow, fast = sorted(SIDES, key=lambda side: slopes[side])  # type: ignore[arg-type]
        gap = slopes[fast] - slopes[slow]  # type: ignore[operator]
        if gap >= GROWTH_GAP and top.per_call_s[slow] <= top.per_call_s[fast]:
            return slow, (f"the largest input alone overlaps, but {slow}'s cost grows "
                          f"slower (n^{slopes[slow]:.1f} against n^{slopes[fast]:.1f})")
    return _cheaper_throughout(points) or ("tie", "the costs agree across the scales")


def _cheaper_throughout(points: Sequence[ScalePoint]) -> tuple[str, str] | None:
    """The side cheaper at every scale, where a scale decided for it or all set it apart."""
    if len(points) < 2:
        return None
    leans = {min(SIDES, key=lambda side: point.per_call_s[side]) for point in points}
    if len(leans) != 1 or any(p.per_call_s["A"] == p.per_call_s["B"] for p in points):
        return None
    (side,) = leans
    if any(point.outcome == side for point in points):
        return side, (f"the largest input alone does not decide, but {side} is cheaper "
                      f"at every scale and clearly so at a smaller one")
    if all(point.p_value <= ALPHA for point in points):
        least = min(point.ratio for point in points)
        return side, (f"{side} is cheaper at every scale, by {least:.2f}x or more, and the "
                      f"runs set it apart at each (p <= {ALPHA:g})")
    return None


def _time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def curve_text(points: Sequence[ScalePoint]) -> str:
    """The curves in words: ``per call, x1 -> x16 input: A: 1.9 ms -> 190 ms, about n^1.7; B: ...``.

    The factors are the inputs' sizes against the seed input's (the task's own).
    """
    span = f"x{points[0].factor:,} -> x{points[-1].factor:,}"
    said = []
    for side in SIDES:
        costs = " -> ".join(_time(point.per_call_s[side]) for point in points)
        slope = growth(points, side)
        shape = f", about n^{slope:.1f}" if slope is not None else ""
        said.append(f"{side}: {costs}{shape}")
    return f"per call, {span} input: " + "; ".join(said)
