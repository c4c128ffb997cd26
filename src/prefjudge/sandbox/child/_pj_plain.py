"""Plain data: how a function's output leaves the sandbox to be compared outside.

Standalone, stdlib only: the harness uses it inside the sandbox, and prefjudge uses the
same functions outside to read what came back.

An output is first copied into exact built-in types (:func:`to_plain`, which never calls
a method the output's own class defines), then sent as a record:

``{"d": sha256, "n": size, "v": tagged value, "t": type name}``

- ``v``, the whole value in a tagged JSON form (:func:`encode`/:func:`decode`), is sent
  when it is small (or when the comparison needs it whole: floats within a tolerance,
  the special oracles), so that outside it is compared exactly as EvalPlus compares;
- ``d`` is the digest of a canonical form (:func:`digest`) in which values Python says are
  equal (``1 == 1.0 == True``, sets in any order, dicts in any order) read the same; large
  outputs (a few tasks return hundreds of MB) are compared by it;
- ``t`` is the module-qualified name of the output's original type (EvalPlus compares
  types before a tolerance check).

No pickle anywhere: what comes back is JSON, read with depth and size limits.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
from typing import Any

MAX_DEPTH = 200
INLINE_MAX = 4096  # characters of tagged JSON sent whole by default
FORCED_INLINE_MAX = 1 << 20  # when the comparison needs the value whole
_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_SIMPLE = frozenset({str, int, bytes, type(None)})
MARSHAL_VERSION = 2  # no back-references and no interning flags: equal values, equal bytes


class NotPlainData(Exception):
    """The output is not made of plain Python data."""


def to_plain(value: Any, depth: int = 0, notes: set[str] | None = None) -> Any:
    """A copy of ``value`` made only of exact built-in types, built without its methods.

    Subclasses of ``int``, ``float``, ``str``, ``bytes`` and of the containers are copied
    through the built-in type's own methods (``int.__index__``, ``dict.items``...), never
    through methods the subclass defines; numpy values go through ``tolist`` and are
    copied again. Anything else is not plain data.

    Args:
        value: The output.
        depth: How deep this call is (for the nesting limit).
        notes: If given, gets ``"normal"`` when the copy holds a bool, float, complex,
            set or dict (values that need :func:`normal` before :func:`digest`).

    Raises:
        NotPlainData: For other types, or nesting deeper than :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise NotPlainData(f"the output is nested more than {MAX_DEPTH} levels deep")
    kind, inner = type(value), depth + 1
    if kind is str or kind is int or kind is bytes or value is None:
        return value
    if kind is list or kind is tuple:
        if _SIMPLE.issuperset(map(type, value)):  # exact members holding nothing: as they are
            return value
        return kind([to_plain(item, inner, notes) for item in value])
    if notes is not None and not isinstance(value, (int, str, bytes, list, tuple)):
        notes.add("normal")
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, complex):
        return complex(complex.__getattribute__(value, "real"),
                       complex.__getattribute__(value, "imag"))
    if isinstance(value, str):
        return str.__getitem__(value, slice(None))
    if isinstance(value, bytes):
        return bytes.__getitem__(value, slice(None))
    if isinstance(value, dict):
        return {to_plain(k, inner, notes): to_plain(v, inner, notes)
                for k, v in dict.items(value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        base = next(t for t in (list, tuple, set, frozenset) if isinstance(value, t))
        return base(to_plain(item, inner, notes) for item in base.__iter__(value))
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):
        return to_plain(value.tolist(), inner, notes)
    raise NotPlainData(f"the output is a {kind.__qualname__}, not plain data")


def type_name(value: Any) -> str:
    """``module.qualname`` of ``value``'s type (``builtins.float``, ``numpy.float64``)."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` (plain data) as JSON-able tagged lists, exactly reversible by :func:`decode`."""
    if depth > MAX_DEPTH:
        raise NotPlainData(f"the output is nested more than {MAX_DEPTH} levels deep")
    kind, inner = type(value), depth + 1
    if value is None:
        return ["n"]
    if kind is bool:
        return ["b", int(value)]
    if kind is int:
        return ["i", format(value, "x")]  # hex: no limit on the number of digits
    if kind is float:
        return ["f", repr(value)]
    if kind is complex:
        return ["c", repr(value.real), repr(value.imag)]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if kind in _CONTAINER_TAGS:
        return [_CONTAINER_TAGS[kind], [encode(item, inner) for item in value]]
    if kind is dict:
        return ["d", [[encode(k, inner), encode(v, inner)] for k, v in value.items()]]
    raise NotPlainData(f"the output is a {kind.__qualname__}, not plain data")


_CONTAINER_TAGS = {list: "l", tuple: "t", set: "S", frozenset: "F"}
_TAG_CONTAINERS = {tag: kind for kind, tag in _CONTAINER_TAGS.items()}


def decode(item: Any, depth: int = 0) -> Any:
    """The value :func:`encode` made ``item`` from.

    Raises:
        ValueError: ``item`` is not a tagged value (or is nested too deeply).
    """
    if depth > MAX_DEPTH:
        raise ValueError(f"a value nested more than {MAX_DEPTH} levels deep")
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise ValueError("not a tagged value")
    tag, rest, inner = item[0], item[1:], depth + 1
    try:
        if tag == "n" and not rest:
            return None
        if tag == "b" and rest in ([0], [1]):
            return bool(rest[0])
        if tag == "i" and len(rest) == 1 and isinstance(rest[0], str):
            return int(rest[0], 16)
        if tag == "f" and len(rest) == 1 and isinstance(rest[0], str):
            return float(rest[0])
        if tag == "c" and len(rest) == 2 and all(isinstance(part, str) for part in rest):
            return complex(float(rest[0]), float(rest[1]))
        if tag == "s" and len(rest) == 1 and isinstance(rest[0], str):
            return rest[0]
        if tag == "y" and len(rest) == 1 and isinstance(rest[0], str):
            return bytes.fromhex(rest[0])
        if tag in _TAG_CONTAINERS and len(rest) == 1 and isinstance(rest[0], list):
            return _TAG_CONTAINERS[tag](decode(part, inner) for part in rest[0])
        if tag == "d" and len(rest) == 1 and isinstance(rest[0], list):
            pairs = rest[0]
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
                raise ValueError("a dict entry is not a [key, value] pair")
            return {decode(k, inner): decode(v, inner) for k, v in pairs}
    except (TypeError, OverflowError) as exc:  # e.g. an unhashable set member
        raise ValueError(str(exc)) from None
    raise ValueError(f"bad tagged value {tag!r}")


_SET_MARK = "\x00prefjudge-set"
_DICT_MARK = "\x00prefjudge-dict"


def _normal_number(value: Any) -> Any:
    """The int, float or complex that stands for a number among all numbers equal to it."""
    if type(value) is complex:
        if value.imag != 0:
            return complex(_normal_number(value.real), _normal_number(value.imag))
        value = value.real
    if type(value) is bool:
        return int(value)
    if type(value) is float:
        if math.isnan(value):
            raise NotPlainData("NaN")  # never equal to another NaN: compared whole instead
        if math.isfinite(value) and value == int(value):
            return int(value)
    return value


def normal(value: Any, depth: int = 0) -> Any:
    """``value`` (plain) rewritten so that values Python calls equal are written the same.

    Numbers equal to an int become that int (``True``, ``1.0``, ``1+0j``: ``1``); sets and
    dicts become tuples, marked, of their members in the order of their bytes.

    Raises:
        NotPlainData: ``value`` holds a NaN, or nests deeper than :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise NotPlainData(f"the output is nested more than {MAX_DEPTH} levels deep")
    kind, inner = type(value), depth + 1
    if kind in (bool, float, complex):
        return _normal_number(value)
    if kind is list or kind is tuple:
        return kind([normal(item, inner) for item in value])
    if kind is set or kind is frozenset:
        return (_SET_MARK, *sorted((normal(item, inner) for item in value), key=_bytes))
    if kind is dict:
        pairs = [(normal(k, inner), normal(v, inner)) for k, v in value.items()]
        return (_DICT_MARK, *sorted(pairs, key=lambda pair: _bytes(pair[0])))
    return value


def _bytes(value: Any) -> bytes:
    return marshal.dumps(value, MARSHAL_VERSION)


def digest(value: Any, simple: bool | None = None) -> tuple[str, int]:
    """SHA-256 of ``value``'s canonical form, and the form's size in bytes.

    The canonical form is ``marshal`` (version 2, which writes equal values as equal bytes)
    of the :func:`normal` form; it is only hashed, never read back. Two plain values
    Python says are equal have the same form, with one exception on purpose: a value
    holding a NaN raises (NaN equals nothing). A list or tuple is hashed member by member,
    so that a large output is never held twice.

    Args:
        value: Plain data.
        simple: Whether ``value`` holds only str, int, bytes, None, lists and tuples (it
            is its own normal form); found out here when None.

    Raises:
        NotPlainData: ``value`` holds a NaN, something not plain, or nests too deeply.
    """
    if simple is None:
        notes: set[str] = set()
        to_plain(value, notes=notes)
        simple = not notes
    hasher, size = hashlib.sha256(), 0
    if type(value) in (list, tuple):
        members = value if simple else [normal(item, 1) for item in value]
        head = b"[" if type(value) is list else b"("
    else:
        members, head = [value if simple else normal(value)], b"="
    hasher.update(head)
    for member in members:
        data = _bytes(member)
        hasher.update(data)
        size += len(data)
    return hasher.hexdigest(), size


def record(
    value: Any, original_type: str, whole: bool = False, simple: bool | None = None
) -> dict[str, Any]:
    """The record of one output (``value`` already plain).

    Its digest, size and original type, and the tagged value itself when small, or when
    ``whole`` and it fits :data:`FORCED_INLINE_MAX`. ``simple`` is :func:`digest`'s.

    Raises:
        NotPlainData: ``value`` is not plain data.
    """
    out: dict[str, Any] = {"t": original_type}
    try:
        out["d"], out["n"] = digest(value, simple)
    except NotPlainData as exc:
        if str(exc) != "NaN":
            raise
        whole = True  # only the whole value can say how a NaN compares
    size = out.get("n", 0)
    limit = FORCED_INLINE_MAX if whole else INLINE_MAX
    if size <= limit:
        tagged = encode(value)
        text = json.dumps(tagged)
        if len(text) <= limit:
            out["v"] = tagged
    if "d" not in out and "v" not in out:
        raise NotPlainData(f"the output holds a NaN and is larger than {limit} characters")
    return out
