"""Lazy package names: a package publishes names that are imported from their modules on first use.

A package whose ``__init__`` would import heavy modules (the sandbox's runners, the
backends' clients, the record models) keeps its names importable as before
(``from prefjudge.sandbox import run_one``) while importing the package stays cheap: its
module ``__getattr__`` is :func:`lazy_getattr`'s, which imports a name's home module the
first time the name is asked for and keeps the value in the package from then on.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name from its home.

    Args:
        package: The package's ``__name__``.
        homes: Each lazily published name and the module it lives in (dotted, absolute).

    Returns:
        The function to assign to the package's ``__getattr__``: it raises
        ``AttributeError`` for a name it does not know, as a module does.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    __getattr__.__doc__ = f"A name of {package}, imported from its module on first use."
    return __getattr__
