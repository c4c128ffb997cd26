"""What reading a source yields and how it fails: hub entries, origins, rows and errors.

Shared by the hub access (:mod:`prefjudge.scoring.hub`), the format registries
(:mod:`prefjudge.scoring.task_formats`) and the source readers
(:mod:`prefjudge.scoring.sources`, :mod:`prefjudge.judge.pairs`); it imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Kind = Literal["tasks", "pairs"]

HUB_INSTALL_HINT = "pip install 'prefjudge[hub]'"
"""How to install what loading from the hub needs."""

HUB_PREFIX = "hub:"
"""``hub:OWNER/NAME`` names any hub dataset, known or not."""


class HubUnavailableError(RuntimeError):
    """The hub cannot be used: ``datasets`` is not installed or the load failed."""


class SourceError(ValueError):
    """A task or preference source that cannot be used (the message says why and what to do)."""


class UnknownSourceError(SourceError):
    """The source names no file, folder or known hub dataset, or a subset it does not have."""


class HubSourceError(SourceError, HubUnavailableError):
    """The hub cannot be used.

    The library is missing, or the hub is unreachable and the dataset is not cached, or
    the dataset could not be loaded.
    """


@dataclass(frozen=True)
class HubDataset:
    """A dataset on the Hugging Face hub that prefjudge knows by name.

    Attributes:
        repo: Hub id, ``OWNER/NAME``.
        kind: ``tasks`` (benchmark tasks) or ``pairs`` (preference pairs).
        aliases: Short names (lower case).
        split: The split used when none is given (None: the dataset's only split).
        subsets: For datasets read as files: subset name -> the repository files it holds.
        subset: The subset used when none is given.
        subset_aliases: Other names of subsets (e.g. ``human-preference-alignment``).
        pair_format: The pair format of its rows (``pairs`` datasets).
        note: One line for messages and listings.
    """

    repo: str
    kind: Kind
    aliases: tuple[str, ...] = ()
    split: str | None = None
    subsets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    subset: str | None = None
    subset_aliases: Mapping[str, str] = field(default_factory=dict)
    pair_format: str | None = None
    note: str = ""

    @property
    def by_files(self) -> bool:
        """Whether it is read as files of its repository (not with ``load_dataset``)."""
        return bool(self.subsets)

    def files(self, subset: str | None) -> tuple[str, tuple[str, ...]]:
        """The subset's name and repository files (the default subset for None).

        Raises:
            UnknownSourceError: For a subset it does not have.
        """
        name = subset or self.subset or ""
        name = self.subset_aliases.get(name, name)
        if name not in self.subsets:
            known = ", ".join(self.subsets)
            raise UnknownSourceError(f"{self.repo}: no subset {subset!r} (known: {known})")
        return name, self.subsets[name]


@dataclass(frozen=True)
class Origin:
    """Where loaded records came from, for messages and journal bindings.

    Attributes:
        label: What to show: the path, or ``hub:OWNER/NAME[SPLIT]`` (with ``/SUBSET``).
        paths: The local files the records were read from (a file source, or the files a
            hub dataset read as files was fetched to): journals hash them as inputs.
        identity: What else identifies the data (JSON-able; empty for a plain file): the
            hub id, split, subset and the dataset's fingerprint, or a folder's content
            digest. Journals bind it as a setting, so changed data is never resumed into.
    """

    label: str
    paths: tuple[Path, ...] = ()
    identity: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rows:
    """Rows of a dataset, numbered from 1, and where they came from."""

    rows: list[tuple[int, dict[str, Any]]]
    origin: Origin


@dataclass(frozen=True)
class Fetched:
    """A resolved source, fetched: local files to read, or a dataset's rows.

    Attributes:
        origin: Where it came from.
        files: Files to read with a format's file reader (a file source, or the files a
            hub dataset read as files was fetched to); empty when ``rows`` are given.
        rows: A dataset's rows (a folder, or a hub dataset loaded with ``datasets``).
        hub: The known hub dataset it came from, if any (its defaults, e.g. a pair format).
    """

    origin: Origin
    files: tuple[Path, ...] = ()
    rows: list[tuple[int, dict[str, Any]]] | None = None
    hub: HubDataset | None = None


def hub_label(repo: str, split: str | None, subset: str | None) -> str:
    """``hub:OWNER/NAME[SPLIT]``, with ``/SUBSET`` after the name when there is one."""
    name = f"{repo}/{subset}" if subset else repo
    return f"{HUB_PREFIX}{name}" + (f"[{split}]" if split else "")
