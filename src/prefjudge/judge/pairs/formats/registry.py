"""The pair-format registry: each format's name, how it is told, and its readers.

A pair format is one module that calls :func:`register_pair_format` (or decorates its
file loader with :func:`pair_format`) with a :class:`PairFormatSpec`. Everything that
lists pair formats reads them from here: :data:`PAIR_FORMATS`, the ``--pairs-format``
choices (:func:`pair_format_choices`), auto-detection (in registration order, see
:mod:`.detect`) and the converters of hub rows (:func:`~.load.pairs_from_rows`).

A format may also be registered by name before its module is imported
(:func:`register_lazy_pair_format`, as :mod:`.builtin` registers the built-in ones): its
name is in :data:`PAIR_FORMATS` and the choices at once, and its module is imported (and
registers its spec over the entry) when its spec is first asked for (:func:`get_pair_format`,
:func:`pair_formats`), so listing the formats (``--help``) reads no pair file code.

This module imports nothing but the standard library and the registries' shared live
views (:mod:`prefjudge.live_views`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefjudge.live_views import LiveSequence

if TYPE_CHECKING:
    from prefjudge.io import InputIssue
    from prefjudge.records import Pair

Rows = Iterable[tuple[int, "dict[str, Any] | InputIssue"]]
"""``(line or row number, record or issue)`` pairs, as :func:`prefjudge.io.iter_objects`
yields them."""
Loaded = tuple[list["Pair"], list["InputIssue"]]
"""``(pairs, issues)``: the pairs in input order and the rows that could not be used."""
FileLoader = Callable[..., Loaded]
"""``loader(path, *, skip_invalid=False)``: a whole file's pairs (raises ``InputError``
unless ``skip_invalid``)."""
RowsConverter = Callable[[Rows, str, str], Loaded]
"""``convert(rows, where, source)``: rows of a dataset into pairs (``where`` names the rows'
origin in issues, ``source`` is the pairs' ``source`` field); never raises on a bad row."""

PairFormat = str
"""A registered pair format's name (see :data:`PAIR_FORMATS`)."""
AUTO = "auto"
"""The format choice that tells the format from the content."""


@dataclass(frozen=True)
class PairFormatSpec:
    """One pair format: its name, how a file or record in it is recognised, its readers.

    Attributes:
        name: The format's name (``--pairs-format NAME``, ``fmt=NAME``).
        load: Reads a whole file of the format (:data:`FileLoader`).
        convert_rows: Turns dataset rows into pairs (:data:`RowsConverter`); None when
            the format is read from its file only (a CSV).
        json_keys: Whether a JSON record (a JSONL line, a dataset row) is in this format,
            by its keys; None when no JSON record is.
        magic: Leading bytes of a binary file in this format (Parquet's ``PAR1``).
        csv_columns: Header columns that mark a CSV file in this format.
        title: The format's name in messages (``Copilot Arena``).
        file_kind: What its files are, in messages (``CSV``, ``JSONL``).
        summary: One line for the documentation's table of formats.
        rank: Where the format stands in :data:`PAIR_FORMATS` and in detection (lowest
            first; formats of one rank keep their registration order).
    """

    name: str
    load: FileLoader
    convert_rows: RowsConverter | None = None
    json_keys: Callable[[Mapping[str, Any]], bool] | None = None
    magic: bytes | None = None
    csv_columns: tuple[str, ...] = ()
    title: str = ""
    file_kind: str = "JSONL"
    summary: str = ""
    rank: int = 100


@dataclass(frozen=True)
class LazyPairFormat:
    """A format registered by name whose module is not imported yet.

    Attributes:
        name: The format's name.
        module: The module (dotted, absolute) that registers the format's spec on import.
        rank: The spec's rank (its place among the formats before it is imported).
    """

    name: str
    module: str
    rank: int = 100


_FORMATS: dict[str, PairFormatSpec | LazyPairFormat] = {}


def _place(entry: PairFormatSpec | LazyPairFormat) -> None:
    """Put ``entry`` in the registry, every entry in its place by rank."""
    _FORMATS[entry.name] = entry
    ordered = sorted(_FORMATS.values(), key=lambda e: e.rank)  # stable: ties keep their order
    _FORMATS.clear()
    _FORMATS.update((e.name, e) for e in ordered)


def _check_name(name: str, replace: bool) -> None:
    if name == AUTO or not name:
        raise ValueError(f"{name!r} cannot name a pair format")
    if name in _FORMATS and not replace and not isinstance(_FORMATS[name], LazyPairFormat):
        raise ValueError(f"pair format {name!r} is already registered")


def register_pair_format(spec: PairFormatSpec, *, replace: bool = False) -> PairFormatSpec:
    """Add a pair format to the registry, in its place by ``spec.rank``.

    A format registered by name only (:func:`register_lazy_pair_format`) is replaced by its
    spec without ``replace``: that is its module registering itself.

    Args:
        spec: The format.
        replace: Allow replacing a format already registered under the same name.

    Returns:
        ``spec``.

    Raises:
        ValueError: When the name is taken (and not ``replace``) or is ``auto``.
    """
    _check_name(spec.name, replace)
    _place(spec)
    return spec


def register_lazy_pair_format(name: str, module: str, *, rank: int = 100) -> LazyPairFormat:
    """Register a pair format by name; its module is imported when its spec is first used.

    Args:
        name: The format's name.
        module: The module that registers the format's :class:`PairFormatSpec` on import
            (with the same name and rank).
        rank: The spec's rank.

    Returns:
        The entry.

    Raises:
        ValueError: When the name is taken or is ``auto``.
    """
    _check_name(name, False)
    entry = LazyPairFormat(name, module, rank)
    _place(entry)
    return entry


def _resolved(name: str) -> PairFormatSpec | None:
    """The spec registered as ``name``, importing its module when it is registered by name."""
    entry = _FORMATS.get(name)
    if isinstance(entry, LazyPairFormat):
        importlib.import_module(entry.module)
        entry = _FORMATS.get(name)
        if isinstance(entry, LazyPairFormat):
            raise LookupError(f"{entry.module} did not register pair format {name!r}")
    return entry


def unregister_pair_format(name: str) -> None:
    """Remove a pair format (for tests that register their own).

    Args:
        name: The format's name; an unknown name is ignored.
    """
    _FORMATS.pop(name, None)


def pair_format(name: str, **fields: Any) -> Callable[[FileLoader], FileLoader]:
    """Decorate a file loader to register it as the loader of pair format ``name``.

    Args:
        name: The format's name.
        **fields: The other :class:`PairFormatSpec` fields.

    Returns:
        A decorator that registers the loader and returns it unchanged.
    """

    def register(loader: FileLoader) -> FileLoader:
        register_pair_format(PairFormatSpec(name, loader, **fields))
        return loader

    return register


def get_pair_format(name: str) -> PairFormatSpec | None:
    """The registered format named ``name`` (its module imported if need be), or None."""
    return _resolved(name)


def pair_formats() -> tuple[PairFormatSpec, ...]:
    """Every registered format, in detection order (by rank, then registration).

    Formats registered by name have their modules imported first.
    """
    specs = (_resolved(name) for name in list(_FORMATS))
    return tuple(spec for spec in specs if spec is not None)


PAIR_FORMATS: Sequence[str] = LiveSequence(lambda: _FORMATS)
"""The registered format names, in detection order (a live view of the registry)."""


def pair_format_choices() -> Sequence[str]:
    """The ``--pairs-format`` choices: ``auto`` and every registered format (a live view)."""
    return LiveSequence(lambda: _FORMATS, AUTO)


def known_formats_text() -> str:
    """``auto, NAME, ...``: the known format choices, for messages."""
    return ", ".join(pair_format_choices())
