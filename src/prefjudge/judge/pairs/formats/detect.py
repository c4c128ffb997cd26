"""Telling a pair file's or record's format from its content, by the registered formats' marks."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefjudge.io import InputError, InputIssue, iter_objects, peek_text, stream_issue
from prefjudge.judge.pairs.formats.base import unknown_keys
from prefjudge.judge.pairs.formats.registry import PairFormat, pair_formats


def detect_format(path: str | os.PathLike[str]) -> PairFormat:
    """Tell the format of a preference file from its content.

    The registered formats' marks decide, each kind of mark in registration order:
    a binary file by its magic bytes (Parquet: ``bigcodereward``); a file whose first
    non-blank character is not ``{`` is read as CSV and must have a CSV format's header
    (Copilot Arena's), unless a later line of its first 4 KiB starts with ``{`` (JSONL
    whose first line is broken); a JSONL file is told by the keys of its first readable
    object (unreadable lines are skipped; they are reported by the loader):
    ``response_a`` and ``response_b`` (prefjudge pairs), ``choices`` and ``gt_choice``
    (CodePrefBench), ``human_vote`` or ``chat_session_id`` (BigCodeReward).

    Args:
        path: The file.

    Returns:
        The format name.

    Raises:
        InputError: When the file is missing, empty or in none of the known formats.
    """
    spath = str(path)
    if not Path(path).is_file():
        raise InputError([InputIssue(spath, 0, "", "file not found")])
    try:
        with Path(path).open("rb") as probe:
            magic = probe.read(4)
    except OSError as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    for spec in pair_formats():
        if spec.magic is not None and magic.startswith(spec.magic):
            return spec.name
    head = peek_text(path).lstrip("\ufeff \t\r\n")
    if not head:
        raise InputError([InputIssue(spath, 0, "", "the file is empty")])
    if not head.startswith("{"):
        found = _csv_format(spath, head)
        if found is not None:
            return found
    return _json_format(path)


def _csv_format(spath: str, head: str) -> PairFormat | None:
    """The CSV format whose header ``head`` starts with; None for JSONL with a broken start.

    Raises:
        InputError: When the text is neither a known CSV nor JSONL.
    """
    try:
        header = next(csv.reader([head.splitlines()[0]]), [])
    except csv.Error:
        header = []
    csv_formats = [spec for spec in pair_formats() if spec.csv_columns]
    for spec in csv_formats:
        if all(column in header for column in spec.csv_columns):
            return spec.name
    if any(line.lstrip().startswith("{") for line in head.splitlines()[1:]):
        return None  # JSONL whose first line is broken: told from the next
    marks = " or ".join(
        f"{spec.title or spec.name} CSV (header lacks {'/'.join(spec.csv_columns)})"
        for spec in csv_formats
    )
    message = f"not JSONL and not a {marks}; name the format with --pairs-format"
    raise InputError([InputIssue(spath, 1, "", message)])


def _json_format(path: str | os.PathLike[str]) -> PairFormat:
    """The format of a JSONL file, told from the keys of its first readable object."""
    spath = str(path)
    unreadable: list[InputIssue] = []
    for number, data in iter_objects(path):
        if isinstance(data, InputIssue):  # the next readable line tells the format
            unreadable.append(data)
            continue
        fmt = format_from_keys(data)
        if fmt is not None:
            return fmt
        raise InputError([InputIssue(spath, number, "", unknown_keys(data))])
    if unreadable:
        raise InputError(unreadable)
    raise InputError([InputIssue(spath, 0, "", "the file has no records")])


def format_from_keys(record: Mapping[str, Any]) -> PairFormat | None:
    """The pair format a JSON record (a JSONL line or a dataset row) is in, by its keys.

    The registered formats are asked in order: ``response_a`` and ``response_b``:
    prefjudge pairs; ``choices`` and ``gt_choice``: CodePrefBench; ``human_vote`` or
    ``chat_session_id``: BigCodeReward; else None.
    """
    for spec in pair_formats():
        if spec.json_keys is not None and spec.json_keys(record):
            return spec.name
    return None
