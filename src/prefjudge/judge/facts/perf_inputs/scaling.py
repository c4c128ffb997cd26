"""Type-aware scaling of a task's own inputs: the same input, grown by a factor.

An input is a list of positional arguments as the task stores it (JSON values). Growing
it keeps its shape and its types, so that the reference solution (and a correct response)
still takes it:

- a **string** grows by repetition (joined by a space or a comma where the string holds
  them: words stay words, numbers stay numbers) or is drawn afresh from its own alphabet;
- a **list** of values grows by repetition or by fresh values from its own range
  (integers drawn between its least and greatest, a sorted list kept sorted, distinct
  values kept distinct) or its own elements;
- a **matrix** (a list of equal-length rows of plain values) grows in both dimensions by
  the square root of the factor, so a square matrix stays square: by tiling (a magic
  square tiled stays magic) or by fresh values from its own range;
- a **dict** grows by keys made from its own (``k``, ``k1``, ``k2``..., or integer keys
  shifted past the largest);
- a **character** (a string of one) next to other arguments stays as it is: it is a
  separator or a character to look for, and a longer one is another task;
- strategy ``main`` grows the largest argument only (by repetition), keeping the others
  (a pattern, a key, an index stays what the task tied it to); strategy ``along`` grows
  the containers by repetition and multiplies each integer next to them by the factor
  (an index or a count that scales with its container: reversing the first ``k``
  elements, splitting into ``n`` parts), so that the relations between them hold;
- strategy ``shift`` tiles each list that holds integers with every copy's integers
  (at any depth) moved past the seed's range (copy ``c`` adds ``c`` times the list's
  span): the share of distinct values stays the seed's, where ``repeat`` keeps the seed's
  values and ``fresh`` draws from their range, so that code whose cost grows with the
  number of distinct values (a count per distinct value, a dict of sublists) is
  exercised. Its values leave the seed's range, so a side that fails on them is not held
  to it (:func:`~prefjudge.judge.facts.perf_inputs.measure.choose_family`);
- strategy ``inner`` grows what a list holds (each string repeated, each list tiled) and
  keeps the list's length: a pair of strings stays a pair (HumanEval/119's two strings of
  parentheses, whose contract refuses a third). It is tried only for a task where no
  other family grows (:func:`~prefjudge.judge.facts.perf_inputs.accept.build_perf_inputs`);
- **numbers** alone grow only where an input holds nothing else (strategy ``near``): each
  integer is multiplied by the factor, and :data:`NEAR_WINDOW` neighbours of the product
  are offered (``n*f``, ``n*f+1``, ...), among which acceptance keeps the one the
  reference works hardest on (the one value of a numeric task that is slow, a prime for a
  primality test, is found without knowing the task). Integers next to containers are
  left alone: they are usually indices or counts tied to the container.

Every draw is seeded by the task, the strategy and the factor (:func:`variants`), so the
same recipe gives the same inputs again, byte for byte.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

STRATEGIES = ("repeat", "fresh", "main", "along", "shift", "near", "inner")
NEAR_WINDOW = 16
"""Neighbours of a scaled number offered for acceptance to choose among."""
ATOM_TYPES = (int, float, str, bool, type(None))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_matrix(value: Any) -> bool:
    """Whether ``value`` is a list of equal-length rows (at least one) of plain values."""
    if not (isinstance(value, list) and value):
        return False
    width = len(value[0]) if isinstance(value[0], list) else -1
    return width >= 1 and all(
        isinstance(row, list) and len(row) == width
        and all(isinstance(cell, ATOM_TYPES) for cell in row) for row in value)


def _growable(arg: Any) -> bool:
    return isinstance(arg, (list, dict)) or (isinstance(arg, str) and len(arg) > 1)


def _scalable_int(arg: Any) -> bool:
    return _is_int(arg) and abs(arg) >= 2


def strategies_for(inp: list[Any]) -> tuple[str, ...]:
    """The strategies that grow ``inp``: containers if it holds any, else its numbers.

    ``main`` only where more than one argument could grow; ``along`` only where an
    integer lies next to the containers.
    """
    growable = [arg for arg in inp if _growable(arg)]
    if growable:
        main = ("main",) if sum(1 for arg in inp if isinstance(arg, (list, dict, str))) > 1 \
            else ()
        along = ("along",) if any(_scalable_int(arg) for arg in inp) else ()
        shift = ("shift",) if any(_shiftable(arg) for arg in inp) else ()
        return ("repeat", "fresh", *main, *along, *shift)
    if any(_scalable_int(arg) for arg in inp):
        return ("near",)
    return ()


def _side(factor: int) -> int:
    return max(1, round(math.sqrt(factor)))


def _joined(text: str, factor: int) -> str:
    for separator in (" ", ",", "\n"):
        if separator in text.strip():
            return separator.join([text] * factor)
    return text * factor


def _fresh_atoms(pool: list[Any], count: int, rng: random.Random) -> list[Any]:
    """``count`` values like ``pool``'s: integers from its range, else its own values."""
    if pool and all(_is_int(item) for item in pool):
        low, high = min(pool), max(pool)
        if len(set(pool)) == len(pool) and len(pool) > 1:  # distinct: keep them distinct
            span = max(high - low + 1, count)
            drawn = rng.sample(range(low, low + span), count)
        else:
            drawn = [rng.randint(low, high) for _ in range(count)]
        if pool == sorted(pool):
            drawn.sort()
        return drawn
    if pool and all(isinstance(item, float) for item in pool):
        low, high = min(pool), max(pool)
        drawn = [rng.uniform(low, high) for _ in range(count)]
        return sorted(drawn) if pool == sorted(pool) else drawn
    return [json.loads(json.dumps(rng.choice(pool))) for _ in range(count)] if pool else []


def _grow_matrix(rows: list[list[Any]], factor: int, strategy: str,
                 rng: random.Random) -> list[list[Any]]:
    side = _side(factor)
    if strategy == "repeat":
        return [list(row) * side for row in rows] * side if side > 1 else [
            list(row) for row in rows]
    cells = [cell for row in rows for cell in row]
    width, height = len(rows[0]) * side, len(rows) * side
    drawn = _fresh_atoms(cells, width * height, rng) if len(set(map(repr, cells))) > 1 \
        else cells[:1] * (width * height)
    return [drawn[row * width:(row + 1) * width] for row in range(height)]


def _ints_in(value: Any) -> list[int]:
    """Every integer in ``value`` (lists at any depth; booleans are not integers here)."""
    if _is_int(value):
        return [value]
    if isinstance(value, list):
        return [number for item in value for number in _ints_in(item)]
    return []


def inner_strategies(inp: list[Any]) -> tuple[str, ...]:
    """``("inner",)`` where a list argument holds strings or lists to grow, else ``()``."""
    return ("inner",) if any(isinstance(arg, list) and arg and any(
        isinstance(item, (str, list)) and item for item in arg) for arg in inp) else ()


def _grown_inside(value: list[Any], factor: int) -> list[Any]:
    """``value`` with each string repeated and each list tiled ``factor``-fold, its length kept."""
    return [item * factor if isinstance(item, str) else
            json.loads(json.dumps(item * factor)) if isinstance(item, list) else
            json.loads(json.dumps(item)) for item in value]


def _shiftable(arg: Any) -> bool:
    """Whether ``shift`` grows ``arg``: a list holding integers, not a matrix (kept square)."""
    return isinstance(arg, list) and not is_matrix(arg) and bool(_ints_in(arg))


def _moved(value: Any, offset: int) -> Any:
    """``value`` with every integer in it (lists at any depth) moved by ``offset``."""
    if _is_int(value):
        return value + offset
    if isinstance(value, list):
        return [_moved(item, offset) for item in value]
    return json.loads(json.dumps(value))


def _shifted(value: list[Any], factor: int) -> list[Any]:
    """``factor`` copies of ``value``, copy ``c``'s integers moved by ``c`` spans."""
    numbers = _ints_in(value)
    span = max(numbers) - min(numbers) + 1
    return [item for copy in range(factor) for item in _moved(value, copy * span)]


def _grow_dict(mapping: dict[str, Any], factor: int) -> dict[str, Any]:
    grown = dict(mapping)
    keys = list(mapping)
    for copy in range(1, factor):
        for key in keys:
            grown[f"{key}{copy}"] = mapping[key]
    return grown


def grow_value(value: Any, factor: int, strategy: str, rng: random.Random) -> Any:
    """``value`` grown ``factor``-fold by ``strategy`` (``repeat`` or ``fresh``).

    Numbers, booleans and None come back as they are (see :data:`STRATEGIES`).
    """
    if factor <= 1:
        return value
    if isinstance(value, str):
        if strategy == "repeat" or len(set(value)) < 2:
            return _joined(value, factor)
        alphabet = sorted(set(value))
        return "".join(rng.choice(alphabet) for _ in range(len(value) * factor))
    if isinstance(value, dict):
        return _grow_dict(value, factor) if all(isinstance(k, str) for k in value) else value
    if not isinstance(value, list) or not value:
        return value
    if is_matrix(value):
        return _grow_matrix(value, factor, strategy, rng)
    if strategy == "repeat":
        return json.loads(json.dumps(value * factor))
    return _fresh_atoms(value, len(value) * factor, rng)


def _near(inp: list[Any], factor: int) -> list[list[Any]]:
    """The :data:`NEAR_WINDOW` inputs next to ``inp`` with every integer ``factor``-fold."""
    out = []
    for offset in range(NEAR_WINDOW):
        out.append([arg * factor + (offset if arg >= 0 else -offset)
                    if _is_int(arg) and abs(arg) >= 2 else
                    arg * factor if isinstance(arg, float) else arg for arg in inp])
    return out


def variants(task_id: str, inp: list[Any], factor: int, strategy: str) -> list[list[Any]]:
    """The inputs ``strategy`` offers at ``factor`` for seed input ``inp`` (seeded).

    Args:
        task_id: The task (part of the seed).
        inp: The seed input: a list of positional arguments, as the task stores it.
        factor: How many times larger (1: the seed itself, or its near neighbours).
        strategy: One of :data:`STRATEGIES`.

    Returns:
        :data:`NEAR_WINDOW` inputs for ``near``, one for the others; each a new list (the
        seed is never changed).
    """
    if strategy == "near":
        return _near(inp, factor)
    rng = random.Random(f"{task_id}|{strategy}|{factor}")
    if strategy == "main":
        sizes = [len(json.dumps(arg)) if isinstance(arg, (list, dict, str)) else -1
                 for arg in inp]
        largest = sizes.index(max(sizes))
        return [[grow_value(arg, factor, "repeat", rng) if slot == largest else arg
                 for slot, arg in enumerate(inp)]]
    kept = len([arg for arg in inp if isinstance(arg, (list, dict, str))]) > 1
    grown = []
    for arg in inp:
        if strategy == "along" and _scalable_int(arg):
            grown.append(arg * factor)
        elif strategy == "inner":
            grown.append(_grown_inside(arg, factor) if isinstance(arg, list) else
                         json.loads(json.dumps(arg)))
        elif strategy == "shift" and _shiftable(arg):
            grown.append(_shifted(arg, factor))
        elif kept and isinstance(arg, str) and len(arg) <= 1:
            grown.append(arg)  # a character next to other arguments
        else:
            grown.append(grow_value(arg, factor, "repeat" if strategy in ("along", "shift")
                                    else strategy, rng))
    return [grown]


def input_digest(inp: Any) -> str:
    """SHA-256 of an input's canonical JSON (how a regenerated input is checked)."""
    import hashlib

    text = json.dumps(inp, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
