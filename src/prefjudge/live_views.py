"""Live views of a registry: module constants computed anew at every use.

Every registry (task and sample formats, pair formats, judging methods, backend kinds)
publishes its names and tables through these views, so a name registered later (a plug-in,
a test) is in them at once, and readers keep a plain ``Sequence``/``Mapping`` constant.
Standard library only: the command line reads them for ``--help``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar, overload

T = TypeVar("T")
V = TypeVar("V")


class LiveSequence(Sequence[T]):
    """A sequence whose items are ``source()``'s, read anew at every use.

    Args:
        source: Returns the current items, in order.
        head: Items that come first (``auto``).
    """

    def __init__(self, source: Callable[[], Iterable[T]], *head: T) -> None:
        self._source = source
        self._head = head

    def _items(self) -> tuple[T, ...]:
        return (*self._head, *self._source())

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self._items()[index]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[T]:
        return iter(self._items())

    def __contains__(self, item: object) -> bool:
        return item in self._items()

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


class LiveMapping(Mapping[str, V]):
    """A mapping whose items are ``source()``'s, read anew at every use.

    Args:
        source: Returns the current mapping.
    """

    def __init__(self, source: Callable[[], Mapping[str, V]]) -> None:
        self._source = source

    def __getitem__(self, key: str) -> V:
        return self._source()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._source())

    def __len__(self) -> int:
        return len(self._source())

    def __repr__(self) -> str:
        return repr(dict(self._source()))
