"""Loading pairs in any registered format: files, dataset rows, and sources by name.

:func:`load_preference_source` also takes a dataset folder or a hub dataset by name
(``codeprefbench``, ``bigcodereward``, ``hub:OWNER/NAME``; see
:mod:`prefjudge.scoring.sources`), whose rows go through the formats' row converters.
"""

from __future__ import annotations

import os
from typing import Any

from prefjudge.io import InputError, InputIssue
from prefjudge.judge.pairs.formats.base import finish, unknown_keys
from prefjudge.judge.pairs.formats.detect import detect_format, format_from_keys
from prefjudge.judge.pairs.formats.registry import (
    AUTO,
    PAIR_FORMATS,
    PairFormatSpec,
    Rows,
    get_pair_format,
    known_formats_text,
)
from prefjudge.records import Pair
from prefjudge.scoring.sources import Origin, fetch_source, resolve_source


def _spec(fmt: str, where: str) -> PairFormatSpec:
    """The registered format ``fmt``; :class:`InputError` naming the known ones otherwise."""
    spec = get_pair_format(fmt)
    if spec is None:
        message = f"unknown format {fmt!r} (known: {known_formats_text()})"
        raise InputError([InputIssue(where, 0, "", message)])
    return spec


def load_pairs(
    path: str | os.PathLike[str],
    *,
    fmt: str = AUTO,
    skip_invalid: bool = False,
) -> tuple[list[Pair], list[InputIssue]]:
    """Load a file of pairwise preferences in any registered format.

    Args:
        path: The file (JSONL, gzipped JSONL, CSV or Parquet).
        fmt: ``auto`` to detect the format from the content, or one of
            :data:`PAIR_FORMATS` to force it.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``: the pairs in file order and the rows that could not be used.

    Raises:
        InputError: On any unusable row (unless ``skip_invalid``), on a file whose format
            cannot be told, or on an unknown ``fmt``.
    """
    if fmt == AUTO:
        fmt = detect_format(path)
    return _spec(fmt, str(path)).load(path, skip_invalid=skip_invalid)


def pairs_from_rows(
    rows: Rows,
    where: str,
    *,
    fmt: str = AUTO,
    skip_invalid: bool = False,
) -> tuple[list[Pair], list[InputIssue]]:
    """Convert dataset rows into pairs with the converters files use.

    Args:
        rows: ``(row number, row or issue)`` pairs.
        where: The rows' origin, for issues and the pairs' ``source`` (``FORMAT:WHERE``,
            without a ``hub:`` prefix).
        fmt: ``auto`` (told from the first row's keys) or a registered format with a row
            converter (``codeprefbench``, ``bigcodereward``, ``prefjudge``); Copilot Arena
            is read from its CSV only.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On unusable rows (unless ``skip_invalid``), on rows whose format cannot
            be told, on a format read from its file only (``copilot_arena``), on an unknown
            format, or when there are no rows.
    """
    rows = list(rows)
    if fmt == AUTO:
        first = next(((n, r) for n, r in rows if not isinstance(r, InputIssue)), None)
        if first is None:
            found = [r for _, r in rows if isinstance(r, InputIssue)]
            raise InputError(found or [InputIssue(where, 0, "", "the dataset has no rows")])
        detected = format_from_keys(first[1])
        if detected is None:
            raise InputError([InputIssue(where, first[0], "", unknown_keys(first[1]))])
        fmt = detected
    spec = _spec(fmt, where)
    if spec.convert_rows is None:
        message = (
            f"{fmt!r} pairs are read from their {spec.file_kind} file only; "
            "download it and pass its path"
        )
        raise InputError([InputIssue(where, 0, "", message)])
    name = where.removeprefix("hub:")
    pairs, issues = spec.convert_rows(rows, where, f"{fmt}:{name}")
    return finish(pairs, issues, skip_invalid)


def open_preference_source(
    source: str | os.PathLike[str],
    *,
    fmt: str = AUTO,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    **hub_kwargs: Any,
) -> tuple[list[Pair], list[InputIssue], Origin]:
    """Load preference pairs from a file, a dataset folder or the hub, saying from where.

    Resolved and fetched as task sources are (:func:`~prefjudge.scoring.sources.resolve_source`,
    :func:`~prefjudge.scoring.sources.fetch_source`); a known hub dataset's own pair format
    is used when ``fmt`` is ``auto``.

    Args:
        source: See :func:`load_preference_source`.
        fmt: See :func:`load_preference_source`.
        split: See :func:`load_preference_source`.
        subset: See :func:`load_preference_source`.
        limit: See :func:`load_preference_source`.
        skip_invalid: See :func:`load_preference_source`.
        **hub_kwargs: See :func:`load_preference_source`.

    Returns:
        ``(pairs, issues, origin)``; the origin's files are the journal inputs and its
        identity what else a journal binds (see :class:`~prefjudge.scoring.sources.Origin`).

    Raises:
        SourceError: See :func:`load_preference_source`.
        InputError: See :func:`load_preference_source`.
    """
    target = resolve_source(source, "pairs", limit)
    fetched = fetch_source(target, split=split, subset=subset, limit=limit, **hub_kwargs)
    if fmt == AUTO and fetched.hub is not None and fetched.hub.pair_format in PAIR_FORMATS:
        fmt = fetched.hub.pair_format
    origin = fetched.origin
    if fetched.rows is None:  # a file, or the files a hub dataset was fetched to
        pairs, issues = [], []
        for path in fetched.files:
            found, problems = load_pairs(path, fmt=fmt, skip_invalid=skip_invalid)
            pairs += found
            issues += problems
    else:
        pairs, issues = pairs_from_rows(
            fetched.rows, origin.label, fmt=fmt, skip_invalid=skip_invalid
        )
    if limit is not None:
        pairs = pairs[:limit]
    return pairs, issues, origin


def load_preference_source(
    source: str | os.PathLike[str],
    *,
    fmt: str = AUTO,
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    **hub_kwargs: Any,
) -> tuple[list[Pair], list[InputIssue]]:
    """Load preference pairs from a local file or folder, or a hub dataset by name.

    Names and defaults are those of :mod:`prefjudge.scoring.sources`:
    ``codeprefbench`` (``amazon/CodePrefBench``, subset ``human-preference``,
    ``correctness``, ``efficiency`` or ``security``; its files are read with
    :func:`load_codeprefbench`, so pairs equal those of the same file on disk),
    ``bigcodereward`` (``bigcode/bigcodereward``, split ``train``), and
    ``hub:OWNER/NAME`` for any hub dataset with rows in a pair format.

    Args:
        source: A pair file (any format :func:`load_pairs` reads), a dataset folder,
            ``hub:OWNER/NAME``, or a known hub id or alias. An existing path always wins
            over a known name; ``hub:...`` is never a path.
        fmt: The pair format, or ``auto`` (the dataset's own, else told from the content).
        split: The split of a hub dataset or folder [default: the dataset's]; not used for
            a file.
        subset: The subset (CodePrefBench's file) or configuration of a hub dataset.
        limit: Keep only the first N pairs.
        skip_invalid: Return unusable rows as issues instead of raising.
        **hub_kwargs: Passed to ``datasets.load_dataset`` (e.g. ``revision``).

    Returns:
        ``(pairs, issues)``, as :func:`load_pairs`.

    Raises:
        UnknownSourceError: An unknown name (the message lists the known ones), split or
            subset.
        HubSourceError: ``datasets`` is not installed, or the hub cannot be reached and the
            dataset is not cached (the message says how to run offline), or it failed to load.
        InputError: Unusable rows (unless ``skip_invalid``), with file or dataset and row.
    """
    pairs, issues, _ = open_preference_source(
        source,
        fmt=fmt,
        split=split,
        subset=subset,
        limit=limit,
        skip_invalid=skip_invalid,
        **hub_kwargs,
    )
    return pairs, issues
