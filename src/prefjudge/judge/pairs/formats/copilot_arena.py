"""The ``copilot_arena`` pair format: the Copilot Arena CSV of fill-in-the-middle battles."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from prefjudge.io import (
    READ_ERRORS,
    InputError,
    InputIssue,
    open_csv,
    stream_issue,
    utf8_problem,
)
from prefjudge.judge.pairs.formats.base import finish, make_pair
from prefjudge.judge.pairs.formats.registry import PairFormatSpec, register_pair_format
from prefjudge.records import Pair

FIM_TEMPLATE = "Complete the code at <CURSOR>.\n\n{prefix}<CURSOR>{suffix}"
"""Instruction of a Copilot Arena pair: the file around the cursor, cursor marked."""

COPILOT_ARENA_COLUMNS = (
    "prefix",
    "suffix",
    "model_a",
    "model_b",
    "acceptedIndex",
    "completion_a",
    "completion_b",
)


class _LineCounter:
    """Wraps a text stream; counts the newline characters handed out so far."""

    def __init__(self, handle: IO[str]):
        self._handle = handle
        self.newlines = 0

    def __iter__(self) -> Iterator[str]:
        for chunk in self._handle:
            self.newlines += chunk.count("\n")
            yield chunk


def load_copilot_arena(
    path: str | os.PathLike[str], *, skip_invalid: bool = False
) -> tuple[list[Pair], list[InputIssue]]:
    """Load the Copilot Arena CSV of fill-in-the-middle battles.

    Columns: ``prefix, suffix, model_a, model_b, acceptedIndex, completion_a,
    completion_b``. The instruction is :data:`FIM_TEMPLATE` filled with the prefix and
    suffix; ``label`` is ``A`` when ``acceptedIndex`` is 0 (``"0.0"``) and ``B`` when it
    is 1. ``pair_id`` and ``task_id`` are ``copilot_arena/<row index>`` (0-based over all
    data rows, bad ones included, so ids do not shift when a row is skipped);
    ``category`` is ``copilot_arena``.

    Fields contain newlines, so an issue's line is the physical line (counting newline characters,
    as ``sed -n Np`` does) on which the record starts. A row with fewer fields than the
    header is one issue naming its first missing column; a field that is not valid UTF-8 is
    one issue naming the field. Malformed CSV or a truncated gzip file ends the reading with
    one issue where it stopped (the rows before it are kept).

    Args:
        path: CSV file, optionally gzipped.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On a header without the expected columns, or on any unusable row
            unless ``skip_invalid``.
    """
    spath = str(path)
    source = f"copilot_arena:{Path(path).name}"
    try:
        handle = open_csv(path)
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    with handle:
        counter = _LineCounter(handle)
        reader = csv.DictReader(counter)
        _check_header(spath, reader)
        pairs, issues = _copilot_rows(spath, source, counter, reader)
    return finish(pairs, issues, skip_invalid)


def _check_header(spath: str, reader: csv.DictReader[str]) -> None:
    """Raise :class:`InputError` unless the header is readable and has every column."""
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError([InputIssue(spath, 1, "", f"malformed CSV header ({exc})")]) from exc
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    for name in header:
        problem = utf8_problem(name)
        if problem:
            raise InputError([InputIssue(spath, 1, "", f"header: {problem}")])
    missing = [c for c in COPILOT_ARENA_COLUMNS if c not in header]
    if missing:
        message = f"missing column(s) {', '.join(missing)} (header: {', '.join(header)})"
        raise InputError([InputIssue(spath, 1, missing[0], message)])


def _copilot_rows(
    spath: str, source: str, counter: _LineCounter, reader: csv.DictReader[str]
) -> tuple[list[Pair], list[InputIssue]]:
    """The pairs and issues of the data rows (reading stops at malformed CSV)."""
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    index = -1
    while True:
        start = counter.newlines + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            message = f"malformed CSV: {exc} (the rows after it were not read)"
            issues.append(InputIssue(spath, start, "", message))
            break
        except READ_ERRORS as exc:
            issues.append(stream_issue(spath, start, exc))
            break
        index += 1
        row_issues = _copilot_row_issues(spath, start, row)
        made = row_issues or make_pair(spath, start, _copilot_fields(row, index, source))
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return pairs, issues


def _copilot_fields(row: dict[str | None, Any], index: int, source: str) -> dict[str, Any]:
    """The pair fields of a valid data row (``index``: 0-based over all data rows)."""
    key = f"copilot_arena/{index}"
    return {
        "pair_id": key,
        "task_id": key,
        "instruction": FIM_TEMPLATE.format(prefix=row["prefix"], suffix=row["suffix"]),
        "response_a": row["completion_a"],
        "response_b": row["completion_b"],
        "model_a": row["model_a"],
        "model_b": row["model_b"],
        "label": "A" if float(row["acceptedIndex"]) == 0 else "B",
        "category": "copilot_arena",
        "source": source,
    }


def _copilot_row_issues(spath: str, line: int, row: dict[str | None, Any]) -> list[InputIssue]:
    if None in row:
        extra = len(row[None])
        return [InputIssue(spath, line, "", f"the row has {extra} field(s) more than the header")]
    absent = [c for c in COPILOT_ARENA_COLUMNS if row.get(c) is None]
    if absent:
        present = len(COPILOT_ARENA_COLUMNS) - len(absent)
        message = (
            f"the row ends early: {present} of {len(COPILOT_ARENA_COLUMNS)} fields, "
            f"missing {', '.join(absent)}"
        )
        return [InputIssue(spath, line, absent[0], message)]
    issues = []
    for column in COPILOT_ARENA_COLUMNS:
        problem = utf8_problem(row[column])
        if problem:
            issues.append(InputIssue(spath, line, column, problem))
    if issues:
        return issues
    for column in ("model_a", "model_b"):
        if not row[column].strip():
            issues.append(InputIssue(spath, line, column, "empty model name"))
    raw = row["acceptedIndex"]
    try:
        accepted = float(raw)
    except ValueError:
        accepted = None
    if accepted not in (0.0, 1.0):
        issues.append(InputIssue(spath, line, "acceptedIndex", f"expected 0 or 1, got {raw!r}"))
    return issues


register_pair_format(
    PairFormatSpec(
        "copilot_arena",
        load_copilot_arena,
        csv_columns=("acceptedIndex", "completion_a"),
        title="Copilot Arena",
        file_kind="CSV",
        summary="the Copilot Arena CSV of fill-in-the-middle battles",
        rank=30,
    )
)
