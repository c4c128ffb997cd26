"""JSONL/CSV reading and writing with file:line errors, append-only output and resume."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class InputIssue:
    """One problem found in an input file, located precisely.

    Attributes:
        path: File the problem is in.
        line: 1-based line number (0 when it concerns the whole file).
        field: Dotted field path (empty when the whole line is wrong).
        message: What is wrong.
    """

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        field = f" field {self.field!r}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class InputError(ValueError):
    """Bad input, with every issue found (file, line, field)."""

    def __init__(self, issues: list[InputIssue]):
        self.issues = issues
        shown = "\n".join(f"  {issue}" for issue in issues[:20])
        more = f"\n  ... and {len(issues) - 20} more" if len(issues) > 20 else ""
        super().__init__(f"{len(issues)} problem(s) in the input:\n{shown}{more}")


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open a text file for reading, transparently decompressing ``.gz``.

    Args:
        path: File to open; gzip is detected from the magic bytes, not the name.

    Returns:
        A text stream (UTF-8).
    """
    path = Path(path)
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open(encoding="utf-8")


def iter_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any] | InputIssue]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file.

    A line that is not valid JSON, or not a JSON object, yields an :class:`InputIssue` in
    place of the object, so callers can stop or collect as they choose.

    Args:
        path: JSONL file (optionally gzipped).

    Yields:
        Line number (1-based) and the parsed object or the issue with that line.
    """
    spath = str(path)
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                message = f"not valid JSON ({exc.msg} at column {exc.colno})"
                yield number, InputIssue(spath, number, "", message)
                continue
            if not isinstance(data, dict):
                yield number, InputIssue(spath, number, "", "expected a JSON object")
                continue
            yield number, data


def validation_issues(path: str, line: int, exc: ValidationError) -> list[InputIssue]:
    """Turn a pydantic ValidationError into located input issues.

    Args:
        path: File the record came from.
        line: Line the record came from.
        exc: The validation error.

    Returns:
        One issue per validation error, with a dotted field path.
    """
    issues = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"])
        issues.append(InputIssue(path, line, field, err["msg"]))
    return issues


def read_records(
    path: str | os.PathLike[str], model: type[M], *, collect: bool = False
) -> tuple[list[tuple[int, M]], list[InputIssue]]:
    """Read and validate a JSONL file of ``model`` records.

    Args:
        path: JSONL file (optionally gzipped).
        model: Pydantic model each line must match.
        collect: When True, invalid lines are returned as issues instead of raising.

    Returns:
        ``(records, issues)``: valid records with their line numbers, and the issues.

    Raises:
        InputError: On any invalid line when ``collect`` is False.
    """
    records: list[tuple[int, M]] = []
    issues: list[InputIssue] = []
    for number, data in iter_objects(path):
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        try:
            records.append((number, model.model_validate(data)))
        except ValidationError as exc:
            issues.extend(validation_issues(str(path), number, exc))
    if issues and not collect:
        raise InputError(issues)
    return records, issues


class JsonlAppender:
    """Append records to a JSONL file, one flushed line per record.

    A crash loses at most the line being written; a partial last line left by an
    earlier crash is truncated on open so the file stays valid JSONL.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        _truncate_partial_last_line(self.path)
        self._handle = self.path.open("a", encoding="utf-8")

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        """Write one record and flush it to disk."""
        data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
        self._handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_partial_last_line(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        data = path.read_bytes()
        keep = data.rfind(b"\n") + 1
        handle.seek(keep)
        handle.truncate()


def summary_path(output: str | os.PathLike[str], suffix: str = "") -> Path:
    """Where a stage writes the summary of ``output``: beside it, ``<name>.summary<suffix>``.

    Args:
        output: The stage's JSONL output (``.jsonl`` and ``.gz`` are dropped from its name).
        suffix: Extension of the summary file (e.g. ``.json``), or "" for a prefix.

    Returns:
        ``scores.jsonl`` -> ``scores.summary.json`` for ``suffix=".json"``.
    """
    output = Path(output)
    name = output.name.removesuffix(".gz").removesuffix(".jsonl")
    return output.with_name(f"{name}.summary{suffix}")


def read_existing(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the complete lines of an output file being resumed.

    Args:
        path: Output JSONL; missing means nothing done yet.

    Returns:
        The parsed records (a trailing partial line is ignored).
    """
    path = Path(path)
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            if line.strip():
                out.append(json.loads(line))
    return out
