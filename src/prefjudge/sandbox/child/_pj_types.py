"""Type names by identity: what an output's original type was, named so no class can forge it.

Standalone, stdlib only, beside ``_pj_plain.py`` (which re-exports these names): the
harness uses it inside the sandbox, prefjudge outside. The built-in types (and numpy's,
when numpy is imported) are captured by identity before any untrusted code runs
(:func:`capture_types`); any other class is named ``?module.qualname``, a name no
captured type has.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

UNKNOWN_TYPE_MARK = "?"  # starts the name of a type that was not captured
TYPE_NAME_MAX = 200
_KNOWN_TYPES: dict[int, str] = {}  # id of a captured type: its name
_KEPT_TYPES: list[type] = []  # the captured types, kept alive so that no other has their id


def capture_types() -> None:
    """Remember the built-in types, and numpy's if numpy is imported, by identity.

    Called when this module is imported and again by the harness just before it runs any
    untrusted code (numpy may have been imported in between): what the code defines
    afterwards, whatever it calls itself, is never taken for one of these types.
    """
    kinds = [type(None), type(NotImplemented), type(Ellipsis)]
    kinds += [kind for kind in vars(builtins).values() if isinstance(kind, type)]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kinds += [kind for kind in vars(numpy).values() if isinstance(kind, type)]
    for kind in kinds:
        if id(kind) not in _KNOWN_TYPES:
            _KNOWN_TYPES[id(kind)] = f"{kind.__module__}.{kind.__qualname__}"
            _KEPT_TYPES.append(kind)


_TYPE_ATTRIBUTES = (type.__dict__["__module__"], type.__dict__["__qualname__"])


def _unknown_type_name(kind: type) -> str:
    """``?module.qualname`` of a type that was not captured.

    Read through ``type``'s own descriptors, so that no method of the class or of its
    metaclass runs; a part that is not a plain string reads ``?``.
    """
    parts = []
    for attribute in _TYPE_ATTRIBUTES:
        try:
            part = attribute.__get__(kind)
        except AttributeError:  # a class whose __module__ was deleted
            part = None
        parts.append(part if type(part) is str else "?")
    return (UNKNOWN_TYPE_MARK + ".".join(parts))[:TYPE_NAME_MAX]


def type_name(value: Any) -> str:
    """The name of ``value``'s type (``builtins.float``, ``numpy.float64``).

    A type captured by :func:`capture_types` is found by identity (never by its name,
    equality or hash, which a class can set). A static type (one defined in C, such as
    numpy's scalars when numpy was imported after the capture) is named as it is: Python
    code can neither define one nor rename it. Any other class is ``?module.qualname``.
    """
    kind = type(value)
    known = _KNOWN_TYPES.get(id(kind))
    if known is not None:
        return known
    if not type.__dict__["__flags__"].__get__(kind) & _HEAP_TYPE:
        return _unknown_type_name(kind)[len(UNKNOWN_TYPE_MARK):]
    return _unknown_type_name(kind)


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class a class statement makes


capture_types()
