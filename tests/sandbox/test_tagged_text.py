"""``_pj_plain.tagged_text`` writes exactly ``json.dumps(encode(value))``, or gives up.

The harness writes a candidate's small output with it, and prefjudge matches a line equal
to the one it would write for the reference's value without reading it
(``compare.identical_line``, which uses ``json.dumps``): the two texts must never differ.
"""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from prefjudge.sandbox.child import _pj_plain as plain

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**64)
           | st.floats(allow_nan=True, allow_infinity=True) | st.complex_numbers()
           | st.text() | st.binary())
HASHABLE = st.recursive(SCALARS, lambda inner: st.tuples(inner, inner)
                        | st.frozensets(inner, max_size=4), max_leaves=8)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (st.lists(inner, max_size=6) | st.lists(st.integers(), max_size=30)
                   | st.lists(st.text(max_size=5), max_size=30)
                   | st.tuples(inner, inner) | st.sets(HASHABLE, max_size=4)
                   | st.dictionaries(HASHABLE, inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(VALUES)
def test_the_text_is_json_dumps_of_the_tagged_value(value: object) -> None:
    expected = json.dumps(plain.encode(value))
    got = plain.tagged_text(value, budget=1 << 20)
    assert got == expected
    short = plain.tagged_text(value, budget=len(expected) - 1)
    assert short is None  # one character short of its text: given up


def test_long_values_are_given_up_before_they_are_written() -> None:
    assert plain.tagged_text(list(range(10**6))) is None
    assert plain.tagged_text("x" * (plain.INLINE_MAX + 1)) is None
    assert plain.tagged_text(10 ** (10**5)) is None
    assert plain.tagged_text([[0] * 500] * 500) is None
    assert plain.tagged_text(b"\0" * plain.INLINE_MAX) is None
    nested: list = []
    for _ in range(plain.MAX_DEPTH + 5):
        nested = [nested]
    assert plain.tagged_text(nested, budget=1 << 20) is None


def test_a_nan_is_written_as_encode_writes_it() -> None:
    assert plain.tagged_text([math.nan, -math.inf]) == '["l", [["f", "nan"], ["f", "-inf"]]]'
