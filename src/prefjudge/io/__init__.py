"""Reading inputs with file:line errors: JSONL, CSV, gzip, UTF-8 checks, pydantic records.

Writing a stage's output (append, lock, resume) is :mod:`prefjudge.journal`'s job; strict
JSON text and files (:func:`dumps_json`, :func:`write_json`) are
:mod:`prefjudge.io.strict_json`'s, re-exported here.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

from prefjudge.io.strict_json import dumps_json as dumps_json
from prefjudge.io.strict_json import finite_json as finite_json
from prefjudge.io.strict_json import write_json as write_json

M = TypeVar("M", bound=BaseModel)

GZIP_MAGIC = b"\x1f\x8b"
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
"""What reading a file can raise: I/O errors, ``gzip.BadGzipFile`` (an ``OSError``), a
truncated gzip stream (``EOFError``) and corrupt compressed data (``zlib.error``)."""
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # bytes kept by errors="surrogateescape"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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


class FieldProblem(ValueError):
    """One field of an input record that cannot be used: its name and what is wrong.

    Raised by converters of outside formats (benchmark task files, sample files) and turned
    into an :class:`InputIssue` with the file and line by their readers.
    """

    def __init__(self, field: str, message: str):
        """Name the field and the problem.

        Args:
            field: The field (dotted path for nested ones).
            message: What is wrong with it.
        """
        super().__init__(message)
        self.field = field


def text_field(record: Mapping[str, Any], field: str) -> str:
    """The string value of ``record[field]``.

    Raises:
        FieldProblem: When it is missing or not a string.
    """
    if field not in record:
        raise FieldProblem(field, "missing")
    value = record[field]
    if not isinstance(value, str):
        raise FieldProblem(field, f"expected a string, got {type(value).__name__}")
    return value


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as probe:
        return probe.read(2) == GZIP_MAGIC


def open_text(
    path: str | os.PathLike[str],
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
) -> IO[str]:
    """Open a text file for reading, transparently decompressing ``.gz``.

    Args:
        path: File to open; gzip is detected from the magic bytes, not the name.
        encoding: Text encoding (``utf-8-sig`` drops a leading byte-order mark).
        errors: How undecodable bytes are handled. The readers of this module pass
            ``surrogateescape`` and report such bytes with :func:`utf8_problem`.
        newline: As for :func:`open` (``""`` for the csv module).

    Returns:
        A text stream.
    """
    path = Path(path)
    if _is_gzip(path):
        return io.TextIOWrapper(
            gzip.open(path, "rb"), encoding=encoding, errors=errors, newline=newline
        )
    return path.open(encoding=encoding, errors=errors, newline=newline)


def open_csv(path: str | os.PathLike[str]) -> IO[str]:
    """Open a (possibly gzipped) CSV file for the csv module.

    ``newline=""`` keeps line breaks inside quoted fields, a byte-order mark is dropped,
    and bytes that are not UTF-8 are kept as surrogate escapes, so the reader can report
    them per row with :func:`utf8_problem` instead of failing on the whole file.

    Args:
        path: The file.

    Returns:
        A text stream.
    """
    return open_text(path, encoding="utf-8-sig", errors="surrogateescape", newline="")


def utf8_problem(text: str) -> str | None:
    """Say where text decoded with ``errors="surrogateescape"`` held bytes that are not UTF-8.

    Args:
        text: One line or one field.

    Returns:
        ``not valid UTF-8 (byte 0xff at column 3)`` for the first such byte (the column
        counts characters from 1), or None when the text decoded cleanly.
    """
    match = _ESCAPED_BYTE.search(text)
    if match is None:
        return None
    byte = ord(match.group()) - 0xDC00
    return f"not valid UTF-8 (byte 0x{byte:02x} at column {match.start() + 1})"


def stream_issue(path: str, line: int, exc: BaseException) -> InputIssue:
    """Describe a failure to read a (gzip) stream as an input issue.

    Args:
        path: The file.
        line: The line being read when it failed (0 when nothing was read yet).
        exc: The exception: ``EOFError`` (truncated gzip), ``gzip.BadGzipFile``,
            ``zlib.error`` (corrupt data) or another ``OSError``.

    Returns:
        The issue, e.g. ``f.jsonl.gz:12: truncated gzip file: ...``.
    """
    after = f" (lines 1-{line - 1} were read)" if line > 1 else ""
    if isinstance(exc, EOFError):
        message = "truncated gzip file: the compressed data ends before its end marker"
    elif isinstance(exc, gzip.BadGzipFile) and line <= 1:
        message = f"not a valid gzip file ({exc})"
    elif isinstance(exc, gzip.BadGzipFile | zlib.error):
        message = f"corrupt gzip file ({exc})"
    else:
        message = f"cannot read the file ({getattr(exc, 'strerror', None) or exc})"
    return InputIssue(path, line, "", message + after)


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a whole text file (optionally gzipped) that must be UTF-8.

    Line endings are normalised to newlines and a leading byte-order mark is dropped.

    Args:
        path: The file.

    Returns:
        Its text.

    Raises:
        InputError: When the file cannot be read, is a truncated or corrupt gzip file, or
            holds bytes that are not UTF-8 (``file:line: not valid UTF-8 (byte 0x.. at
            column N)``).
    """
    spath = str(path)
    try:
        with open_text(path, errors="surrogateescape") as handle:
            text = handle.read()
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    text = text.removeprefix("\ufeff")
    match = _ESCAPED_BYTE.search(text)
    if match is not None:
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.start())
        line = text[start : end if end >= 0 else len(text)]
        number = text.count("\n", 0, start) + 1
        raise InputError([InputIssue(spath, number, "", utf8_problem(line) or "")])
    return text


def peek_text(path: str | os.PathLike[str], size: int = 4096) -> str:
    """Read the start of a file (optionally gzipped) to tell its format.

    Bytes that are not UTF-8 are kept as surrogate escapes (the reader that follows reports
    them with their line), and a truncated gzip file gives what could be decompressed.

    Args:
        path: The file.
        size: Bytes to read at most.

    Returns:
        The text of the first ``size`` bytes, without a leading byte-order mark.

    Raises:
        InputError: When the file cannot be opened or its gzip header is invalid.
    """
    spath = str(path)
    data = b""
    try:
        with Path(path).open("rb") as raw:
            stream = gzip.GzipFile(fileobj=raw) if _is_gzip(Path(path)) else raw
            while len(data) < size:
                chunk = stream.read1(size - len(data))
                if not chunk:
                    break
                data += chunk
    except READ_ERRORS as exc:
        if not data:
            raise InputError([stream_issue(spath, 0, exc)]) from exc
    return data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str | InputIssue]]:
    """Yield ``(line_number, text)`` for each line of a text file (optionally gzipped).

    A line holding bytes that are not UTF-8 yields an :class:`InputIssue` in place of its
    text; a truncated or corrupt gzip stream (or one with the gzip magic that is no gzip
    file) yields one issue for the line it was reading (0 before the first) and ends the
    iteration (the lines before it are kept).

    Args:
        path: The file.

    Yields:
        Line number (1-based) and the line (with its line ending) or the issue.

    Raises:
        InputError: When the file cannot be opened.
    """
    spath = str(path)
    try:
        handle = open_text(path, errors="surrogateescape")
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    with handle:
        number = 0
        lines = iter(handle)
        while True:
            try:
                line = next(lines)
            except StopIteration:
                return
            except READ_ERRORS as exc:
                reached = number + 1 if number else 0
                yield reached, stream_issue(spath, reached, exc)
                return
            number += 1
            if number == 1:
                line = line.removeprefix("\ufeff")
            problem = utf8_problem(line)
            yield number, (line if problem is None else InputIssue(spath, number, "", problem))


class JsonValueError(ValueError):
    """JSON text that cannot be parsed; ``line`` is where (1 when it is one line).

    Attributes:
        line: 1-based line of the problem within the text (0 when unknown).
    """

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.line = line


def parse_json(text: str | bytes) -> Any:
    """Parse JSON, turning every way it can fail into one short :class:`JsonValueError`.

    A key given twice in one object keeps its last value, in every reader of prefjudge
    (all parse through here or :func:`json.loads`); what that value must be is checked
    where it is used (e.g. :func:`prefjudge.judge.bias.recorded_counts`).

    Args:
        text: JSON text.

    Returns:
        The value.

    Raises:
        JsonValueError: ``not valid JSON (Expecting value at column 1)``, ``nested too
            deeply (...)`` or ``not valid JSON (<reason>)`` (e.g. an integer with too many
            digits).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON ({exc.msg} at column {exc.colno})"
        raise JsonValueError(message, exc.lineno) from None
    except RecursionError:
        message = "nested too deeply (JSON arrays or objects deeper than the parser's limit)"
        raise JsonValueError(message) from None
    except ValueError as exc:
        raise JsonValueError(f"not valid JSON ({exc})") from None


def _lone_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """Find a string holding a lone surrogate (from a JSON escape): ``(field, char)``."""
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return (path, match.group()) if match else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = _lone_surrogate(key, where) or _lone_surrogate(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None


def parse_json_line(spath: str, number: int, line: str) -> dict[str, Any] | InputIssue:
    """Parse one JSONL line into an object, or the issue that stops it.

    Args:
        spath: The file, for the issue.
        number: The line number, for the issue.
        line: The line's text.

    Returns:
        The object, or an issue: not valid JSON, nested too deeply, not an object, or a
        string holding a lone surrogate escape (not valid Unicode; it could not be
        written back as UTF-8).
    """
    try:
        data = parse_json(line)
    except ValueError as exc:
        return InputIssue(spath, number, "", str(exc))
    if not isinstance(data, dict):
        return InputIssue(spath, number, "", "expected a JSON object")
    if _SURROGATE_ESCAPE.search(line):
        found = _lone_surrogate(data)
        if found:
            field, char = found
            message = f"not valid Unicode (lone surrogate {ascii(char)[1:-1]})"
            return InputIssue(spath, number, field, message)
    return data


def iter_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any] | InputIssue]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file.

    A line that is not valid UTF-8, not valid JSON, nested too deeply for the parser, not a
    JSON object, or that holds a lone surrogate escape yields an :class:`InputIssue` in
    place of the object, so callers can stop or collect as they choose (``--skip-invalid``
    skips just that line). A truncated or corrupt gzip file yields one issue for the line
    it was reading and ends there; the lines before it are kept.

    Args:
        path: JSONL file (optionally gzipped).

    Yields:
        Line number (1-based) and the parsed object or the issue with that line.

    Raises:
        InputError: When the file cannot be opened.
    """
    spath = str(path)
    for number, line in iter_lines(path):
        if isinstance(line, InputIssue):
            yield number, line
        elif line.strip():
            yield number, parse_json_line(spath, number, line)


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
    for number, data in _validated_lines(path, model):
        if isinstance(data, list):
            issues.extend(data)
        else:
            records.append((number, data))
    if issues and not collect:
        raise InputError(issues)
    return records, issues


def iter_records(path: str | os.PathLike[str], model: type[M]) -> Iterator[M]:
    """The ``model`` records of a JSONL file, one at a time (nothing held in memory).

    Args:
        path: JSONL file (optionally gzipped).
        model: Pydantic model each line must match.

    Yields:
        Each line's record, in order.

    Raises:
        InputError: At the first invalid line (the records before it were yielded).
    """
    for _, data in _validated_lines(path, model):
        if isinstance(data, list):
            raise InputError(data)
        yield data


def _validated_lines(path: str | os.PathLike[str], model: type[M]
                     ) -> Iterator[tuple[int, M | list[InputIssue]]]:
    """Each line's record, or the issues that stop it, with its line number."""
    for number, data in iter_objects(path):
        if isinstance(data, InputIssue):
            yield number, [data]
            continue
        try:
            yield number, model.model_validate(data)
        except ValidationError as exc:
            yield number, validation_issues(str(path), number, exc)


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
    """Read the complete lines of a JSONL output as plain dicts (no validation).

    A quick reader for scripts and tests; stages resume through :class:`prefjudge.journal.Journal`.

    Args:
        path: Output JSONL; missing means nothing done yet.

    Returns:
        The parsed records (a trailing partial line is ignored).
    """
    path = Path(path)
    if not path.exists():
        return []
    out = []
    with path.open("rb") as handle:  # bytes: a write cut inside a character is a partial line
        for line in handle:
            if not line.endswith(b"\n"):
                break
            if line.strip():
                out.append(json.loads(line.decode("utf-8")))
    return out

