"""Reach the Hugging Face hub and dataset folders: check hub ids, fetch rows and files.

The fetch step of reading a source (:mod:`prefjudge.scoring.sources` resolves the name
first, and the format registries convert what is fetched here):

- :func:`dataset_rows`: a hub dataset's rows through ``datasets.load_dataset``, given
  ``hf://datasets/OWNER/NAME`` (:func:`remote_dataset_path`), so a local folder named
  like the dataset is never read in its place;
- :func:`folder_rows`: a dataset folder (``save_to_disk`` output, or data files laid out
  like a hub repository);
- :func:`hub_files`: the repository files of a dataset read as files
  (``huggingface_hub.hf_hub_download``).

Both libraries keep what they fetched in the Hugging Face cache (``HF_HOME``). Offline
(``HF_HUB_OFFLINE=1``), or when the hub cannot be reached (:func:`hub_unreachable`: one
quick connection check instead of the libraries' 25 s of retries), a dataset is read from
that cache; when it is not there, the error says so and how to run offline. The libraries
are imported only when a hub dataset or folder is read.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prefjudge.journal import content_digest
from prefjudge.scoring.source_types import (
    HUB_INSTALL_HINT,
    HUB_PREFIX,
    HubDataset,
    HubSourceError,
    Origin,
    Rows,
    SourceError,
    UnknownSourceError,
    hub_label,
)

HUB_REPO_PART_MAX = 96
"""The longest owner or dataset name the hub allows."""

_HUB_PART = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?")
_HUB_CHAR = re.compile(r"[A-Za-z0-9._-]")

_MEDIA_FEATURES = frozenset({"Image", "Audio", "Video", "Pdf", "Nifti"})

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
