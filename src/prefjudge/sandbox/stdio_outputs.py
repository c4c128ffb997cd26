"""LiveCodeBench's rule for stdin/stdout outputs: lines equal as text or as decimal numbers.

Streamed: memory stays a small multiple of the longest line, and the first difference ends
the comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from itertools import zip_longest

_SPACE = re.compile(r"\s")  # what str.split() splits at: str.isspace
TOKEN_CHUNK = 1 << 16  # characters of a line split at a time


def _stripped_lines(text: str) -> Iterator[str]:
    r"""LiveCodeBench's ``[line.strip() for line in text.strip().split("\n")]``, lazily."""
    stripped = text.strip()
    start = 0
    while True:
        end = stripped.find("\n", start)
        if end < 0:
            yield stripped[start:].strip()
            return
        yield stripped[start:end].strip()
        start = end + 1


def _number(token: str) -> Decimal | None:
    """The token as a decimal number; None if it is not one, or is a NaN (equal to none)."""
    try:
        number = Decimal(token)
    except (InvalidOperation, ValueError):
        return None
    return None if number.is_nan() else number  # a signalling NaN would raise when compared


def _tokens(line: str) -> Iterator[str]:
    """``line.split()``, a chunk of the line at a time (a token is never cut)."""
    start, size = 0, len(line)
    while start < size:
        end = start + TOKEN_CHUNK
        if end < size:
            space = _SPACE.search(line, end)
            end = size if space is None else space.start()
        yield from line[start:end].split()
        start = end


def _same_numbers(a: str, b: str) -> bool:
    """Whether two lines are the same sequence of decimal numbers, token by token."""
    for x, y in zip_longest(_tokens(a), _tokens(b)):
        if x is None or y is None:
            return False
        first = _number(x)
        if first is None:
            return False
        if x != y:  # the same text is the same number: read once
            second = _number(y)
            if second is None or first != second:
                return False
    return True


def outputs_equal(got: str, expected: str) -> bool:
    """Whether two program outputs match, line by line (LiveCodeBench's rule).

    Lines are stripped and compared as text, or else as sequences of decimal numbers
    (a NaN, quiet or signalling, equals nothing). Streamed: memory stays a small multiple
    of the longest line, and the first difference ends the comparison.
    """
    for a, b in zip_longest(_stripped_lines(got), _stripped_lines(expected)):
        if a is None or b is None:
            return False
        if a != b and not _same_numbers(a, b):
            return False
    return True

