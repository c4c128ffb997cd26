"""Where the data files (rubrics, guidance) live, installed or in a source tree."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


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
