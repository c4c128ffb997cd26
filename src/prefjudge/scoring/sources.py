"""Where tasks and preference pairs come from: a local file or folder, or a hub dataset.

Every command that reads benchmark tasks (``augment TASKS``, ``score --tasks``, ``judge
--tasks``) or preference pairs (``judge PAIRS``, ``judge-eval``) takes a *source*, and
resolves it here, in this order, without touching the network for local paths:

1. an existing **file** is read as today (:func:`~prefjudge.scoring.tasks.load_tasks`,
   :func:`~prefjudge.judge.pairs.load_pairs`); ``split`` and ``subset`` do not apply;
2. an existing **folder** is a dataset on disk: one written by ``Dataset.save_to_disk``
   (``load_from_disk``), or a folder of data files laid out like a hub repository
   (``load_dataset(folder)``, README ``configs`` honoured);
3. ``hub:OWNER/NAME`` is any hub dataset whose rows are in a format prefjudge reads
   (told from the fields, as for files); without ``split`` it must have one split only.
   It is always a hub name, checked first (no local path is looked at): ``OWNER/NAME``
   must follow the hub's rule for repository ids (:func:`check_hub_repo_id`), so
   ``hub:../data`` is refused, never read from a folder;
4. a **known name** below, by hub id or alias (case-insensitive).

A hub name is handed to ``datasets.load_dataset`` as ``hf://datasets/OWNER/NAME``
(:func:`remote_dataset_path`), which the library resolves on the hub (or in its cache)
only: a local folder named like the dataset, e.g. ``bigcode/bigcodebench`` in the working
folder, is never read in its place.

Anything else is refused with the known names. Rows always go through the converters the
local files use, so a task or pair loaded from the hub equals the one from the same row in
a file.

A task source is read in one direction, each step in one place: **resolve** the name
(:func:`resolve_source`, here) → **fetch** the file, folder rows, hub rows or hub files
(:func:`fetch_source`; the hub and folders in :mod:`prefjudge.scoring.hub`) → **detect**
the format and **convert** the rows (:func:`prefjudge.scoring.tasks.tasks_from_fetched`,
with the formats of :mod:`prefjudge.scoring.task_formats`) → tasks.

Known datasets, by hub id and aliases, with their defaults (the task datasets are those
the task formats register, :func:`hub_sources`; the preference datasets are
:data:`PAIR_HUB_SOURCES`):

- ``bigcode/bigcodebench`` (``bigcodebench``): tasks; the splits are versions
  (``v0.1.0_hf``, ``v0.1.1`` ... ``v0.1.4``); split ``v0.1.4``.
- ``openai/openai_humaneval`` (``humaneval``): tasks; split ``test``.
- ``evalplus/humanevalplus`` (``humanevalplus``, ``humaneval+``): tasks; split ``test``.
  The hub rows lack the EvalPlus inputs, so the tests are HumanEval's ``check()`` ones
  (use the EvalPlus release file for differential tests).
- ``evalplus/mbppplus`` (``mbppplus``, ``mbpp+``): tasks; split ``test``. The hub rows
  lack the EvalPlus inputs and entry points: loaded, not runnable.
- ``livecodebench/code_generation_lite`` (``livecodebench``, ``lcb``): tasks, read from
  its ``test*.jsonl`` files (its loading script needs ``datasets`` < 4); the subset is the
  version tag: ``release_v1`` ... ``release_v6`` (every problem up to that release),
  ``release_latest``, or ``v1`` ... ``v6`` (one release's problems); subset
  ``release_v5``.
- ``amazon/CodePrefBench`` (``codeprefbench``): preference pairs, read from its
  ``eval/*-alignment.jsonl.gz`` files; subset ``human-preference`` (default),
  ``correctness``, ``efficiency`` or ``security`` (``-alignment`` may follow).
- ``bigcode/bigcodereward`` (``bigcodereward``): preference pairs; split ``train``; its
  screenshot columns are dropped.

The hub needs the ``hub`` extra (``pip install 'prefjudge[hub]'``: the ``datasets``
library, which brings ``huggingface_hub``). Datasets with data files are loaded with
``datasets.load_dataset``; LiveCodeBench and CodePrefBench files are fetched with
``huggingface_hub.hf_hub_download``. Both keep what they fetched in the Hugging Face cache
(``HF_HOME``, by default ``~/.cache/huggingface``), so a second load needs no network.
Offline (``HF_HUB_OFFLINE=1`` or ``HF_DATASETS_OFFLINE=1``), or when the hub cannot be
reached, a dataset is read from that cache: the ``datasets`` cache of an earlier load by
name, else the hub cache of a download (``hf download OWNER/NAME --repo-type dataset``);
when it is in neither, the error says so and how to run offline.
"""


from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.live_views import LiveSequence
from prefjudge.scoring.hub import (
    HUB_PROBE_TIMEOUT_S,
    HUB_REPO_PART_MAX,
    check_hub_repo_id,
    dataset_rows,
    folder_rows,
    hub_files,
    hub_offline,
    hub_source_repo,
    hub_unreachable,
    remote_dataset_path,
    source_rows,
)
from prefjudge.scoring.source_types import (
    HUB_INSTALL_HINT,
    HUB_PREFIX,
    Fetched,
    HubDataset,
    HubSourceError,
    HubUnavailableError,
    Kind,
    Origin,
    Rows,
    SourceError,
    UnknownSourceError,
    hub_label,
)

if TYPE_CHECKING:
    from prefjudge.records import Task

# The task formats and converters (and the task records they build) are imported where
# tasks are read: resolving and fetching a local pairs file (``judge PAIRS``) needs neither.

__all__ = [
    "HUB_INSTALL_HINT",
    "HUB_PREFIX",
    "HUB_PROBE_TIMEOUT_S",
    "HUB_REPO_PART_MAX",
    "HUB_SOURCES",
    "PAIR_HUB_SOURCES",
    "Fetched",
    "HubDataset",
    "HubSourceError",
    "Kind",
    "Origin",
    "Rows",
    "SourceError",
    "UnknownSourceError",
    "check_hub_repo_id",
    "close_names",
    "dataset_rows",
    "fetch_source",
    "find_hub_dataset",
    "folder_rows",
    "hub_files",
    "hub_label",
    "hub_offline",
    "hub_source_repo",
    "hub_sources",
    "hub_unreachable",
    "known_names",
    "load_hub",
    "load_task_source",
    "open_task_source",
    "remote_dataset_path",
    "resolve_source",
    "source_rows",
]

_CPB_FILES = ("human-preference", "correctness", "efficiency", "security")

PAIR_HUB_SOURCES: tuple[HubDataset, ...] = (
    HubDataset(
        "amazon/CodePrefBench",
        "pairs",
        ("codeprefbench",),
        split="test",
        subsets={name: (f"eval/{name}-alignment.jsonl.gz",) for name in _CPB_FILES},
        subset="human-preference",
        subset_aliases={f"{name}-alignment": name for name in _CPB_FILES},
        pair_format="codeprefbench",
        note="CodePrefBench; subset: human-preference, correctness, efficiency, security",
    ),
    HubDataset(
        "bigcode/bigcodereward",
        "pairs",
        ("bigcodereward",),
        split="train",
        pair_format="bigcodereward",
        note="BigCodeReward (screenshots dropped)",
    ),
)
"""The preference-pair datasets known by name (until pair formats have a registry)."""


def hub_sources(kind: Kind | None = None) -> tuple[HubDataset, ...]:
    """Every hub dataset known by name: the task formats' (registry order), then the pairs'.

    Args:
        kind: Only ``tasks`` or ``pairs`` datasets (all for None).
    """
    from prefjudge.scoring.task_formats import task_hub_datasets

    return tuple(
        entry
        for entry in (*task_hub_datasets(), *PAIR_HUB_SOURCES)
        if kind is None or entry.kind == kind
    )


HUB_SOURCES: Sequence[HubDataset] = LiveSequence(hub_sources)
"""Every hub dataset known by name (see the module docstring for the table)."""


def load_hub(name: str, split: str = "test", **kwargs: Any) -> dict[str, Task]:
    """Load a benchmark's rows through ``datasets.load_dataset`` as they are, as tasks.

    The plain library call, without the offline handling, defaults or files of
    :func:`load_task_source` (which commands use). The library is given
    ``hf://datasets/OWNER/NAME`` (:func:`remote_dataset_path`), so a local folder that
    happens to be called ``OWNER/NAME`` is never read instead of the hub; rows go through
    the same converters as local files.

    Args:
        name: Hub dataset id, ``OWNER/NAME`` (the hub's rule: :func:`check_hub_repo_id`).
        split: Dataset split.
        **kwargs: Passed to ``datasets.load_dataset`` (e.g. ``version_tag``).

    Returns:
        Tasks by ``task_id``, in dataset order.

    Raises:
        HubUnavailableError: When ``name`` is no hub id, ``datasets`` is not installed or
            the load fails.
        InputError: When records cannot be converted (with row numbers).
    """
    from prefjudge.scoring.tasks import tasks_from_records

    try:
        remote = remote_dataset_path(name)
    except SourceError as exc:
        raise HubUnavailableError(str(exc)) from None
    try:
        import datasets
    except ImportError as exc:
        raise HubUnavailableError(
            f"loading {name!r} from the hub needs the 'datasets' library "
            "(pip install datasets); or download the file and pass its path"
        ) from exc
    try:
        rows = datasets.load_dataset(remote, split=split, **kwargs)
    except Exception as exc:  # network, auth, unknown name: all end the same way
        raise HubUnavailableError(f"cannot load hub dataset {name!r} [{split}]: {exc}") from exc
    return tasks_from_records(
        ((index, dict(row)) for index, row in enumerate(rows, start=1)), f"hub:{name}[{split}]"
    )


# --------------------------------------------------------------------------- resolve


def known_names(kind: Kind | None = None) -> list[str]:
    """``alias (OWNER/NAME)`` for every known dataset of ``kind`` (all kinds for None)."""
    return [
        f"{entry.aliases[0]} ({entry.repo})" if entry.aliases else entry.repo
        for entry in hub_sources(kind)
    ]


def close_names(name: str, kind: Kind | None = None) -> list[str]:
    """Known hub ids and aliases of ``kind`` spelt like ``name`` (a misspelling's candidates).

    Args:
        name: The name given.
        kind: Which datasets (all kinds for None).

    Returns:
        Up to three names, the closest first.
    """
    names = {
        spelling.lower(): spelling
        for entry in hub_sources(kind)
        for spelling in (entry.repo, *entry.aliases)
    }
    wanted = name.strip().lower()
    close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.75)
    close += difflib.get_close_matches(wanted.rpartition("/")[2], list(names), n=3, cutoff=0.75)
    return [names[found] for found in dict.fromkeys(close)][:3]


def find_hub_dataset(name: str, kind: Kind | None = None) -> HubDataset | None:
    """The known dataset ``name`` (hub id or alias, any case) names, if any."""
    wanted = name.strip().lower()
    return next(
        (e for e in hub_sources(kind) if wanted == e.repo.lower() or wanted in e.aliases), None
    )


def resolve_source(
    source: str | os.PathLike[str],
    kind: Kind,
    limit: int | None = None,
    *,
    base: Path | None = None,
) -> Path | HubDataset:
    """Tell what a source names, without touching the network.

    Args:
        source: A path, ``hub:OWNER/NAME``, or a known hub id or alias.
        kind: What is wanted: ``tasks`` or ``pairs``.
        limit: The caller's ``limit``, checked here (at least 1) before anything is read.
        base: The folder a relative path is relative to (an experiment file's folder);
            None: the current folder.

    Returns:
        The local path (file or folder), or the hub dataset (a known one, or an ad hoc
        entry with no defaults for ``hub:OWNER/NAME``). ``hub:...`` is never a path.

    Raises:
        UnknownSourceError: When it is none of them, listing the known names; when
            ``hub:`` is followed by no hub dataset id (:func:`check_hub_repo_id`); or when
            ``limit`` is below 1.
    """
    if limit is not None and limit < 1:
        raise UnknownSourceError(f"limit must be at least 1, got {limit}")
    text = os.fspath(source)
    repo = hub_source_repo(text)
    if repo is not None:  # a hub name, whatever local paths exist
        return find_hub_dataset(repo, kind) or HubDataset(repo, kind)
    path = Path(text).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if text and path.exists():
        return path
    entry = find_hub_dataset(text, kind)
    if entry is not None:
        return entry
    other = find_hub_dataset(text)
    if other is not None:
        holds = {"pairs": "preference pairs", "tasks": "benchmark tasks"}
        raise UnknownSourceError(
            f"{text!r} ({other.repo}) holds {holds[other.kind]}, not {holds[kind]}"
        )
    if _looks_like_a_path(text):
        raise UnknownSourceError(f"{path if base is not None else text}: no such file or folder")
    known = ", ".join(known_names(kind))
    close = close_names(text, kind)
    raise UnknownSourceError(
        f"{text!r}: no such file or folder, and not a known hub dataset"
        + (f" (did you mean {' or '.join(repr(name) for name in close)}?)" if close else "")
        + ". Known "
        f"{'preference' if kind == 'pairs' else 'task'} datasets: {known}; any other hub "
        f"dataset: {HUB_PREFIX}OWNER/NAME"
    )


_DATA_SUFFIXES = (".jsonl", ".json", ".gz", ".csv", ".parquet", ".arrow", ".txt")


def _looks_like_a_path(text: str) -> bool:
    """A name no hub id can be: a data file's suffix, a leading ``.``/``/``/``~``, deep folders."""
    return (
        text.lower().endswith(_DATA_SUFFIXES)
        or text.startswith((".", "/", "~"))
        or text.count("/") > 1
        or (os.sep != "/" and os.sep in text)
    )


# --------------------------------------------------------------------------- fetch


def fetch_source(
    target: Path | HubDataset,
    *,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    **hub_kwargs: Any,
) -> Fetched:
    """Fetch a resolved source (:func:`resolve_source`): its files, or its rows.

    A file is itself; a hub dataset read as files is fetched to the local cache
    (:func:`hub_files`); a folder or any other hub dataset is loaded as rows
    (:func:`source_rows`).

    Args:
        target: A local path, or a hub dataset.
        split: The split of a hub dataset or folder [default: the dataset's].
        subset: The subset or configuration of a hub dataset [default: the dataset's].
        limit: Load only the first N rows (rows only; files are read whole).
        **hub_kwargs: Passed to the hub library (e.g. ``revision``).

    Returns:
        The files or rows, their origin and the known hub dataset they came from.

    Raises:
        UnknownSourceError: Unknown split or subset, or options a source does not use.
        HubSourceError: The hub cannot be used (see :mod:`prefjudge.scoring.hub`).
    """
    hub = target if isinstance(target, HubDataset) else None
    if isinstance(target, Path) and target.is_file():
        return Fetched(Origin(str(target), (target,)), files=(target,))
    if hub is not None and hub.by_files:
        if split not in (None, hub.split):
            raise UnknownSourceError(f"{hub.repo}: has only the split {hub.split!r}")
        paths, origin = hub_files(hub, subset, **hub_kwargs)
        return Fetched(origin, files=tuple(paths), hub=hub)
    rows = source_rows(target, split=split, subset=subset, limit=limit, **hub_kwargs)
    return Fetched(rows.origin, rows=rows.rows, hub=hub)


# --------------------------------------------------------------------------- tasks


def open_task_source(
    source: str | os.PathLike[str],
    *,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    **hub_kwargs: Any,
) -> tuple[dict[str, Task], Origin]:
    """Load tasks from a file, a dataset folder or the hub, and say where they came from.

    Resolve, fetch, then detect and convert (see the module docstring).

    Args:
        source: See :func:`load_task_source`.
        split: See :func:`load_task_source`.
        subset: See :func:`load_task_source`.
        limit: See :func:`load_task_source`.
        **hub_kwargs: See :func:`load_task_source`.

    Returns:
        Tasks by ``task_id`` in dataset order, and their :class:`Origin`.

    Raises:
        SourceError: See :func:`load_task_source`.
        InputError: See :func:`load_task_source`.
    """
    from prefjudge.scoring.tasks import tasks_from_fetched

    target = resolve_source(source, "tasks", limit)
    fetched = fetch_source(target, split=split, subset=subset, limit=limit, **hub_kwargs)
    return tasks_from_fetched(fetched, limit), fetched.origin


def load_task_source(
    source: str | os.PathLike[str],
    *,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    **hub_kwargs: Any,
) -> dict[str, Task]:
    """Load benchmark tasks from a local file or folder, or a hub dataset by name.

    Args:
        source: A task file (BigCodeBench, HumanEval(+), MBPP+, LiveCodeBench or prefjudge
            JSONL, as :func:`~prefjudge.scoring.tasks.load_tasks` reads), a dataset folder,
            ``hub:OWNER/NAME``, or a known hub id or alias (see the module docstring). An
            existing path always wins over a known name; ``hub:...`` is never a path.
        split: The split of a hub dataset or folder [default: the dataset's, e.g.
            ``v0.1.4`` for BigCodeBench]; not used for a file.
        subset: The configuration of a hub dataset (LiveCodeBench: the version tag); not
            used for a file.
        limit: Keep only the first N tasks, in dataset order.
        **hub_kwargs: Passed to ``datasets.load_dataset`` (e.g. ``revision``).

    Returns:
        Tasks by ``task_id``, in dataset order.

    Raises:
        UnknownSourceError: An unknown name (the message lists the known ones), split or
            subset.
        HubSourceError: ``datasets`` is not installed, or the hub cannot be reached and the
            dataset is not cached (the message says how to run offline), or it failed to load.
        InputError: Records that do not convert (file or ``hub:NAME[SPLIT]``, row, field).
    """
    return open_task_source(source, split=split, subset=subset, limit=limit, **hub_kwargs)[0]
