"""Find the files of a results folder, tell each one's record kind, and read them raw.

:func:`find_files` lists the files to look at; :func:`record_kind` tells what a record is
from its fields (never from the file's name; a scored sample by
:func:`prefjudge.records.is_scored_record`); :func:`read_objects` yields a JSONL or JSON
file's objects and the lines that are none; :func:`bound_inputs` reads the inputs a
journal binding names; :func:`read_leaderboard` reads ``leaderboard.csv``.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefjudge.io import (
    InputError,
    InputIssue,
    iter_objects,
    open_csv,
    parse_json,
    read_text,
    utf8_problem,
)
from prefjudge.journal import BINDING_SUFFIX, LOCK_SUFFIX, read_binding
from prefjudge.records import is_scored_record, is_verdict_row

LEADERBOARD = "leaderboard.csv"
"""The leaderboard file read from the top of a results folder (any columns)."""

MAX_LEADERBOARD_ROWS = 5000
"""Rows of the leaderboard kept (the rest are counted)."""

MAX_JSON_BYTES = 64 << 20
"""Largest single ``.json`` file read as records (bigger ones are skipped, with the reason)."""


SNIFF = 50  # records looked at to tell a file's kind

KIND_NAMES = {
    "scored": "scored samples",
    "verdict": "judge verdicts",
    "pair": "pairs",
    "task": "tasks",
    "generation": "generations",
    "battle": "battles",
    "persona": "persona comparisons",
}
"""What each record kind is called in messages."""


def record_kind(record: dict[str, Any]) -> str | None:
    """Tell what a record is from its fields.

    Args:
        record: One JSON object as read.

    Returns:
        ``scored``, ``verdict``, ``pair``, ``generation``, ``task``, ``battle``,
        ``persona``, or None when the fields say nothing known.
    """
    keys = record.keys()
    if "pair_id" in keys and "response_a" in keys and "response_b" in keys:
        return "pair"
    if is_verdict_row(record):
        return "verdict"
    if {"condition", "dimensions", "model_a"} <= keys:
        return "persona"
    if {"task_id", "model", "response"} <= keys:
        return "scored" if is_scored_record(record) else "generation"
    if {"model_a", "model_b", "winner"} <= keys:
        return "battle"
    if "task_id" in keys and "model" not in keys and keys & {
        "prompt", "tests", "instruct_prompt", "complete_prompt", "question_content", "test",
    }:
        return "task"
    return None


RUN_SIDE_FILES = {"manifest.json", "leaderboard.json", "ratings.json", "correlation.json"}
"""What ``prefjudge run`` writes beside the records (its manifest, tables as JSON)."""


def _is_candidate(path: Path) -> bool:
    """Whether a file may hold records (JSONL, gzipped JSONL, JSON; no side files)."""
    name = path.name
    if name.startswith(".") or ".summary." in name or name.startswith("summary."):
        return False
    if name.endswith((BINDING_SUFFIX, LOCK_SUFFIX)) or name in RUN_SIDE_FILES:
        return False
    return name.endswith((".jsonl", ".jsonl.gz", ".json"))


def find_files(root: Path) -> list[Path]:
    """The files of a results folder to look at: its own, then one level down.

    Args:
        root: A folder, or one file (then just that file).

    Returns:
        Candidate record files (see :func:`_is_candidate`) and ``leaderboard.csv`` files,
        sorted per folder; hidden files and folders are left out.
    """
    if root.is_file():
        return [root]
    found: list[Path] = []
    below = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    folders = [root, *below]
    for folder in folders:
        try:
            entries = sorted(p for p in folder.iterdir() if p.is_file())
        except OSError:
            continue
        found += [p for p in entries if _is_candidate(p) or p.name == LEADERBOARD]
    return found


def read_objects(path: Path, spath: str) -> Iterator[tuple[int, dict[str, Any] | InputIssue]]:
    """``(line, object or issue)`` for a JSONL file, or for the items of a JSON file."""
    if not path.name.endswith(".json"):
        for number, data in iter_objects(path):
            if isinstance(data, InputIssue):
                data = InputIssue(spath, data.line, data.field, data.message)
            yield number, data
        return
    if path.stat().st_size > MAX_JSON_BYTES:
        yield 0, InputIssue(spath, 0, "", f"larger than {MAX_JSON_BYTES >> 20} MiB: not read")
        return
    try:
        value = parse_json(read_text(path))
    except InputError as exc:
        for issue in exc.issues:
            yield issue.line, InputIssue(spath, issue.line, issue.field, issue.message)
        return
    except ValueError as exc:
        yield 0, InputIssue(spath, 0, "", str(exc))
        return
    items = value if isinstance(value, list) else [value]
    for number, item in enumerate(items, start=1):
        if isinstance(item, dict):
            yield number, item
        else:
            yield number, InputIssue(spath, number, "", "expected a JSON object")


def shown_path(path: Path, root: Path) -> str:
    """A file as the page names it: relative to the results folder when inside it."""
    try:
        return str(path.relative_to(root)) if root.is_dir() else path.name
    except ValueError:
        return str(path)


def sniff_kind(objects: list[tuple[int, dict[str, Any] | InputIssue]]) -> str | None:
    """The record kind (:func:`record_kind`) most of the objects have; None when none has one."""
    kinds = Counter(
        kind for _, data in objects if isinstance(data, dict)
        for kind in [record_kind(data)] if kind
    )
    return kinds.most_common(1)[0][0] if kinds else None



def bound_inputs(path: Path, role: str) -> list[tuple[Path, str | None]]:
    """Input files of one role named by a journal binding beside ``path`` (with SHA-256)."""
    binding = read_binding(path)
    inputs = binding.get("inputs") if binding else None
    entries = (inputs.get(role) or []) if isinstance(inputs, dict) else []
    if isinstance(entries, dict):
        entries = [entries]
    return [(Path(entry["path"]), entry.get("sha256")) for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("path"), str)]


def same_content(path: Path, sha256: str | None) -> bool:
    """Whether a file still has the SHA-256 a binding recorded (True when none was)."""
    if sha256 is None:
        return True
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == sha256


def read_leaderboard(path: Path, spath: str) -> tuple[dict[str, Any], list[InputIssue]]:
    """The leaderboard's header and rows, and the rows left out (another number of cells).

    Raises:
        InputError: When the file is empty or a line is not UTF-8 text (it could not be
            shown as written).
        csv.Error: On malformed CSV (an unclosed quote ...).
    """
    with open_csv(path) as handle:
        reader = csv.reader(handle, strict=True)
        columns = next(reader, None)
        if not columns:
            raise InputError([InputIssue(spath, 1, "", "no header: the file is empty")])
        rows: list[list[str]] = []
        left_out: list[InputIssue] = []
        cut = 0
        for row in itertools.chain([columns], reader):
            if utf8_problem("\0".join(row)):  # one check per row, then the cell that is not
                problem = next(p for cell in row if (p := utf8_problem(cell)))
                raise InputError([InputIssue(spath, reader.line_num, "", problem)])
            if row is columns or not row:
                continue
            if len(row) != len(columns):
                left_out.append(InputIssue(spath, reader.line_num, "",
                                           f"{len(row)} cell(s) where the header has "
                                           f"{len(columns)}: row left out"))
            elif len(rows) < MAX_LEADERBOARD_ROWS:
                rows.append(row)
            else:
                cut += 1
    return {"file": spath, "columns": columns, "rows": rows, "cut": cut}, left_out

