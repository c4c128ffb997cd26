"""The backend registry: each backend kind's name, factory, required extra and options.

A backend kind is one module that calls :func:`register_backend` with a
:class:`BackendKindSpec` (the built-in kinds: :mod:`.kinds`). Everything that lists
backend kinds reads them from here: :data:`BACKEND_KINDS` (the ``--backend`` choices and
the configuration's check), :func:`prefjudge.backends.create_backend` (the factory) and
:func:`prefjudge.backends.extras.missing_extra` (what to install).

This module imports nothing but the standard library; its names are a live view
(:mod:`prefjudge.live_views`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from prefjudge.live_views import LiveSequence

if TYPE_CHECKING:
    from prefjudge.backends.base import Backend
    from prefjudge.backends.cache import ResponseCache

class Needs(NamedTuple):
    """What one backend imports, in words, and how to install it."""

    module: str
    what: str
    install: str


Factory = Callable[[Any, "ResponseCache | None"], "Backend"]
# The first argument is a prefjudge.backends.config.BackendConfig (not imported: config
# imports this module).
"""``factory(config, cache)``: the backend a configuration names (imports its libraries
only when called; raises ``BackendError`` on an incomplete configuration)."""


@dataclass(frozen=True)
class BackendKindSpec:
    """One backend kind.

    Attributes:
        name: The kind (``--backend NAME``, ``kind = "NAME"`` in ``prefjudge.toml``).
        factory: Builds the backend (:data:`Factory`).
        needs: The top-level module it cannot run without and how to install it (checked
            before the factory runs), or None.
        options: The :class:`~prefjudge.backends.config.BackendConfig` fields it reads.
        summary: One line for ``--help`` and the documentation.
    """

    name: str
    factory: Factory
    needs: Needs | None = None
    options: tuple[str, ...] = ()
    summary: str = ""


_KINDS: dict[str, BackendKindSpec] = {}


def register_backend(spec: BackendKindSpec, *, replace: bool = False) -> BackendKindSpec:
    """Add a backend kind to the registry.

    Args:
        spec: The kind.
        replace: Allow replacing a kind already registered under the same name.

    Returns:
        ``spec``.

    Raises:
        ValueError: When the name is empty or taken (and not ``replace``).
    """
    if not spec.name:
        raise ValueError("a backend kind needs a name")
    if spec.name in _KINDS and not replace:
        raise ValueError(f"backend kind {spec.name!r} is already registered")
    _KINDS[spec.name] = spec
    return spec


def unregister_backend(name: str) -> None:
    """Remove a backend kind (for tests that register their own); unknown names are ignored."""
    _KINDS.pop(name, None)


def backend_kind(name: str) -> BackendKindSpec | None:
    """The registered kind named ``name``, or None."""
    return _KINDS.get(name)


def backend_kinds() -> tuple[BackendKindSpec, ...]:
    """Every registered kind, in registration order."""
    return tuple(_KINDS.values())


BACKEND_KINDS: Sequence[str] = LiveSequence(lambda: _KINDS)
"""The registered kind names, in registration order (a live view of the registry)."""



def literal_choices(names: Iterable[str]) -> str:
    """``'a', 'b' or 'c'``: names as pydantic lists a literal's choices in its errors.

    So a configuration checked against a registry (a ``str`` field with a validator) words
    a wrong name exactly as a ``Literal`` of the names did.
    """
    quoted = [repr(name) for name in names]
    if len(quoted) < 2:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"
