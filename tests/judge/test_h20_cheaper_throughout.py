"""Round 5 of issue 45: a tie at the largest scale is not a tie where every scale agrees.

The figures are those measured on EvalPerf's and CodePrefBench's pairs (2 cores): Mbpp/720's
sides differ by 1.05-1.10x at both scales, every run apart (under the 1.10x one scale needs);
Mbpp/744#2's largest scale overlapped once while its smaller one decided 1.4x; Mbpp/129's
scales point opposite ways.
"""

from __future__ import annotations

import pytest

from prefjudge.judge.facts.efficiency_measure import ALPHA
from prefjudge.judge.facts.perf_inputs.curve import ScalePoint, combine


def _point(factor: int, a: float, b: float, outcome: str, p_value: float) -> ScalePoint:
    return ScalePoint(factor, outcome, {"A": a, "B": b}, max(a, b) / min(a, b), p_value,
                      100, "")


def _swapped(points: list[ScalePoint]) -> list[ScalePoint]:
    other = {"A": "B", "B": "A", "tie": "tie"}
    return [_point(p.factor, p.per_call_s["B"], p.per_call_s["A"], other[p.outcome],
                   p.p_value) for p in points]


MBPP_720 = [_point(64, 5.0e-5, 5.4e-5, "tie", 0.0006), _point(1024, 7.8e-4, 8.2e-4, "tie", 0.0012)]
MBPP_744 = [_point(64, 6.7e-6, 4.8e-6, "B", 0.0023), _point(1024, 7.8e-5, 7.2e-5, "tie", 0.38)]


@pytest.mark.parametrize(("points", "side", "why"), [
    (MBPP_720, "A", f"A is cheaper at every scale, by 1.05x or more, and the runs set it apart "
                    f"at each (p <= {ALPHA:g})"),
    (MBPP_744, "B", "B is cheaper at every scale and clearly so at a smaller one"),
], ids=["every-scale-apart", "smaller-scale-decided"])
def test_a_side_cheaper_at_every_scale_wins_where_that_is_clear(points, side, why):
    assert combine(points) == (side, f"the largest input alone does not decide, but {why}"
                               if "smaller" in why else why)
    other = "A" if side == "B" else "B"
    assert combine(_swapped(points))[0] == other


def test_one_scale_whose_runs_overlap_leaves_a_small_difference_a_tie():
    overlapping = [MBPP_720[0], _point(1024, 7.8e-4, 8.2e-4, "tie", 0.21)]
    assert combine(overlapping) == ("tie", "the costs agree across the scales")
    assert combine(MBPP_720[1:])[0] == "tie"  # one scale alone
    leaning_away = [MBPP_744[0], _point(1024, 7.2e-5, 7.8e-5, "tie", 0.38)]
    assert combine(leaning_away)[0] == "tie"


def test_scales_that_point_opposite_ways_stay_a_tie_and_the_largest_decision_stands():
    mbpp_129 = [_point(64, 1.0e-5, 1.17e-5, "A", 0.0006),
                _point(1024, 2.1e-4, 2.0e-4, "tie", 0.0006)]
    assert combine(mbpp_129)[0] == "tie"
    decided = [_point(64, 1.0e-5, 1.17e-5, "A", 0.0006),
               _point(1024, 3.0e-4, 2.0e-4, "B", 0.0006)]
    assert combine(decided) == ("B", "decided at the largest input")
    equal = [_point(64, 1e-5, 1e-5, "tie", 0.0006), _point(1024, 1e-4, 1e-4, "tie", 0.0006)]
    assert combine(equal)[0] == "tie"
