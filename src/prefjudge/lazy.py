"""Lazy package names: a package publishes names that are imported from their modules on first use.

A package whose ``__init__`` would import heavy modules (the sandbox's runners, the
backends' clients, the record models) keeps its names importable as before
(``from prefjudge.sandbox import run_one``) while importing the package stays cheap: its
module ``__getattr__`` is :func:`lazy_getattr`'s, which imports a name's home module the
first time the name is asked for and keeps the value in the package from then on.

:func:`heavy_imports` holds the cyclic garbage collector off while a command's modules
and its model client (``openai``: thousands of classes) are imported, so that the
collector does not scan the growing heap again and again while nothing is garbage; in
the command line's own process (:func:`own_process`) it then freezes what they made.
:func:`long_lived` does the same for any block that makes objects meant to last (reading
a generations file), and :func:`collector_paused` holds it off for a block that makes
garbage but no cycles (verifying).
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
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


_START_UP = {"freeze": False}
"""Whether :func:`heavy_imports` freezes what it imported (set by :func:`own_process`)."""


def own_process() -> None:
    """Say that this process is prefjudge's own (the command line run as a program).

    From then on :func:`long_lived` (and :func:`heavy_imports`) also freezes
    (``gc.freeze``) the objects made so far: the collector, including the one at
    interpreter exit, no longer scans the modules and classes start-up made (nor the
    records a command reads). Only the command line's own process says so: in a process
    of someone else's (a test runner, a notebook) nothing is frozen.
    """
    _START_UP["freeze"] = True


@contextmanager
def heavy_imports(*modules: str) -> Iterator[None]:
    """Hold the cyclic garbage collector off for a block of imports, then turn it back on.

    Imports make long-lived objects (modules, classes, functions), not garbage: a full
    collection during them scans the whole heap and frees nothing, and the more modules
    are loaded the more often one runs. The block is a :func:`long_lived` one.

    Args:
        modules: The modules the block imports: when all are loaded already, the block
            runs as it is (nothing held off, nothing frozen).
    """
    if modules and all(name in sys.modules for name in modules):
        yield
        return
    with long_lived():
        yield


@contextmanager
def long_lived() -> Iterator[None]:
    """Hold the cyclic garbage collector off for a block that makes objects meant to last.

    For blocks that make many objects and no garbage cycles worth finding: imports, or
    reading a generations file into its records (about 100 objects per generation, kept
    to the end of the run). Reference counting still frees everything as usual; cycles
    made in the block are left to the collections after it. In the command line's own
    process (:func:`own_process`) what exists at the block's end is then frozen
    (``gc.freeze``): later collections skip it (without that, the first ones after the
    block would each walk every object it made, 0.3 s per 10,000 generations read).
    Elsewhere the objects are left to the collector as usual. Nested blocks, or a block
    run while the collector is off already, change nothing.
    """
    with _collector_off(freeze=_START_UP["freeze"]):
        yield


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off for a block whose garbage has no cycles.

    For hot loops that make and drop many objects, none in a cycle (verifying responses:
    syntax trees, check results; on 10,000 real generations not one cycle was left), so
    that reference counting alone frees them: the collector would only walk whatever is
    alive meanwhile, again and again (a fifth of :func:`verify_batch
    <prefjudge.scoring.verify.engine.verify_batch>`'s time). Nothing is frozen; the first
    collections after the block look at what it left alive, as usual. The collector is
    off for the whole process meanwhile: other threads' cycles wait for the block's end.
    Nested blocks, or a block run while the collector is off already, change nothing.
    """
    with _collector_off(freeze=False):
        yield


@contextmanager
def _collector_off(*, freeze: bool) -> Iterator[None]:
    """The collector off for the block (unless it was off already), then frozen if asked."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        gc.enable()
