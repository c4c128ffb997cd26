"""Where the data files (rubrics, guidance) live, and which names may become paths.

:func:`check_path_name` is the one rule for a user-given name that prefjudge joins into a
path (an experiment, model or persona name; a built-in persona looked up by name): every
place that does so calls it, so no name can leave its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent

PATH_NAME_MAX = 80
"""The longest name :func:`check_path_name` accepts.

A model pair's file holds two names with their settings' hashes
(``<a>-<hash>__<b>-<hash>.jsonl``); with its journal's suffixes it stays under the 255
bytes a file name may have.
"""

_PATH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_NAME_CHAR = re.compile(r"[A-Za-z0-9._-]")


def check_path_name(name: str) -> str:
    """Return ``name`` when it may become a file or folder name; say why not otherwise.

    The rule: 1 to :data:`PATH_NAME_MAX` ASCII letters, digits, ``.``, ``_`` and ``-``,
    the first a letter or digit. So a name is never empty, ``.`` or ``..``, holds no
    ``/``, backslash, drive letter, NUL, space or control character, cannot pass for an
    option (``-x``) or a hidden file (``.x``), and no Unicode look-alike (a Cyrillic
    ``а``, a fullwidth ``／``) passes for an ASCII one.

    Args:
        name: The name, as the user gave it.

    Returns:
        ``name``, unchanged.

    Raises:
        ValueError: When the rule refuses it (the message says what is wrong).
    """
    if _PATH_NAME.fullmatch(name) and len(name) <= PATH_NAME_MAX:
        return name
    raise ValueError(f"{_path_name_problem(name)}; a name that becomes a file name is 1 to "
                     f"{PATH_NAME_MAX} ASCII letters, digits, '.', '_' and '-', starting with "
                     "a letter or digit")


def _path_name_problem(name: str) -> str:
    """What :func:`check_path_name` refuses in ``name`` (the first problem found)."""
    if not name:
        return "empty"
    if len(name) > PATH_NAME_MAX:
        return f"too long ({len(name)} characters)"
    bad = next((char for char in name if not _NAME_CHAR.fullmatch(char)), None)
    if bad is not None:
        return f"{bad!r} (U+{ord(bad):04X}) is not allowed in {name!r}"
    return f"{name!r} starts with {name[0]!r}"


def data_dir(name: str) -> Path:
    """Return the directory holding the project's ``name`` data (``rubrics``, ``guidance``).

    A source checkout (``pip install -e .``) reads the top-level folder; a wheel ships
    a copy under ``prefjudge/_data``.

    Args:
        name: Top-level data folder name.

    Returns:
        The existing directory.

    Raises:
        FileNotFoundError: When neither location exists.
    """
    for candidate in (_PACKAGE_DIR.parents[1] / name, _PACKAGE_DIR / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"prefjudge data folder {name!r} not found next to {_PACKAGE_DIR}")
