"""The judge-method registry: each judging method's name, class and traits.

A judging method is a :class:`~prefjudge.judge.common.JudgeMethod` subclass that
registers itself under its name (:func:`judge_method` as a class decorator, or
:func:`register_method`); what it needs and costs are its class attributes, read by
:func:`method_traits`. A method whose module is costly to import (``evidence`` and ``hybrid``
pull the sandbox and the verifier) registers its name and traits alone
(:func:`register_lazy_method`): its class is imported when :data:`METHODS` is first asked
for it, so listing methods and reading their traits import nothing of it. Every built-in
method is registered so (:mod:`.methods_builtin`). Everything that
lists methods reads them from here:
:data:`METHODS` (the ``--method`` choices, :func:`prefjudge.judge.judge_pairs`),
:data:`MODEL_METHODS` (``--fallback``, what ``hybrid`` may fall back on) and
:data:`~prefjudge.judge.prompts.METHOD_STAGES` (each method's ``template_stages``).

This module imports nothing but the standard library and the registries' shared live views.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from prefjudge.live_views import LiveMapping, LiveSequence

CallsBound = Literal["", "≥", "≤", "about"]
"""How planned model calls bound the real ones: ``""`` exact, ``"≥"`` a lower bound,
``"≤"`` an upper bound, ``"about"`` neither."""

C = TypeVar("C", bound=type)


@dataclass(frozen=True)
class MethodTraits:
    """What a judging method needs and what it costs (see :func:`method_traits`).

    Attributes:
        needs_model: It asks a judge model at all.
        needs_tests: It runs the pairs' tests (``evidence``, ``hybrid``): ``--tests`` and
            ``--criterion`` apply to it.
        model_method: Whose model calls are made: the method itself, its fallback
            (``hybrid``), or None when no model is asked (``evidence``).
        calls_per_pair: Model calls per judged pair (a lower bound for CriterAlign, whose
            tie refinement adds calls).
        calls_bound: How planned calls (pairs × ``calls_per_pair``) bound the real ones.
    """

    needs_model: bool
    needs_tests: bool
    model_method: str | None
    calls_per_pair: int
    calls_bound: CallsBound


TRAITS = ("needs_model", "needs_tests", "uses_fallback", "calls_per_pair", "calls_bound",
          "template_stages")
"""The class attributes a method's traits are read from (those of ``JudgeMethod``)."""


@dataclass(frozen=True)
class LazyMethod:
    """A method registered by name and traits; its class is imported at its first use.

    The attributes mirror the trait class attributes of
    :class:`~prefjudge.judge.common.JudgeMethod` (the same defaults), so every reader of
    traits reads an entry as it reads a class; :meth:`load` checks that the class, once
    imported, declares the same ones.

    Attributes:
        target: Where the class is: ``"package.module:ClassName"``.
    """

    target: str
    needs_model: bool = True
    needs_tests: bool = False
    uses_fallback: bool = False
    calls_per_pair: int = 0
    calls_bound: CallsBound = ""
    template_stages: tuple[str, ...] = ()

    def load(self) -> type[Any]:
        """Import the class and check its traits against the registered ones.

        Returns:
            The class.

        Raises:
            TypeError: When the class's traits differ from the registered ones.
        """
        module, _, attr = self.target.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        self.check(cls)
        return cls

    def check(self, cls: type[Any]) -> None:
        """Refuse a class whose traits differ from the registered ones.

        Raises:
            TypeError: Naming the traits that differ.
        """
        differ = [t for t in TRAITS if _as_tuple(getattr(cls, t)) != _as_tuple(getattr(self, t))]
        if differ:
            raise TypeError(f"{self.target}: traits {', '.join(differ)} differ from the "
                            "ones it was registered with")

    def is_for(self, cls: type[Any]) -> bool:
        """Whether ``cls`` is the class this entry names (its module and name)."""
        return self.target == f"{cls.__module__}:{cls.__qualname__}"


def _as_tuple(value: Any) -> Any:
    """A list as a tuple (template stages compare alike); any other value as it is."""
    return tuple(value) if isinstance(value, list) else value


class MethodRegistry(dict[str, Any]):
    """The registry: method classes (or :class:`LazyMethod` entries) by name.

    ``METHODS[name]`` (and ``get``) always gives a class: a lazy entry is imported then and
    replaced by its class. Iterating ``items()``/``values()`` gives the entries as they are
    (a lazy one reads its traits like a class), so listing methods imports nothing.
    """

    def __getitem__(self, name: str) -> type[Any]:
        entry = super().__getitem__(name)
        if isinstance(entry, LazyMethod):
            entry = entry.load()
            super().__setitem__(name, entry)
        return entry

    def get(self, name: str, default: Any = None) -> Any:  # noqa: D102 - dict.get, resolved
        return self[name] if name in self else default


METHODS: MethodRegistry = MethodRegistry()
"""The registered methods' classes by name, in registration order (the registry itself)."""


def register_method(name: str, cls: type[Any], *, replace: bool = False) -> type[Any]:
    """Register a judging method class under ``name``.

    Args:
        name: The method's name (``--method NAME``, ``Verdict.method``).
        cls: A :class:`~prefjudge.judge.common.JudgeMethod` subclass.
        replace: Allow replacing a method already registered under the same name.

    A class registered lazily under ``name`` (:func:`register_lazy_method`) that registers
    itself when its module is imported (``@judge_method``) takes its entry's place, once its
    traits are checked against the entry's.

    Returns:
        ``cls``.

    Raises:
        ValueError: When the name is empty or taken (and not ``replace``).
        TypeError: When ``cls`` is the class of a lazy entry whose traits differ from its own.
    """
    if not name:
        raise ValueError("a judging method needs a name")
    entry = dict.get(METHODS, name)
    if isinstance(entry, LazyMethod) and not isinstance(cls, LazyMethod) and entry.is_for(cls):
        entry.check(cls)
    elif name in METHODS and not replace:
        raise ValueError(f"judging method {name!r} is already registered")
    dict.__setitem__(METHODS, name, cls)
    return cls


def judge_method(name: str) -> Callable[[C], C]:
    """Class decorator: register the decorated judging method under ``name``."""

    def register(cls: C) -> C:
        register_method(name, cls)
        return cls

    return register


def register_lazy_method(name: str, target: str, **traits: Any) -> LazyMethod:
    """Register a method by name and traits; its class is imported when first used.

    Args:
        name: The method's name.
        target: Where its class is: ``"package.module:ClassName"``.
        **traits: Its trait class attributes (:data:`TRAITS`; the others take
            :class:`LazyMethod`'s defaults, those of ``JudgeMethod``).

    Returns:
        The entry.

    Raises:
        ValueError: When the name is empty or taken.
    """
    entry = LazyMethod(target, **traits)
    register_method(name, entry)  # type: ignore[arg-type]
    return entry


def unregister_method(name: str) -> None:
    """Remove a method (for tests that register their own); unknown names are ignored."""
    METHODS.pop(name, None)


def is_model_method(cls: type[Any]) -> bool:
    """Whether a method only asks a judge model (no tests, no fallback): a fallback."""
    return bool(cls.needs_model and not cls.needs_tests and not cls.uses_fallback)


def _model_method_names() -> list[str]:
    return [name for name, entry in METHODS.items() if is_model_method(entry)]


def _model_methods() -> dict[str, type[Any]]:
    return {name: METHODS[name] for name in _model_method_names()}


MODEL_METHOD_CLASSES: Mapping[str, type[Any]] = LiveMapping(_model_methods)
"""The model-only methods' classes by name: what ``hybrid`` may fall back on (asking for
them imports them)."""
MODEL_METHODS: Sequence[str] = LiveSequence(_model_method_names)
"""The methods that only ask a judge model (``evidence`` asks none; ``hybrid`` asks one only
for the pairs the evidence leaves undecided): what ``hybrid`` may fall back on."""
METHOD_NAMES: Sequence[str] = LiveSequence(lambda: METHODS)
"""The registered method names, in registration order (a live view)."""


def _combined(own: CallsBound, inner: CallsBound) -> CallsBound:
    """How calls are bounded when a method's own bound applies to a fallback's."""
    if not inner or inner == own:
        return own
    return inner if not own else "about"


def method_traits(method: str, fallback: str = "criteralign") -> MethodTraits:
    """What a judging method needs (a model, tests) and what its model calls cost.

    Read from the method's class attributes (:class:`~prefjudge.judge.common.JudgeMethod`);
    a method whose model calls are its fallback's (``hybrid``) takes the fallback's calls
    per pair, bounded from above by its own (fewer pairs reach the model) and so only
    ``about`` right when the fallback's own count is a lower bound (CriterAlign).

    Args:
        method: A name of :data:`METHODS`.
        fallback: The model-based method ``hybrid`` falls back on (ignored by the others).

    Returns:
        The traits.

    Raises:
        ValueError: On an unknown method, or a fallback that is not a model-based method.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
    cls = dict.__getitem__(METHODS, method)  # a lazy entry reads as its class: not imported
    if cls.uses_fallback:
        if fallback not in MODEL_METHODS:
            raise ValueError(f"{method}: the fallback must be a model-based method "
                             f"({', '.join(MODEL_METHODS)}), not {fallback!r}")
        inner = method_traits(fallback)
        return MethodTraits(
            needs_model=True,
            needs_tests=cls.needs_tests,
            model_method=inner.model_method,
            calls_per_pair=inner.calls_per_pair,
            calls_bound=_combined(cls.calls_bound, inner.calls_bound),
        )
    return MethodTraits(
        needs_model=cls.needs_model,
        needs_tests=cls.needs_tests,
        model_method=method if cls.needs_model else None,
        calls_per_pair=cls.calls_per_pair,
        calls_bound=cls.calls_bound,
    )


def check_method(name: Any, *, model_only: bool = False) -> str:
    """``name`` when it is a registered method (a model-only one with ``model_only``).

    For configuration checks (``[judge] method``, ``fallback``).

    Raises:
        ValueError: Naming the registered choices.
    """
    names = MODEL_METHODS if model_only else METHOD_NAMES
    if name not in names:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(names)}")
    return name


def _stages() -> dict[str, tuple[str, ...]]:
    return {name: tuple(cls.template_stages) for name, cls in METHODS.items()
            if getattr(cls, "template_stages", ())}


METHOD_STAGES: Mapping[str, tuple[str, ...]] = LiveMapping(_stages)
"""The templates each judging method renders, by method (re-exported by
:mod:`prefjudge.judge.prompts`)."""
