"""Dataset loaders: read pairwise code-preference files into :class:`~prefjudge.records.Pair`.

Supported inputs (``load_pairs`` detects the format from the file's content):

- ``codeprefbench``: CodePrefBench JSONL(.gz) rows (``choices``, ``gt_choice``).
- ``copilot_arena``: the Copilot Arena CSV of fill-in-the-middle battles.
- ``bigcodereward``: Hugging Face ``bigcode/bigcodereward`` rows exported to JSONL(.gz)
  (Parquet too, when pandas with pyarrow is installed).
- ``prefjudge``: JSONL of ``Pair`` records themselves.

:func:`load_preference_source` also takes a dataset folder or a hub dataset by name
(``codeprefbench``, ``bigcodereward``, ``hub:OWNER/NAME``; see
:mod:`prefjudge.scoring.sources`), whose rows go through the same converters.

A row that cannot be used is never dropped silently: it becomes an :class:`InputIssue`
naming file, line and field. Loaders raise :class:`InputError` with every issue, or, with
``skip_invalid=True``, return the issues beside the usable pairs.
"""

from __future__ import annotations

import csv
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from prefjudge.io import (
    READ_ERRORS,
    InputError,
    InputIssue,
    iter_objects,
    open_csv,
    peek_text,
    stream_issue,
    utf8_problem,
    validation_issues,
)
from prefjudge.judge.pairs.evidence import EVIDENCE_CHARS, shorten
from prefjudge.records import Pair, Side
from prefjudge.scoring.sources import (
    HubDataset,
    Origin,
    UnknownSourceError,
    hub_files,
    resolve_source,
    source_rows,
)

PairFormat = Literal["codeprefbench", "copilot_arena", "bigcodereward", "prefjudge"]
PAIR_FORMATS: tuple[PairFormat, ...] = (
    "codeprefbench",
    "copilot_arena",
    "bigcodereward",
    "prefjudge",
)

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

BIGCODEREWARD_VOTES: dict[str, Side] = {
    "leftvote": "A",
    "rightvote": "B",
    "tievote": "tie",
    "bothbad_vote": "tie",
    "a": "A",
    "b": "B",
    "tie": "tie",
    "model_a": "A",
    "model_b": "B",
}
"""``human_vote`` values (lower-cased) and the side each one means."""

_ANNOTATIONS = {"codea": "A", "codeb": "B", "tie": "tie"}
_OTHER: dict[str, Side] = {"A": "B", "B": "A"}


# ---------------------------------------------------------------------------------------
# Entry point and detection
# ---------------------------------------------------------------------------------------


def load_pairs(
    path: str | os.PathLike[str],
    *,
    fmt: PairFormat | Literal["auto"] = "auto",
    skip_invalid: bool = False,
) -> tuple[list[Pair], list[InputIssue]]:
    """Load a file of pairwise preferences in any supported format.

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
    if fmt == "auto":
        fmt = detect_format(path)
    loaders = {
        "codeprefbench": load_codeprefbench,
        "copilot_arena": load_copilot_arena,
        "bigcodereward": load_bigcodereward,
        "prefjudge": load_prefjudge_pairs,
    }
    if fmt not in loaders:
        known = ", ".join(("auto", *PAIR_FORMATS))
        raise InputError([InputIssue(str(path), 0, "", f"unknown format {fmt!r} (known: {known})")])
    return loaders[fmt](path, skip_invalid=skip_invalid)


def detect_format(path: str | os.PathLike[str]) -> PairFormat:
    """Tell the format of a preference file from its content.

    Parquet is recognised by its magic bytes (and is taken as ``bigcodereward``); a file
    whose first non-blank character is not ``{`` is read as CSV and must have the Copilot
    Arena header, unless a later line of its first 4 KiB starts with ``{`` (JSONL whose
    first line is broken); a JSONL file is told by the keys of its first readable object
    (unreadable lines are skipped; they are reported by the loader): ``response_a`` and
    ``response_b`` (prefjudge pairs), ``choices`` and ``gt_choice`` (CodePrefBench),
    ``human_vote`` or ``chat_session_id`` (BigCodeReward).

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
    if magic == b"PAR1":
        return "bigcodereward"
    head = peek_text(path).lstrip("\ufeff \t\r\n")
    if not head:
        raise InputError([InputIssue(spath, 0, "", "the file is empty")])
    if not head.startswith("{"):
        try:
            header = next(csv.reader([head.splitlines()[0]]), [])
        except csv.Error:
            header = []
        if "acceptedIndex" in header and "completion_a" in header:
            return "copilot_arena"
        jsonl_later = any(line.lstrip().startswith("{") for line in head.splitlines()[1:])
        if not jsonl_later:  # else JSONL whose first line is broken: told from the next
            raise InputError(
                [
                    InputIssue(
                        spath,
                        1,
                        "",
                        "not JSONL and not a Copilot Arena CSV (header lacks acceptedIndex/"
                        "completion_a); name the format with --pairs-format",
                    )
                ]
            )
    unreadable: list[InputIssue] = []
    for number, data in iter_objects(path):
        if isinstance(data, InputIssue):  # the next readable line tells the format
            unreadable.append(data)
            continue
        fmt = format_from_keys(data)
        if fmt is not None:
            return fmt
        raise InputError([InputIssue(spath, number, "", _unknown_keys(data))])
    if unreadable:
        raise InputError(unreadable)
    raise InputError([InputIssue(spath, 0, "", "the file has no records")])


def format_from_keys(record: Mapping[str, Any]) -> PairFormat | None:
    """The pair format a JSON record (a JSONL line or a dataset row) is in, by its keys.

    ``response_a`` and ``response_b``: prefjudge pairs; ``choices`` and ``gt_choice``:
    CodePrefBench; ``human_vote`` or ``chat_session_id``: BigCodeReward; else None.
    """
    keys = set(record)
    if {"response_a", "response_b"} <= keys:
        return "prefjudge"
    if {"choices", "gt_choice"} <= keys:
        return "codeprefbench"
    if "human_vote" in keys or "chat_session_id" in keys:
        return "bigcodereward"
    return None


def _unknown_keys(record: Mapping[str, Any]) -> str:
    shown = ", ".join(sorted(record)[:12])
    return (
        f"cannot tell the pair format from the keys ({shown}); name the format with --pairs-format"
    )


def _finish(
    pairs: list[Pair], issues: list[InputIssue], skip_invalid: bool
) -> tuple[list[Pair], list[InputIssue]]:
    if issues and not skip_invalid:
        raise InputError(issues)
    return pairs, issues


def _make_pair(spath: str, number: int, fields: dict[str, Any]) -> Pair | list[InputIssue]:
    try:
        return Pair.model_validate(fields)
    except ValidationError as exc:
        return validation_issues(spath, number, exc)


class _UniqueIds:
    """Hands out ``key``, ``key#2``, ``key#3``, ... for repeated keys."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._used: set[str] = set()

    def __call__(self, key: str) -> str:
        self._seen[key] += 1
        count = self._seen[key]
        candidate = key if count == 1 else f"{key}#{count}"
        while candidate in self._used:
            count += 1
            candidate = f"{key}#{count}"
        self._used.add(candidate)
        return candidate


# ---------------------------------------------------------------------------------------
# CodePrefBench
# ---------------------------------------------------------------------------------------


def load_codeprefbench(
    path: str | os.PathLike[str], *, skip_invalid: bool = False
) -> tuple[list[Pair], list[InputIssue]]:
    """Load CodePrefBench rows (``task_id, instruction, choices, gt_choice, annotations?``).

    ``label`` is ``A`` when ``gt_choice`` is 0 and ``B`` when it is 1 (an int or its string).
    ``category`` is the ``task_id`` prefix before the first ``/`` (``lbpp``,
    ``BigCodeBench``, ``HumanEval``, ...). ``pair_id`` is the ``task_id``, with ``#2``,
    ``#3``, ... appended to repeats (the correctness and efficiency files repeat task ids).
    ``model_a``/``model_b`` are ``A``/``B``.

    Votes: in the human-preference file the ``annotations`` (``codeA``/``codeB``/``Tie``)
    are not in the order of ``choices`` (15 rows have ``gt_choice`` 1 and three ``codeA``
    votes; upstream's evaluator uses only ``gt_choice``). The raw annotations are kept in the
    extra field ``annotations``, and ``votes`` records the agreement pattern relative to the
    label: every non-``Tie`` annotation on the majority side (by count among non-``Tie``
    annotations) is a vote for ``label``, every one on the minority side a vote for the
    other side, and every ``Tie`` a ``tie``. So ``["codeA", "codeA", "Tie"]`` with
    ``gt_choice`` 1 gives ``votes == ["B", "B", "tie"]``.

    Args:
        path: JSONL file, optionally gzipped.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On any unusable row unless ``skip_invalid``.
    """
    source = f"codeprefbench:{Path(path).name}"
    pairs, issues = codeprefbench_pairs(iter_objects(path), str(path), source)
    return _finish(pairs, issues, skip_invalid)


CODEPREFBENCH_CRITERIA = {
    "correctness": "correctness",
    "efficiency": "efficiency",
    "security": "security",
    "human-preference": None,
}
"""CodePrefBench split → the evidence that decides its pairs (None: the developers' overall
preference, which no single kind of evidence decides; the evidence judge weighs its
default order)."""


def codeprefbench_criterion(where: str) -> str | None:
    """The criterion of a CodePrefBench split, read from its file name (``security-alignment``).

    Args:
        where: The split's file path or label (``hub:amazon/CodePrefBench[...]`` names the
            file it read).

    Returns:
        ``correctness``, ``efficiency`` or ``security``; None for the human-preference split
        and for names that are not a split's.
    """
    found = re.search(r"(correctness|efficiency|security|human-preference)-alignment", where)
    return CODEPREFBENCH_CRITERIA[found.group(1)] if found else None


def codeprefbench_pairs(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]], spath: str, source: str
) -> tuple[list[Pair], list[InputIssue]]:
    """CodePrefBench rows (from a file or a dataset) into pairs (see :func:`load_codeprefbench`).

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues (a path or ``hub:NAME[SPLIT]``).
        source: The pairs' ``source`` field.

    Returns:
        ``(pairs, issues)``.
    """
    unique = _UniqueIds()
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    criterion = codeprefbench_criterion(spath)
    for number, data in rows:
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        row_issues: list[InputIssue] = []

        def bad(
            field: str, message: str, number: int = number, sink: list[InputIssue] = row_issues
        ) -> None:
            sink.append(InputIssue(spath, number, field, message))

        task_id = data.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            bad("task_id", "expected a non-empty string")
        instruction = data.get("instruction")
        if not isinstance(instruction, str):
            bad("instruction", "expected a string")
        choices = data.get("choices")
        if not (
            isinstance(choices, list)
            and len(choices) == 2
            and all(isinstance(c, str) for c in choices)
        ):
            bad("choices", "expected a list of two strings")
        gt = data.get("gt_choice")
        label: Side | None = None
        if gt in (0, 1, "0", "1") and not isinstance(gt, bool):
            label = "A" if int(gt) == 0 else "B"
        else:
            bad("gt_choice", f"expected 0 or 1, got {gt!r}")
        annotations = data.get("annotations")
        sides: list[str] = []
        pair_id = ""
        if annotations is not None:
            if not isinstance(annotations, list):
                bad("annotations", "expected a list of 'codeA'/'codeB'/'Tie'")
            else:
                for i, value in enumerate(annotations):
                    side = _ANNOTATIONS.get(value.lower()) if isinstance(value, str) else None
                    if side is None:
                        bad(
                            f"annotations.{i}", f"expected 'codeA', 'codeB' or 'Tie', got {value!r}"
                        )
                    else:
                        sides.append(side)
        if isinstance(task_id, str) and task_id:
            pair_id = unique(task_id)
        if row_issues:
            issues.extend(row_issues)
            continue
        assert label is not None and isinstance(task_id, str) and isinstance(choices, list)
        fields: dict[str, Any] = {
            "pair_id": pair_id,
            "task_id": task_id,
            "instruction": instruction,
            "response_a": choices[0],
            "response_b": choices[1],
            "label": label,
            "votes": _agreement_votes(sides, label),
            "category": task_id.split("/", 1)[0],
            "source": source,
            "criterion": criterion,
        }
        if annotations is not None:
            fields["annotations"] = annotations
        made = _make_pair(spath, number, fields)
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return pairs, issues


def _agreement_votes(sides: list[str], label: Side) -> list[Side]:
    counts = Counter(side for side in sides if side != "tie")
    major = max(counts.values(), default=0)
    minor = sum(counts.values()) - major
    ties = len(sides) - major - minor
    other: Side = _OTHER.get(label, "tie")
    return [label] * major + [other] * minor + ["tie"] * ties


# ---------------------------------------------------------------------------------------
# Copilot Arena
# ---------------------------------------------------------------------------------------


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
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    try:
        handle = open_csv(path)
    except READ_ERRORS as exc:
        raise InputError([stream_issue(spath, 0, exc)]) from exc
    with handle:
        counter = _LineCounter(handle)
        reader = csv.DictReader(counter)
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
            if row_issues:
                issues.extend(row_issues)
                continue
            accepted = float(row["acceptedIndex"])
            key = f"copilot_arena/{index}"
            fields = {
                "pair_id": key,
                "task_id": key,
                "instruction": FIM_TEMPLATE.format(prefix=row["prefix"], suffix=row["suffix"]),
                "response_a": row["completion_a"],
                "response_b": row["completion_b"],
                "model_a": row["model_a"],
                "model_b": row["model_b"],
                "label": "A" if accepted == 0 else "B",
                "category": "copilot_arena",
                "source": source,
            }
            made = _make_pair(spath, start, fields)
            if isinstance(made, list):
                issues.extend(made)
            else:
                pairs.append(made)
    return _finish(pairs, issues, skip_invalid)


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


# ---------------------------------------------------------------------------------------
# BigCodeReward
# ---------------------------------------------------------------------------------------


def load_bigcodereward(
    path: str | os.PathLike[str], *, skip_invalid: bool = False
) -> tuple[list[Pair], list[InputIssue]]:
    """Load ``bigcode/bigcodereward`` rows (JSONL(.gz), or Parquet when pandas can read it).

    A response is the content of the last message of ``states.model_A.messages`` (resp.
    ``model_B``) whose role contains ``assistant`` (case-insensitive; FastChat roles look
    like ``<|im_start|>assistant``). Messages are ``[role, content]`` pairs or
    ``{"role", "content"}`` objects. Without ``states``, ``response_A``/``response_B`` are
    used. ``human_vote`` maps ``leftvote``→A, ``rightvote``→B, ``tievote`` and
    ``bothbad_vote``→tie, and ``A``/``B``/``tie``/``model_A``/``model_B``
    case-insensitively; the raw value is kept in the extra field ``human_vote`` and
    ``votes`` holds the one vote. ``evidence_a``/``evidence_b`` are built from the
    non-empty execution outputs and errors (``execution output: ...``, ``execution error:
    ...``, at most :data:`EVIDENCE_CHARS` characters each). ``pair_id`` and ``task_id`` are
    ``chat_session_id``; ``category`` is ``category_name``. For Parquet, an issue's
    "line" is the 1-based row number.

    Args:
        path: JSONL (optionally gzipped) or Parquet file.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On any unusable row unless ``skip_invalid``, or on a Parquet file when
            pandas/pyarrow are not installed.
    """
    spath = str(path)
    source = f"bigcodereward:{Path(path).name}"
    with Path(path).open("rb") as probe:
        parquet = probe.read(4) == b"PAR1"
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]]
    rows = _parquet_rows(path) if parquet else iter_objects(path)
    pairs, issues = bigcodereward_pairs(rows, spath, source)
    return _finish(pairs, issues, skip_invalid)


def bigcodereward_pairs(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]], spath: str, source: str
) -> tuple[list[Pair], list[InputIssue]]:
    """BigCodeReward rows (from a file or a dataset) into pairs (see :func:`load_bigcodereward`).

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues (a path or ``hub:NAME[SPLIT]``).
        source: The pairs' ``source`` field.

    Returns:
        ``(pairs, issues)``.
    """
    unique = _UniqueIds()
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    for number, data in rows:
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        made = _bigcodereward_pair(spath, number, data, source, unique)
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return pairs, issues


def _parquet_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    advice = (
        "reading Parquet needs pandas with pyarrow ({why}); install them, or convert the "
        "file to JSONL first, e.g. with the `datasets` library: "
        "load_dataset('bigcode/bigcodereward', split='train').to_json('bigcodereward.jsonl')"
    )
    try:
        import pandas as pd
    except ImportError as exc:
        raise InputError([InputIssue(str(path), 0, "", advice.format(why=exc))]) from exc
    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise InputError([InputIssue(str(path), 0, "", advice.format(why=exc))]) from exc
    except Exception as exc:  # pyarrow raises its own errors on a corrupt or truncated file
        message = f"not a readable Parquet file ({type(exc).__name__}: {exc})"
        raise InputError([InputIssue(str(path), 0, "", message)]) from exc
    for number, record in enumerate(frame.to_dict("records"), start=1):
        yield number, _plain(record)


def _plain(value: Any) -> Any:
    """Turn numpy arrays and scalars (as pandas gives them) into plain Python values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _plain(value.tolist())
    if isinstance(value, float) and value != value:  # NaN stands for a missing value
        return None
    return value


def _bigcodereward_pair(
    spath: str,
    number: int,
    data: dict[str, Any],
    source: str,
    unique: _UniqueIds,
) -> Pair | list[InputIssue]:
    issues: list[InputIssue] = []

    def bad(field: str, message: str) -> None:
        issues.append(InputIssue(spath, number, field, message))

    session = data.get("chat_session_id")
    if not isinstance(session, str) or not session:
        bad("chat_session_id", "expected a non-empty string")
    instruction = data.get("instruction")
    if not isinstance(instruction, str):
        bad("instruction", "expected a string")
    raw_vote = data.get("human_vote")
    label = BIGCODEREWARD_VOTES.get(raw_vote.strip().lower()) if isinstance(raw_vote, str) else None
    if label is None:
        known = "leftvote, rightvote, tievote, bothbad_vote, A, B, tie, model_A, model_B"
        bad("human_vote", f"unknown vote {raw_vote!r} (expected one of {known})")
    models = {}
    for side in ("A", "B"):
        model = data.get(f"model_{side}")
        if not isinstance(model, str) or not model:
            bad(f"model_{side}", "expected a non-empty string")
        models[side] = model
    responses = {side: _bigcodereward_response(data, side, bad) for side in ("A", "B")}
    category = data.get("category_name")
    if category is not None and not isinstance(category, str):
        bad("category_name", "expected a string")
    if issues:
        return issues
    assert isinstance(session, str)
    fields: dict[str, Any] = {
        "pair_id": unique(session),
        "task_id": session,
        "instruction": instruction,
        "response_a": responses["A"],
        "response_b": responses["B"],
        "model_a": models["A"],
        "model_b": models["B"],
        "label": label,
        "votes": [label],
        "category": category,
        "evidence_a": _execution_evidence(data, "A"),
        "evidence_b": _execution_evidence(data, "B"),
        "source": source,
        "human_vote": raw_vote,
    }
    if data.get("category_id") is not None:
        fields["category_id"] = data["category_id"]
    return _make_pair(spath, number, fields)


def _bigcodereward_response(data: dict[str, Any], side: str, bad: Any) -> str | None:
    states = data.get("states")
    if states is None:
        response = data.get(f"response_{side}")
        if not isinstance(response, str):
            bad(f"states.model_{side}", f"no states and no response_{side} string")
            return None
        return response
    field = f"states.model_{side}.messages"
    state = states.get(f"model_{side}") if isinstance(states, dict) else None
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list):
        bad(field, "expected a list of [role, content] messages")
        return None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict):
            role, content = message.get("role"), message.get("content")
        elif isinstance(message, list | tuple) and len(message) == 2:
            role, content = message
        else:
            bad(f"{field}.{index}", "expected a [role, content] pair")
            return None
        if isinstance(role, str) and "assistant" in role.lower() and content is not None:
            if not isinstance(content, str):
                bad(f"{field}.{index}", f"expected string content, got {type(content).__name__}")
                return None
            return content
    bad(field, "no assistant message")
    return None


def _execution_evidence(data: dict[str, Any], side: str) -> list[str]:
    lines = []
    for kind in ("output", "error"):
        text = data.get(f"execution_{kind}_{side}")
        if isinstance(text, str) and text.strip():
            lines.append(f"execution {kind}: {shorten(text, EVIDENCE_CHARS)}")
    return lines


# ---------------------------------------------------------------------------------------
# prefjudge pairs
# ---------------------------------------------------------------------------------------


def load_prefjudge_pairs(
    path: str | os.PathLike[str], *, skip_invalid: bool = False
) -> tuple[list[Pair], list[InputIssue]]:
    """Load a JSONL file of :class:`Pair` records, validated field by field.

    A repeated ``pair_id`` is an issue (it is the resume key of ``prefjudge judge``).

    Args:
        path: JSONL file, optionally gzipped.
        skip_invalid: Return invalid lines as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On any invalid line unless ``skip_invalid``.
    """
    pairs, issues = prefjudge_pairs(iter_objects(path), str(path))
    return _finish(pairs, issues, skip_invalid)


def prefjudge_pairs(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]], spath: str
) -> tuple[list[Pair], list[InputIssue]]:
    """:class:`Pair` records (from a file or a dataset), validated, ``pair_id`` unique.

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues.

    Returns:
        ``(pairs, issues)``.
    """
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    first_line: dict[str, int] = {}
    for number, data in rows:
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        made = _make_pair(spath, number, data)
        if isinstance(made, list):
            issues.extend(made)
            continue
        pair = made
        if pair.pair_id in first_line:
            message = (
                f"duplicate pair_id {pair.pair_id!r} (first on line {first_line[pair.pair_id]})"
            )
            issues.append(InputIssue(spath, number, "pair_id", message))
            continue
        first_line[pair.pair_id] = number
        pairs.append(pair)
    return pairs, issues


# ---------------------------------------------------------------------------------------
# Rows from a dataset, and sources by name (hub datasets, dataset folders)
# ---------------------------------------------------------------------------------------


def pairs_from_rows(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]],
    where: str,
    *,
    fmt: PairFormat | Literal["auto"] = "auto",
    skip_invalid: bool = False,
) -> tuple[list[Pair], list[InputIssue]]:
    """Convert dataset rows into pairs with the converters files use.

    Args:
        rows: ``(row number, row or issue)`` pairs.
        where: The rows' origin, for issues and the pairs' ``source`` (``FORMAT:WHERE``,
            without a ``hub:`` prefix).
        fmt: ``auto`` (told from the first row's keys), ``codeprefbench``,
            ``bigcodereward`` or ``prefjudge``; Copilot Arena is read from its CSV only.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On unusable rows (unless ``skip_invalid``), on rows whose format cannot
            be told, on ``copilot_arena``, or when there are no rows.
    """
    rows = list(rows)
    if fmt == "auto":
        first = next(((n, r) for n, r in rows if not isinstance(r, InputIssue)), None)
        if first is None:
            found = [r for _, r in rows if isinstance(r, InputIssue)]
            raise InputError(found or [InputIssue(where, 0, "", "the dataset has no rows")])
        detected = format_from_keys(first[1])
        if detected is None:
            raise InputError([InputIssue(where, first[0], "", _unknown_keys(first[1]))])
        fmt = detected
    name = where.removeprefix("hub:")
    if fmt == "codeprefbench":
        pairs, issues = codeprefbench_pairs(rows, where, f"codeprefbench:{name}")
    elif fmt == "bigcodereward":
        pairs, issues = bigcodereward_pairs(rows, where, f"bigcodereward:{name}")
    elif fmt == "prefjudge":
        pairs, issues = prefjudge_pairs(rows, where)
    else:
        message = f"{fmt!r} pairs are read from their CSV file only; download it and pass its path"
        raise InputError([InputIssue(where, 0, "", message)])
    return _finish(pairs, issues, skip_invalid)


def open_preference_source(
    source: str | os.PathLike[str],
    *,
    fmt: PairFormat | Literal["auto"] = "auto",
    split: str | None = None,
    subset: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    **hub_kwargs: Any,
) -> tuple[list[Pair], list[InputIssue], Origin]:
    """Load preference pairs from a file, a dataset folder or the hub, saying from where.

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
    if isinstance(target, Path) and target.is_file():
        pairs, issues = load_pairs(target, fmt=fmt, skip_invalid=skip_invalid)
        origin = Origin(str(target), (target,))
    elif isinstance(target, HubDataset) and target.by_files:
        if split not in (None, target.split):
            raise UnknownSourceError(f"{target.repo}: has only the split {target.split!r}")
        paths, origin = hub_files(target, subset, **hub_kwargs)
        if fmt == "auto" and target.pair_format in PAIR_FORMATS:
            fmt = target.pair_format  # type: ignore[assignment]
        pairs, issues = [], []
        for path in paths:
            found, problems = load_pairs(path, fmt=fmt, skip_invalid=skip_invalid)
            pairs += found
            issues += problems
    else:
        rows = source_rows(target, split=split, subset=subset, limit=limit, **hub_kwargs)
        if fmt == "auto" and isinstance(target, HubDataset) and target.pair_format in PAIR_FORMATS:
            fmt = target.pair_format  # type: ignore[assignment]
        pairs, issues = pairs_from_rows(
            rows.rows, rows.origin.label, fmt=fmt, skip_invalid=skip_invalid
        )
        origin = rows.origin
    if limit is not None:
        pairs = pairs[:limit]
    return pairs, issues, origin


def load_preference_source(
    source: str | os.PathLike[str],
    *,
    fmt: PairFormat | Literal["auto"] = "auto",
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
