"""Reading the records of a table file (CSV/TSV, JSON, JSONL, ``.gz``) with file:line issues.

:func:`iter_rows` yields each record as a :class:`Row`, or an :class:`~prefjudge.io.InputIssue`
in place of a record that cannot be read, so callers report every problem at once.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.io import (
    READ_ERRORS,
    InputError,
    InputIssue,
    JsonValueError,
    iter_objects,
    open_csv,
    parse_json,
    parse_json_line,
    peek_text,
    read_text,
    stream_issue,
    utf8_problem,
)

_MAX_ISSUES = 200


@dataclass(frozen=True)
class Row:
    """One record of a table file.

    Attributes:
        line: 1-based line where the record starts (JSON arrays: 0).
        where: Field prefix locating the record inside a JSON array (``[3].``), else ``""``.
        data: Column → value.
    """

    line: int
    where: str
    data: dict[str, Any]


def _format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, kind in ((".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl"),
                         (".ndjson", "jsonl"), (".json", "json")):
        if name.endswith(suffix):
            return kind
    head = peek_text(path).lstrip()
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    return "csv"


def iter_rows(path: str | os.PathLike[str]) -> Iterator[Row | InputIssue]:
    """Yield the records of a CSV/TSV, JSON or JSONL file.

    A CSV row or JSONL line that cannot be read (not valid UTF-8, not valid JSON, not an
    object) is yielded as an :class:`InputIssue` in its place, so that callers can skip
    it; a truncated gzip file or malformed CSV yields one issue where reading stopped.

    Args:
        path: Table file (optionally gzipped).

    Yields:
        Records with their location, or the issue that stops one.

    Raises:
        InputError: On an unreadable file, a CSV header that is not valid UTF-8, unreadable
            JSON or a JSON file that holds no list of objects.
    """
    path = Path(path)
    kind = _format(path)
    if kind in ("csv", "tsv"):
        yield from _iter_csv(path, "\t" if kind == "tsv" else ",")
    elif kind == "jsonl":
        yield from _iter_jsonl(path)
    else:
        yield from _iter_json(path)


def _iter_csv(path: Path, delimiter: str) -> Iterator[Row | InputIssue]:
    spath = str(path)
    try:
        handle = open_csv(path)
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    with handle:
        reader = csv.DictReader(handle, delimiter=delimiter, strict=True)
        previous_end = 1  # the header line
        try:
            header = reader.fieldnames or []
        except (csv.Error, *READ_ERRORS) as exc:
            raise InputError([_csv_issue(spath, 1, exc)]) from exc
        for name in header:
            problem = utf8_problem(name)
            if problem:
                raise InputError([InputIssue(spath, 1, "", f"header: {problem}")])
        while True:
            start = previous_end + 1
            try:
                record = next(reader)
            except StopIteration:
                return
            except (csv.Error, *READ_ERRORS) as exc:
                yield _csv_issue(spath, start, exc)
                return
            previous_end = reader.line_num
            extra = record.get(None)
            if extra or None in record.values():  # more cells than the header, or fewer
                cells = sum(v is not None for k, v in record.items() if k is not None)
                cells += len(extra or [])
                yield InputIssue(spath, start, "",
                                 f"{cells} cell(s) where the header has {len(header)}")
                continue
            data = {k: v for k, v in record.items() if k is not None}
            if utf8_problem("\0".join(filter(None, data.values()))):  # one check per row
                bad = next(((k, p) for k, v in data.items()
                            if isinstance(v, str) and (p := utf8_problem(v))), None)
                if bad:
                    yield InputIssue(spath, start, bad[0], bad[1])
                    continue
            yield Row(start, "", data)


def _csv_issue(spath: str, line: int, exc: BaseException) -> InputIssue:
    if isinstance(exc, csv.Error):
        message = f"malformed CSV ({exc}); the rows after it were not read"
        return InputIssue(spath, line, "", message)
    return stream_issue(spath, line, exc)


def _iter_jsonl(path: Path) -> Iterator[Row | InputIssue]:
    for number, data in iter_objects(path):
        yield data if isinstance(data, InputIssue) else Row(number, "", data)


def _load_json(path: Path) -> Any:
    """Parse a whole JSON file, or raise InputError naming file and line."""
    return _load_json_text(path)[0]


def _load_json_text(path: Path) -> tuple[Any, bool]:
    """Parse a whole JSON file: ``(data, whether its text escapes a surrogate)``.

    Raises:
        InputError: Naming file and line, when it is not JSON.
    """
    text = read_text(path)
    try:
        return parse_json(text), _SURROGATE_ESCAPE.search(text) is not None
    except JsonValueError as exc:
        raise InputError([InputIssue(str(path), exc.line, "", str(exc))]) from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate: the text may hold a lone one."""


def _surrogate_issue(spath: str, index: int, item: dict[str, Any]) -> InputIssue | None:
    r"""The issue of a JSON file's object holding a lone surrogate (``"\udcff"``), or None.

    The object is checked the way a JSONL line is (:func:`prefjudge.io.parse_json_line`),
    so the message and the field named are the same.
    """
    checked = parse_json_line(spath, 0, json.dumps(item))
    if not isinstance(checked, InputIssue):
        return None
    return InputIssue(spath, 0, f"[{index}].{checked.field}", checked.message)


def _iter_json(path: Path) -> Iterator[Row | InputIssue]:
    spath = str(path)
    data, surrogates = _load_json_text(path)
    if isinstance(data, dict):
        for key in ("ratings", "models", "rows", "data"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            if all(isinstance(v, dict) for v in data.values()):
                data = [{"model": k, **v} for k, v in data.items()]
    if not isinstance(data, list):
        raise InputError([InputIssue(spath, 0, "", "expected a JSON array of objects")])
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError([InputIssue(spath, 0, f"[{index}]", "expected a JSON object")])
        issue = _surrogate_issue(spath, index, item) if surrogates else None
        yield issue or Row(0, f"[{index}].", item)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()
