"""EvalPlus's output checks: exact equality, float tolerance, and its special oracles.

The rules of EvalPlus's ``is_output_correct``, applied outside the sandbox to outputs read
back as plain data (``child/_pj_plain.py``).
"""

from __future__ import annotations

import math
from typing import Any

from prefjudge.sandbox.child import _pj_plain as plain


def _poly(xs: list, x: float) -> float:
    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def _surface_area(base_edge: float, height: float) -> int:
    slant_height = math.sqrt((base_edge / 2) ** 2 + height**2)
    return round(base_edge**2 + 4 * (base_edge * slant_height) / 2)


def _digit_distance_nums(num1: int, num2: int) -> int:
    a, b = str(num1), str(num2)
    width = max(len(a), len(b))
    return sum(abs(int(x) - int(y)) for x, y in zip(a.zfill(width), b.zfill(width), strict=True))


MBPP_OUTPUT_NOT_NONE = {"check_str", "text_match_three", "text_starta_endb"}
MBPP_OUTPUT_SET_EQ = {
    "similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
    "larg_nnum", "intersection_array", "find_dissimilar", "Diff",
}
MBPP_ORACLES = frozenset({"are_equivalent", "sum_div", "surface_Area", "digit_distance_nums",
                          *MBPP_OUTPUT_SET_EQ, *MBPP_OUTPUT_NOT_NONE})
"""The MBPP+ functions whose outputs :func:`_special_match` checks with an oracle."""
ORACLES = frozenset({("humaneval", "find_zero"), *(("mbpp", name) for name in MBPP_ORACLES)})
"""The tasks whose outputs EvalPlus checks with an oracle of its own, not by ``==``."""


def _special_match(
    dataset: str, entry_point: str, inp: Any, out: Any, exp: Any, exact: Any, atol: float
) -> Any:
    if dataset != "mbpp" or entry_point not in MBPP_ORACLES:
        return exact
    if entry_point == "are_equivalent":
        return True
    if entry_point == "sum_div":
        return exact or out == 0
    if entry_point == "surface_Area":
        return exact or abs(out - _surface_area(*inp)) <= atol
    if entry_point == "digit_distance_nums":
        return exact or out == _digit_distance_nums(*inp)
    if entry_point in MBPP_OUTPUT_SET_EQ:
        return plain.same_members(out, exp)  # set(out) == set(exp), no set built
    if entry_point in MBPP_OUTPUT_NOT_NONE:
        return out == exp if isinstance(out, bool) else exp == (out is not None)
    return exact


def is_floats(value: Any) -> bool:
    """Whether ``value`` is a float, or a non-empty list/tuple of floats."""
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(item, float) for item in value)
    return False


def check_output(
    dataset: str, entry_point: str, inp: Any, out: Any, exp: Any, atol: float,
    out_type: str, exp_type: str, exp_floats: bool,
) -> float:
    """Assert ``out`` matches ``exp`` as EvalPlus does; return the atol to carry on with.

    Args:
        dataset: ``humaneval`` or ``mbpp`` (which special oracles apply).
        entry_point: The function's name (which special oracle).
        inp: The input (some oracles recompute from it).
        out: The candidate's output, as read back (``_pj_plain.load``).
        exp: The reference's output, as read back.
        atol: The absolute tolerance so far.
        out_type: The candidate's original output type, as the harness named it
            (``_pj_plain.type_name``: by identity with the built-in types).
        exp_type: The reference's original output type.
        exp_floats: Whether the reference's original output was made of floats.

    Raises:
        AssertionError: The outputs differ (EvalPlus's rule); TypeError, ValueError or
            ArithmeticError may say so too, as they would in EvalPlus.
    """
    if dataset == "humaneval" and entry_point == "find_zero":
        assert abs(_poly(*inp, out)) <= atol, "find_zero: not a root within atol"
        return atol
    exact = _special_match(dataset, entry_point, inp, out, exp, out == exp, atol)
    if atol == 0 and exp_floats:
        atol = 1e-6
    if not exact and atol != 0:
        import numpy as np

        # EvalPlus: type(out) == type(exp). The names come from the harness, which the
        # code shares a process with: the values read back must be of one type too.
        assert out_type == exp_type, "output type differs"
        assert plain.kind_of(out) is plain.kind_of(exp), "output type differs"
        if isinstance(exp, (list, tuple)):
            assert len(out) == len(exp), "output length differs"
        assert np.allclose(out, exp, rtol=1e-07, atol=atol), "outputs differ beyond atol"
    else:
        assert exact, "outputs differ"
    return atol


