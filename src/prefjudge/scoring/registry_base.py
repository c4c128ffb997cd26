"""What the format registries share: a registry of named entries, and live views of it.

:class:`Registry` holds the task formats (:mod:`prefjudge.scoring.task_formats`) and the
sample formats (:mod:`prefjudge.scoring.sample_formats`). ``HUB_DATASETS``,
``HUB_SOURCES``, ``CONVERTERS`` and ``FORMATS`` are live views of them
(:mod:`prefjudge.live_views`). Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar


class Entry(Protocol):
    """What a registry holds: something with a name and a detection order."""

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def order(self) -> int: ...  # noqa: D102


E = TypeVar("E", bound=Entry)


class Registry(Generic[E]):
    """Named entries in registration order (the order messages list them in).

    Args:
        what: What an entry is, for messages (``task format``).
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, E] = {}

    def add(self, entry: E, *, replace_existing: bool = False) -> E:
        """Register ``entry``; refuse a second one of the same name unless ``replace_existing``.

        Returns:
            ``entry``.

        Raises:
            ValueError: When an entry of that name is registered already.
        """
        if entry.name in self._entries and not replace_existing:
            raise ValueError(f"{self.what} {entry.name!r} is registered already")
        self._entries[entry.name] = entry
        return entry

    def remove(self, name: str) -> E | None:
        """Remove the entry of that name; None when there is none."""
        return self._entries.pop(name, None)

    def entries(self) -> list[E]:
        """Every entry, in registration order."""
        return list(self._entries.values())

    def names(self) -> tuple[str, ...]:
        """Every entry's name, in registration order."""
        return tuple(self._entries)

    def get(self, name: str) -> E:
        """The entry of that name.

        Raises:
            KeyError: When there is none (the message lists the names).
        """
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no {self.what} {name!r} (known: {', '.join(self._entries)})") from None

    def ordered(self) -> list[E]:
        """The entries by detection ``order``, then registration order."""
        return sorted(self._entries.values(), key=lambda entry: entry.order)


def named_list(names: Sequence[str]) -> str:
    """``A, B or C``: each name once, in order."""
    names = list(dict.fromkeys(names))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
