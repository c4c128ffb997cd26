"""Writing JSON: one strict writer (``null`` where a number is NaN or infinite)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def _is_numpy_scalar(value: Any) -> bool:
    """Whether ``value`` is a NumPy scalar (told apart without importing NumPy)."""
    return type(value).__module__ == "numpy" and hasattr(value, "item")


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±Infinity) replaced by None, recursively.

    Dicts, lists and tuples are copied; NumPy scalars (``numpy.float32``, ``numpy.int64``,
    ``numpy.bool_``) become the Python numbers they hold. Values JSON cannot hold are left as
    they are for the encoder to refuse.

    Args:
        value: A JSON-able value.

    Returns:
        The same value with ``null`` where a number was not finite.
    """
    if _is_numpy_scalar(value):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item) for item in value]
    return value


def dumps_json(value: Any, *, indent: int | None = None, ensure_ascii: bool = False,
               sort_keys: bool = False, separators: tuple[str, str] | None = None) -> str:
    """Strict JSON text of ``value``: ``null`` where a number is NaN or infinite.

    Python's ``json`` writes bare ``NaN`` and ``Infinity``, which are not JSON (jq,
    JavaScript and most other readers refuse them). Every JSON file prefjudge writes goes
    through here (or :func:`write_json`), so none holds them.

    Args:
        value: A JSON-able value.
        indent: Indentation (None: one line).
        ensure_ascii: Escape non-ASCII characters.
        sort_keys: Sort object keys.
        separators: As for :func:`json.dumps` (``(",", ":")`` for the most compact text).

    Returns:
        The JSON text (no trailing newline).

    Raises:
        TypeError: When ``value`` holds something JSON cannot hold (other than NaN,
            infinities and NumPy scalars).
    """
    options = {"indent": indent, "ensure_ascii": ensure_ascii, "sort_keys": sort_keys,
               "separators": separators, "allow_nan": False}
    try:  # the usual case, at json's own speed: nothing to replace
        return json.dumps(value, **options)
    except (ValueError, TypeError):  # NaN or infinity (ValueError), a NumPy scalar (TypeError)
        return json.dumps(finite_json(value), **options)


def write_json(path: str | os.PathLike[str], value: Any, *, indent: int | None = 2,
               ensure_ascii: bool = False, sort_keys: bool = False) -> Path:
    """Write ``value`` as strict JSON (see :func:`dumps_json`) and a newline to ``path``.

    Args:
        path: The file (replaced when it exists).
        value: A JSON-able value.
        indent: Indentation (None: one line).
        ensure_ascii: Escape non-ASCII characters.
        sort_keys: Sort object keys.

    Returns:
        The path written.
    """
    path = Path(path)
    text = dumps_json(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    path.write_text(text + "\n", encoding="utf-8")
    return path
