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
- ``t`` is the name of the output's original type (EvalPlus compares types before a
  tolerance check), found by identity among the types captured before any untrusted code
  ran (:func:`capture_types`); any other class is named ``?module.qualname``, a name no
  captured type has, so a class that calls itself ``builtins.float`` is not a float.

No pickle anywhere: what comes back is JSON, read with depth and size limits. prefjudge
reads it with :func:`load`, which never builds a set or dict out of what came back (their
members could all hash alike, and building one would take time quadratic in their number):
sets, frozensets and dicts come back as :class:`Unordered` and are compared through their
canonical form (:func:`normal`, members sorted by their bytes).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
from typing import Any

# The names of an output's type (re-exported from _pj_types, a module of their own).
if __package__:  # imported by prefjudge, outside the sandbox
    from prefjudge.sandbox.child._pj_types import TYPE_NAME_MAX as TYPE_NAME_MAX
    from prefjudge.sandbox.child._pj_types import UNKNOWN_TYPE_MARK as UNKNOWN_TYPE_MARK
    from prefjudge.sandbox.child._pj_types import capture_types as capture_types
    from prefjudge.sandbox.child._pj_types import type_name as type_name
else:  # the harness's copy, inside the sandbox: its own directory is on sys.path
    from _pj_types import TYPE_NAME_MAX as TYPE_NAME_MAX
    from _pj_types import UNKNOWN_TYPE_MARK as UNKNOWN_TYPE_MARK
    from _pj_types import capture_types as capture_types
    from _pj_types import type_name as type_name

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
    needs_normal = kind is bool or not isinstance(value, (int, str, bytes, list, tuple))
    if notes is not None and needs_normal:  # a bool too: True == 1, as only normal() says
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


class _TooLong(Exception):
    """The tagged JSON text outgrew its budget."""


quote = json.encoder.encode_basestring_ascii
"""A string as JSON text, as ``json.dumps`` writes it (its own C function)."""


def tagged_text(value: Any, budget: int = INLINE_MAX) -> str | None:
    """``json.dumps(encode(value))``, built directly, or None past ``budget`` characters.

    The same text, character for character, in a fraction of the time: the per-output
    cost of a run that returns thousands of small values. A value whose text would be
    longer than ``budget`` is given up on as soon as that is known (a long list or string
    before any of it is written), so a huge output costs nothing here.

    Args:
        value: Plain data (:func:`to_plain`'s copy).
        budget: Most characters of text to build.

    Returns:
        The tagged JSON text, or None when it is longer than ``budget`` or nested deeper
        than :data:`MAX_DEPTH`.
    """
    try:
        text = _text(value, budget, 0)
    except _TooLong:
        return None
    return text if len(text) <= budget else None


def _text(value: Any, budget: int, depth: int) -> str:
    kind = type(value)
    if kind is int:
        if value.bit_length() > 4 * budget:
            raise _TooLong
        return f'["i", "{value:x}"]'
    if kind is str:
        if len(value) > budget:
            raise _TooLong
        return '["s", ' + quote(value) + "]"
    if kind is bool:
        return '["b", 1]' if value else '["b", 0]'
    if value is None:
        return '["n"]'
    if kind is float:
        return f'["f", "{value!r}"]'
    if kind in _CONTAINER_TAGS or kind is dict:
        if depth >= MAX_DEPTH or 4 * len(value) > budget:  # each member takes 4+ characters
            raise _TooLong
        inner, parts, used = depth + 1, [], 0
        if kind is dict:
            for key, item in value.items():
                part = f"[{_text(key, budget, inner)}, {_text(item, budget, inner)}]"
                used += len(part) + 2
                if used > budget:
                    raise _TooLong
                parts.append(part)
            return '["d", [' + ", ".join(parts) + "]]"
        if kind is list or kind is tuple:
            members = set(map(type, value))
            if members == {int}:  # the common case, without a call per member
                text = ", ".join([f'["i", "{item:x}"]' for item in value])
                if len(text) > budget:
                    raise _TooLong
                return f'["{_CONTAINER_TAGS[kind]}", [{text}]]'
            if members == {str} and sum(map(len, value)) <= budget:
                text = ", ".join(['["s", ' + quote(item) + "]" for item in value])
                return f'["{_CONTAINER_TAGS[kind]}", [{text}]]'
        for item in value:
            part = _text(item, budget, inner)
            used += len(part) + 2
            if used > budget:
                raise _TooLong
            parts.append(part)
        return f'["{_CONTAINER_TAGS[kind]}", [' + ", ".join(parts) + "]]"
    if kind is complex:
        return f'["c", "{value.real!r}", "{value.imag!r}"]'
    if kind is bytes:
        if 2 * len(value) > budget:
            raise _TooLong
        return f'["y", "{value.hex()}"]'
    raise NotPlainData(f"the output is a {kind.__qualname__}, not plain data")


class Unordered:
    """A set, frozenset or dict read back by :func:`load`: its members, never hashed.

    A real set or dict built from members that all hash alike (multiples of
    ``2**61 - 1``, say) takes time quadratic in their number; this one only keeps them.
    Two of them are equal when Python would call the real ones equal (``{1, 2.0} ==
    frozenset({2, 1.0})``, ``{1: 'a'} == {1.0: 'a'}``): their canonical forms
    (:func:`normal`, members sorted by their bytes) are compared, in ``n log n``. One
    holding a NaN equals nothing, as a real one read back would (its NaN is a new object).

    Attributes:
        kind: ``set``, ``frozenset`` or ``dict``.
        items: The members as written (for a dict, ``(key, value)`` pairs).
    """

    __slots__ = ("items", "kind")
    __hash__ = None  # type: ignore[assignment]  # never a member of a real set

    def __init__(self, kind: type, items: tuple) -> None:
        """Keep ``items`` (members, or key/value pairs) of a ``kind``."""
        self.kind, self.items = kind, items

    def __eq__(self, other: object) -> bool:
        """Whether the real set or dict of ``other`` would equal this one's."""
        if type(other) is not Unordered:
            return NotImplemented
        try:
            return normal(self) == normal(other)
        except NotPlainData:  # a NaN: equal to nothing
            return False

    def __repr__(self) -> str:
        """As Python shows the real set, frozenset or dict."""
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items) + "}"
        inner = "{" + ", ".join(map(repr, self.items)) + "}" if self.items else ""
        return f"{self.kind.__name__}({inner})" if self.kind is frozenset or not inner else inner


_NOT_SCALAR = object()


def _read_scalar(tag: str, rest: list) -> Any:
    """The scalar a tag stands for, or :data:`_NOT_SCALAR`."""
    if tag == "n" and not rest:
        return None
    if tag == "b" and rest in ([0], [1]):
        return bool(rest[0])
    if len(rest) == 1 and isinstance(rest[0], str):
        text = rest[0]
        if tag == "i":
            return int(text, 16)
        if tag == "f":
            return float(text)
        if tag == "s":
            return text
        if tag == "y":
            return bytes.fromhex(text)
    if tag == "c" and len(rest) == 2 and all(isinstance(part, str) for part in rest):
        return complex(float(rest[0]), float(rest[1]))
    return _NOT_SCALAR


def kind_of(value: Any) -> type:
    """The built-in type a value from :func:`load` stands for (``set`` for a set)."""
    return value.kind if type(value) is Unordered else type(value)


def _check_hashable(value: Any) -> None:
    if not _hashable(value):
        raise TypeError(f"unhashable type: {kind_of(value).__name__!r}")


def _hashable(value: Any) -> bool:
    """Whether a value read back could be a set member or a dict key."""
    kind = type(value)
    if kind is list:
        return False
    if kind is Unordered:
        return value.kind is frozenset
    if kind is tuple:
        return all(map(_hashable, value))
    return True


def _unordered(kind: type, items: tuple, keys: Any) -> Unordered:
    for key in keys:
        _check_hashable(key)
    return Unordered(kind, items)


def _read_container(tag: str, parts: list, depth: int, keep: bool) -> Any:
    """A list, tuple, set, frozenset or dict (as :class:`Unordered` unless ``keep``)."""
    if tag == "d":
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in parts):
            raise ValueError("a dict entry is not a [key, value] pair")
        pairs = tuple((_read(k, depth, keep), _read(v, depth, keep)) for k, v in parts)
        return dict(pairs) if keep else _unordered(dict, pairs, (k for k, _ in pairs))
    kind = _TAG_CONTAINERS[tag]
    members = [_read(part, depth, keep) for part in parts]
    if kind is list:
        return members
    if kind is tuple or keep:
        return kind(members)
    return _unordered(kind, tuple(members), members)


def _read(item: Any, depth: int, keep: bool) -> Any:
    """:func:`decode` (``keep``: real sets and dicts) or :func:`load`."""
    if depth > MAX_DEPTH:
        raise ValueError(f"a value nested more than {MAX_DEPTH} levels deep")
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise ValueError("not a tagged value")
    tag, rest = item[0], item[1:]
    try:
        value = _read_scalar(tag, rest)
        if value is not _NOT_SCALAR:
            return value
        if (tag in _TAG_CONTAINERS or tag == "d") and len(rest) == 1 and isinstance(rest[0], list):
            return _read_container(tag, rest[0], depth + 1, keep)
    except (TypeError, OverflowError) as exc:  # e.g. an unhashable set member
        raise ValueError(str(exc)) from None
    raise ValueError(f"bad tagged value {tag!r}")


def decode(item: Any, depth: int = 0) -> Any:
    """The value :func:`encode` made ``item`` from, with real sets and dicts.

    For trusted data only: building a set or dict takes time quadratic in the number of
    members that hash alike. prefjudge reads what a run wrote with :func:`load`.

    Raises:
        ValueError: ``item`` is not a tagged value (or is nested too deeply).
    """
    return _read(item, depth, keep=True)


def load(item: Any) -> Any:
    """The value :func:`encode` made ``item`` from, sets and dicts as :class:`Unordered`.

    Time and memory linear in the size of ``item``: nothing is hashed. Values compare
    with ``==`` as the real ones would.

    Raises:
        ValueError: ``item`` is not a tagged value (or is nested too deeply, or a set
            member or dict key is a list, set or dict).
    """
    return _read(item, 0, keep=False)


def same_members(a: Any, b: Any) -> bool:
    """``set(a) == set(b)`` for values from :func:`load`, without building either set.

    Raises:
        TypeError: As ``set()`` does: ``a`` or ``b`` is not iterable, or has a member
            that is not hashable.
    """
    first, second = _member_forms(a), _member_forms(b)
    return first is not None and second is not None and first == second


def _members(value: Any) -> Any:
    kind = type(value)
    if kind in (list, tuple, str, bytes):
        return value
    if kind is Unordered:
        return value.items if value.kind is not dict else (key for key, _ in value.items)
    raise TypeError(f"{kind.__name__!r} object is not iterable")


def _member_forms(value: Any) -> list[bytes] | None:
    """The bytes of the distinct members' canonical forms, sorted; None if one is a NaN."""
    members = list(_members(value))
    for member in members:
        _check_hashable(member)
    try:
        forms = [normal(member, 1) for member in members]
    except NotPlainData:  # a NaN: a set holding it equals no other
        return None
    keys = [_bytes(form) for form in forms]
    return [keys[index] for index in _distinct(keys, last=False)]


_SET_MARK = (..., "set")  # no plain value holds an Ellipsis: no output can forge a mark
_DICT_MARK = (..., "dict")


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
    """``value`` (plain, or from :func:`load`) rewritten so that equal values read the same.

    Numbers equal to an int become that int (``True``, ``1.0``, ``1+0j``: ``1``); sets and
    dicts become tuples, marked, of their members in the order of their bytes (members of
    an :class:`Unordered` that are equal count once, a dict key keeping its last value).

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
    if kind is Unordered:
        return _normal_unordered(value, inner)
    return value


def _normal_unordered(value: Unordered, depth: int) -> tuple:
    if value.kind is dict:
        pairs = [(normal(k, depth), normal(v, depth)) for k, v in value.items]
        keys = [_bytes(key) for key, _ in pairs]
        return (_DICT_MARK, *(pairs[index] for index in _distinct(keys, last=True)))
    members = [normal(item, depth) for item in value.items]
    keys = [_bytes(member) for member in members]
    return (_SET_MARK, *(members[index] for index in _distinct(keys, last=False)))


def _distinct(keys: list[bytes], last: bool) -> list[int]:
    """Indexes of ``keys`` in the order of their bytes, one per distinct key.

    Of equal keys, the first written, or the ``last``. Sorting pairs of bytes and index
    never compares anything else: ``n log n`` comparisons of bytes.
    """
    kept: list[int] = []
    previous = None
    for key, index in sorted((key, index) for index, key in enumerate(keys)):
        if key == previous:
            if last:
                kept[-1] = index
            continue
        kept.append(index)
        previous = key
    return kept


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
