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

Known datasets, by hub id and aliases, with their defaults:

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

import contextlib
import difflib
import importlib
import os
import re
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from prefjudge.journal import content_digest
from prefjudge.records import Task
from prefjudge.scoring.tasks import HubUnavailableError, load_tasks, tasks_from_records

Kind = Literal["tasks", "pairs"]

HUB_INSTALL_HINT = "pip install 'prefjudge[hub]'"
"""How to install what loading from the hub needs."""

HUB_PREFIX = "hub:"
"""``hub:OWNER/NAME`` names any hub dataset, known or not."""

HUB_REPO_PART_MAX = 96
"""The longest owner or dataset name the hub allows."""

_HUB_PART = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?")
_HUB_CHAR = re.compile(r"[A-Za-z0-9._-]")

_MEDIA_FEATURES = frozenset({"Image", "Audio", "Video", "Pdf", "Nifti"})


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


def _lcb_subsets() -> dict[str, tuple[str, ...]]:
    files = ("test.jsonl", *(f"test{n}.jsonl" for n in range(2, 7)))
    subsets = {f"release_v{n}": files[:n] for n in range(1, 7)}
    subsets["release_latest"] = files
    subsets.update({f"v{n}": (files[n - 1],) for n in range(1, 7)})
    return subsets


_CPB_FILES = ("human-preference", "correctness", "efficiency", "security")

HUB_SOURCES: tuple[HubDataset, ...] = (
    HubDataset(
        "bigcode/bigcodebench",
        "tasks",
        ("bigcodebench",),
        split="v0.1.4",
        note="BigCodeBench; splits are versions (v0.1.0_hf ... v0.1.4)",
    ),
    HubDataset("openai/openai_humaneval", "tasks", ("humaneval",), split="test", note="HumanEval"),
    HubDataset(
        "evalplus/humanevalplus",
        "tasks",
        ("humanevalplus", "humaneval+"),
        split="test",
        note="HumanEval+ without the EvalPlus inputs (check() tests)",
    ),
    HubDataset(
        "evalplus/mbppplus",
        "tasks",
        ("mbppplus", "mbpp+"),
        split="test",
        note="MBPP+ without the EvalPlus inputs (not runnable)",
    ),
    HubDataset(
        "livecodebench/code_generation_lite",
        "tasks",
        ("livecodebench", "lcb"),
        split="test",
        subsets=_lcb_subsets(),
        subset="release_v5",
        note="LiveCodeBench; subset = version tag (release_v1 ... release_v6, v1 ... v6)",
    ),
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
"""Every hub dataset known by name (see the module docstring for the table)."""


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


# --------------------------------------------------------------------------- hub names


def check_hub_repo_id(repo: str) -> str:
    """Return ``repo`` when it is a hub dataset id, ``OWNER/NAME``; say why not otherwise.

    The hub's own rule for repository ids (``huggingface_hub``'s ``validate_repo_id``),
    with the owner required: two names joined by one ``/``, each 1 to
    :data:`HUB_REPO_PART_MAX` ASCII letters, digits, ``-``, ``_`` and ``.``, neither
    starting nor ending with ``-`` or ``.``; no ``--`` or ``..`` anywhere, no ``.git`` at
    the end. So no id is ``.``, ``..``, absolute, or deeper than one folder.

    Args:
        repo: The id, without ``hub:``.

    Returns:
        ``repo``, unchanged.

    Raises:
        UnknownSourceError: When the rule refuses it (the message says what is wrong).
    """
    problem = _hub_repo_id_problem(repo)
    if problem:
        raise UnknownSourceError(
            f"{HUB_PREFIX}{repo!r}: not a hub dataset id ({problem}); expected "
            f"{HUB_PREFIX}OWNER/NAME, each 1 to {HUB_REPO_PART_MAX} ASCII letters, digits, "
            "'-', '_' and '.', not starting or ending with '-' or '.'. A local file or "
            "folder is given by its path, without hub:"
        )
    return repo


def _hub_repo_id_problem(repo: str) -> str:
    """What :func:`check_hub_repo_id` refuses in ``repo`` ("" when nothing)."""
    parts = repo.split("/")
    bad = next((char for char in repo if char != "/" and not _HUB_CHAR.fullmatch(char)), None)
    if len(parts) != 2:
        return "it needs exactly one '/' between OWNER and NAME"
    if bad is not None:
        return f"{bad!r} (U+{ord(bad):04X}) is not allowed"
    if "--" in repo or ".." in repo:
        return "'--' and '..' are not allowed"
    if not all(parts):
        return "OWNER or NAME is empty"
    if any(len(part) > HUB_REPO_PART_MAX for part in parts):
        return f"a name is longer than {HUB_REPO_PART_MAX} characters"
    edged = next((part for part in parts if not _HUB_PART.fullmatch(part)), None)
    if edged is not None:
        return f"{edged!r} starts or ends with '-' or '.'"
    if repo.endswith(".git"):
        return "it ends with '.git'"
    return ""


def hub_source_repo(source: str) -> str | None:
    """The checked ``OWNER/NAME`` of a ``hub:OWNER/NAME`` source; None for any other source.

    Raises:
        UnknownSourceError: When ``hub:`` is followed by no hub dataset id
            (:func:`check_hub_repo_id`).
    """
    if not source.startswith(HUB_PREFIX):
        return None
    return check_hub_repo_id(source[len(HUB_PREFIX) :])


def remote_dataset_path(repo: str) -> str:
    """``hf://datasets/OWNER/NAME``: what ``datasets.load_dataset`` is given for a hub id.

    With this form the library looks the dataset up on the hub (or in its cache of the
    hub) only, never in a local folder of that name.

    Raises:
        UnknownSourceError: When ``repo`` is not a hub dataset id (:func:`check_hub_repo_id`).
    """
    return f"hf://datasets/{check_hub_repo_id(repo)}"


def load_hub(name: str, split: str = "test", **kwargs: Any) -> dict[str, Task]:
    """Load a benchmark from its public hub dataset, through the ``datasets`` library.

    Hub datasets (see :data:`prefjudge.scoring.tasks.HUB_DATASETS`): ``bigcode/bigcodebench``
    (split = version, e.g. ``v0.1.4``), ``openai/openai_humaneval``,
    ``evalplus/humanevalplus``, ``evalplus/mbppplus`` and
    ``livecodebench/code_generation_lite`` (split ``test``, ``version_tag="release_v5"``,
    ``trust_remote_code=True``; with ``datasets`` >= 4, which runs no loading scripts,
    download its ``test*.jsonl`` files and use :func:`prefjudge.scoring.tasks.load_tasks`).
    Records go through the same converters as local files. The library is given
    ``hf://datasets/OWNER/NAME`` (:func:`remote_dataset_path`), so a local folder that
    happens to be called ``OWNER/NAME`` is never read instead of the hub.

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


# --------------------------------------------------------------------------- resolving


def known_names(kind: Kind | None = None) -> list[str]:
    """``alias (OWNER/NAME)`` for every known dataset of ``kind`` (all kinds for None)."""
    return [
        f"{entry.aliases[0]} ({entry.repo})" if entry.aliases else entry.repo
        for entry in HUB_SOURCES
        if kind is None or entry.kind == kind
    ]


def close_names(name: str, kind: Kind | None = None) -> list[str]:
    """Known hub ids and aliases of ``kind`` spelt like ``name`` (a misspelling's candidates).

    Args:
        name: The name given.
        kind: Which datasets (all kinds for None).

    Returns:
        Up to three names, the closest first.
    """
    names = {}
    for entry in HUB_SOURCES:
        if kind is None or entry.kind == kind:
            for spelling in (entry.repo, *entry.aliases):
                names[spelling.lower()] = spelling
    wanted = name.strip().lower()
    close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.75)
    close += difflib.get_close_matches(wanted.rpartition("/")[2], list(names), n=3, cutoff=0.75)
    return [names[found] for found in dict.fromkeys(close)][:3]


def find_hub_dataset(name: str, kind: Kind | None = None) -> HubDataset | None:
    """The known dataset ``name`` (hub id or alias, any case) names, if any."""
    wanted = name.strip().lower()
    for entry in HUB_SOURCES:
        if (kind is None or entry.kind == kind) and (
            wanted == entry.repo.lower() or wanted in entry.aliases
        ):
            return entry
    return None


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


def hub_label(repo: str, split: str | None, subset: str | None) -> str:
    """``hub:OWNER/NAME[SPLIT]``, with ``/SUBSET`` after the name when there is one."""
    name = f"{repo}/{subset}" if subset else repo
    return f"{HUB_PREFIX}{name}" + (f"[{split}]" if split else "")


# --------------------------------------------------------------------------- the libraries


def _library(module: str, what: str, loading: str) -> Any:
    """Import ``module``, or say plainly that ``loading`` needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise HubSourceError(
            f"{what}: loading {loading} needs the '{module}' library, which is not installed "
            f"({exc}). Install it with: {HUB_INSTALL_HINT}; or download the data file and pass "
            "its path"
        ) from exc


def _datasets_library(what: str) -> Any:
    return _library("datasets", what, "hub datasets and dataset folders")


def _hub_library(what: str) -> Any:
    return _library("huggingface_hub", what, "hub datasets")


_OFFLINE_SET = "offline mode: HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is set"
"""Why the hub is not asked when the user set offline mode."""


def hub_offline() -> bool:
    """Whether the Hugging Face libraries run offline (``HF_HUB_OFFLINE`` and the like)."""
    try:
        from datasets import config
    except ImportError:
        names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        return any(os.environ.get(n, "").upper() in ("1", "ON", "YES", "TRUE") for n in names)
    return bool(config.HF_HUB_OFFLINE)


HUB_PROBE_TIMEOUT_S = 3.0
"""How long the check that the hub can be reached waits for a connection."""

_probed: dict[tuple[str, int], str | None] = {}


def _hub_endpoint() -> str:
    try:
        from huggingface_hub import constants
    except ImportError:
        return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return str(constants.ENDPOINT)


def hub_unreachable(
    timeout: float = HUB_PROBE_TIMEOUT_S, endpoint: str | None = None
) -> str | None:
    """Why the Hugging Face hub cannot be reached now; None when it can (or offline is set).

    One TCP connection to the hub's endpoint (``HF_ENDPOINT``), or to the HTTPS proxy when
    one is set for it, within ``timeout`` seconds (the name lookup included), once per
    process: without it the libraries retry for about 25 s before they say the hub cannot
    be reached.

    Args:
        timeout: Seconds to wait for the connection.
        endpoint: The hub's URL [default: the libraries' endpoint, ``HF_ENDPOINT``].

    Returns:
        What failed (e.g. ``cannot connect to huggingface.co:443: Name or service not
        known``), or None.
    """
    where = urllib.parse.urlsplit(endpoint or _hub_endpoint())
    host = where.hostname or "huggingface.co"
    port = where.port or (80 if where.scheme == "http" else 443)
    proxy = urllib.request.getproxies().get(where.scheme or "https")
    if proxy and not urllib.request.proxy_bypass(host):
        via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = via.hostname or host, via.port or 80
    key = (host, port)
    if key not in _probed:
        _probed[key] = _connect(host, port, timeout)
    return _probed[key]


def _connect(host: str, port: int, timeout: float) -> str | None:
    """Connect to ``host:port`` in a thread (a name lookup can hang), then close."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(None)
        except OSError as exc:
            outcome.append(f"cannot connect to {host}:{port}: {exc.strerror or exc}")

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        return f"no connection to {host}:{port} within {timeout:g} s"
    return outcome[0]


@contextlib.contextmanager
def _offline_when_unreachable(label: str) -> Iterator[str | None]:
    """Run the libraries in their offline mode when the hub cannot be reached.

    The same as ``HF_HUB_OFFLINE=1`` for the time of one load: read from the caches at
    once (no retries), and the not-cached error says why the hub was not asked.

    Yields:
        Why the hub is not asked (None when it is online and asked).
    """
    if hub_offline():
        yield _OFFLINE_SET
        return
    why = hub_unreachable()
    if why is None:
        yield None
        return
    hub = _hub_library(label)
    datasets_config = importlib.import_module("datasets.config")
    saved = (hub.constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE)
    hub.constants.HF_HUB_OFFLINE = datasets_config.HF_HUB_OFFLINE = True
    try:
        yield why
    finally:
        hub.constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE = saved


def _cache_folders() -> str:
    try:
        from huggingface_hub import constants

        from datasets import config
    except ImportError:
        return "HF_HOME, by default ~/.cache/huggingface"
    return f"{config.HF_DATASETS_CACHE} and {constants.HF_HUB_CACHE}"


def _not_cached(
    label: str, repo: str, reason: Exception | str, offline: str | None = None
) -> HubSourceError:
    why = offline or (
        _OFFLINE_SET
        if hub_offline()
        else f"{type(reason).__name__}: {reason}"
        if isinstance(reason, Exception)
        else reason
    )
    return HubSourceError(
        f"{label}: not in the local cache ({_cache_folders()}), and the Hugging Face hub "
        f"cannot be reached ({why}). To run offline, load it once with the network (it is "
        f"then cached) or fetch it with `hf download {repo} --repo-type dataset`, then set "
        "HF_HUB_OFFLINE=1 (and HF_DATASETS_OFFLINE=1); or download the data file and pass "
        "its path"
    )


# --------------------------------------------------------------------------- dataset rows


def _one_split(loaded: Any, split: str | None, label: str) -> tuple[Any, str | None]:
    """The one split wanted from a Dataset or DatasetDict, and its name."""
    if not hasattr(loaded, "keys"):  # a Dataset
        return loaded, split or (str(loaded.split) if loaded.split else None)
    names = sorted(loaded.keys())
    if split is not None:
        if split not in loaded:
            raise UnknownSourceError(f"{label}: no split {split!r} (splits: {', '.join(names)})")
        return loaded[split], split
    if len(names) == 1:
        return loaded[names[0]], names[0]
    raise UnknownSourceError(
        f"{label}: it has several splits ({', '.join(names)}); choose one with --split"
    )


def _rows(ds: Any, limit: int | None) -> list[tuple[int, dict[str, Any]]]:
    media = [
        name for name, feature in ds.features.items() if type(feature).__name__ in _MEDIA_FEATURES
    ]
    if media:  # e.g. BigCodeReward's screenshots: unused, and decoding them needs Pillow
        ds = ds.remove_columns(media)
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return [(number, dict(row)) for number, row in enumerate(ds, start=1)]


def _load_error(label: str, exc: Exception) -> SourceError:
    if isinstance(exc, ValueError):  # an unknown split or configuration, said by datasets
        hint = " (offline: only what is in the local cache can be loaded)" if hub_offline() else ""
        return UnknownSourceError(f"{label}: {exc}{hint}")
    return HubSourceError(f"{label}: cannot load it ({type(exc).__name__}: {exc})")


def dataset_rows(
    entry: HubDataset,
    *,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    **hub_kwargs: Any,
) -> Rows:
    """Rows of a hub dataset loaded with ``datasets.load_dataset``.

    Online, or offline from the ``datasets`` cache of an earlier load; when the hub cannot
    be reached and that cache lacks it, from a hub-cache download of the repository.

    Args:
        entry: The dataset.
        split: Its split [default: the entry's].
        subset: Its configuration (``load_dataset``'s ``name``) [default: the entry's].
        limit: Keep only the first N rows.
        **hub_kwargs: Passed to ``datasets.load_dataset`` (e.g. ``revision``).

    Returns:
        The rows (media columns dropped) and their origin.

    Raises:
        HubSourceError: Library missing, hub unreachable and not cached, load failed.
        UnknownSourceError: Unknown dataset, split or configuration.
    """
    split = split or entry.split
    subset = subset or entry.subset
    label = hub_label(entry.repo, split, subset)
    lib = _datasets_library(label)
    remote = remote_dataset_path(entry.repo)  # never a local folder of that name
    try:
        with _offline_when_unreachable(label) as offline:
            try:
                loaded = lib.load_dataset(remote, subset, split=split, **hub_kwargs)
            except ConnectionError as exc:
                snapshot = _snapshot(entry.repo, label, exc, hub_kwargs, offline)
                loaded = lib.load_dataset(snapshot, subset, split=split)
    except SourceError:
        raise
    except lib.exceptions.DatasetNotFoundError as exc:
        raise UnknownSourceError(f"{label}: not found on the hub ({exc})") from exc
    except Exception as exc:  # the libraries raise many kinds; each becomes one message
        raise _load_error(label, exc) from exc
    ds, split = _one_split(loaded, split, label)
    identity = {
        "hub": entry.repo,
        "split": split,
        "subset": subset,
        "fingerprint": getattr(ds, "_fingerprint", None),
    }
    return Rows(_rows(ds, limit), Origin(hub_label(entry.repo, split, subset), (), identity))


def _snapshot(
    repo: str,
    label: str,
    reason: Exception,
    hub_kwargs: Mapping[str, Any],
    offline: str | None = None,
) -> str:
    """The hub-cache folder of ``repo`` (downloaded earlier), or the not-cached error."""
    hub = _hub_library(label)
    try:
        return str(
            hub.snapshot_download(
                repo,
                repo_type="dataset",
                local_files_only=True,
                revision=hub_kwargs.get("revision"),
            )
        )
    except Exception as exc:  # LocalEntryNotFoundError and kin: not in the hub cache either
        raise _not_cached(label, repo, reason, offline) from exc


def folder_rows(
    folder: Path, *, split: str | None = None, subset: str | None = None, limit: int | None = None
) -> Rows:
    """Rows of a dataset folder: ``save_to_disk`` output, or data files laid out like a repo.

    Args:
        folder: The folder.
        split: Its split [default: its only one].
        subset: Its configuration (data-file folders with README ``configs`` only).
        limit: Keep only the first N rows.

    Returns:
        The rows and their origin (identity: the folder's content digest).

    Raises:
        HubSourceError: When ``datasets`` is missing or the folder cannot be read.
        UnknownSourceError: Unknown split or configuration.
    """
    label = str(folder)
    lib = _datasets_library(label)
    saved = (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()
    try:
        if saved:
            loaded = lib.load_from_disk(str(folder))
        else:
            loaded = lib.load_dataset(str(folder), subset)
    except Exception as exc:
        raise _load_error(label, exc) from exc
    ds, split = _one_split(loaded, split, label)
    shown = f"{label}[{split}]" if split else label
    identity = {
        "folder": str(folder.resolve()),
        "split": split,
        "subset": subset,
        "digest": content_digest(folder),
    }
    return Rows(_rows(ds, limit), Origin(shown, (), identity))


def hub_files(
    entry: HubDataset, subset: str | None = None, **hub_kwargs: Any
) -> tuple[list[Path], Origin]:
    """Fetch the repository files of a dataset read as files (from the cache when there).

    Args:
        entry: A dataset with ``subsets``.
        subset: Which files [default: the entry's subset].
        **hub_kwargs: ``revision`` is passed to ``hf_hub_download``; others are refused.

    Returns:
        The local files, and their origin (the files as journal inputs).

    Raises:
        HubSourceError: Library missing, hub unreachable and not cached.
        UnknownSourceError: Unknown subset, or a file the repository does not have.
    """
    name, files = entry.files(subset)
    label = hub_label(check_hub_repo_id(entry.repo), None, name)
    unknown = sorted(set(hub_kwargs) - {"revision"})
    if unknown:
        raise UnknownSourceError(f"{label}: read as files; options not used: {', '.join(unknown)}")
    hub = _hub_library(label)
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    paths = []
    for filename in files:
        try:
            with _offline_when_unreachable(label) as offline:
                local = hub.hf_hub_download(
                    entry.repo, filename, repo_type="dataset", revision=hub_kwargs.get("revision")
                )
        except LocalEntryNotFoundError as exc:  # offline or unreachable, and not cached
            raise _not_cached(f"{label} ({filename})", entry.repo, exc, offline) from exc
        except EntryNotFoundError as exc:
            raise UnknownSourceError(f"{label}: the hub repository has no {filename}") from exc
        except Exception as exc:
            raise HubSourceError(
                f"{label}: cannot fetch {filename} ({type(exc).__name__}: {exc})"
            ) from exc
        paths.append(Path(local))
    identity = {"hub": entry.repo, "subset": name, "files": list(files)}
    return paths, Origin(label, tuple(paths), identity)


def source_rows(
    target: Path | HubDataset,
    *,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    **hub_kwargs: Any,
) -> Rows:
    """Rows of a resolved folder or ``load_dataset`` hub source (see :func:`resolve_source`)."""
    if isinstance(target, Path):
        if hub_kwargs:
            raise UnknownSourceError(
                f"{target}: a folder; hub options not used: {', '.join(sorted(hub_kwargs))}"
            )
        return folder_rows(target, split=split, subset=subset, limit=limit)
    return dataset_rows(target, split=split, subset=subset, limit=limit, **hub_kwargs)


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
    target = resolve_source(source, "tasks", limit)
    if isinstance(target, Path) and target.is_file():
        tasks, origin = load_tasks(target), Origin(str(target), (target,))
    elif isinstance(target, HubDataset) and target.by_files:
        if split not in (None, target.split):
            raise UnknownSourceError(f"{target.repo}: has only the split {target.split!r}")
        paths, origin = hub_files(target, subset, **hub_kwargs)
        tasks = {}
        for path in paths:
            for task_id, task in load_tasks(path).items():
                if task_id in tasks:
                    raise SourceError(f"{origin.label}: task {task_id!r} is in two of its files")
                tasks[task_id] = task
            if limit is not None and len(tasks) >= limit:
                break
    else:
        rows = source_rows(target, split=split, subset=subset, limit=limit, **hub_kwargs)
        tasks, origin = tasks_from_records(rows.rows, rows.origin.label), rows.origin
    if limit is not None:
        tasks = dict(islice(tasks.items(), limit))
    return tasks, origin


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
