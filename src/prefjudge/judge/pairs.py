"""Load pairwise code-preference data into :class:`~prefjudge.records.Pair` records.

Supported inputs (``load_pairs`` detects the format from the file's content):

- ``codeprefbench``: CodePrefBench JSONL(.gz) rows (``choices``, ``gt_choice``).
- ``copilot_arena``: the Copilot Arena CSV of fill-in-the-middle battles.
- ``bigcodereward``: Hugging Face ``bigcode/bigcodereward`` rows exported to JSONL(.gz)
  (Parquet too, when pandas with pyarrow is installed).
- ``prefjudge``: JSONL of ``Pair`` records themselves.

A row that cannot be used is never dropped silently: it becomes an :class:`InputIssue`
naming file, line and field. Loaders raise :class:`InputError` with every issue, or, with
``skip_invalid=True``, return the issues beside the usable pairs.
"""

from __future__ import annotations

import csv
import os
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
    read_records,
    stream_issue,
    utf8_problem,
    validation_issues,
)
from prefjudge.records import Generation, Pair, ScoredSample, Side

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

EVIDENCE_CHARS = 300
"""How much of an execution output or error goes into one evidence line."""

DETAIL_CHARS = 200
"""How much of a test detail or check reason goes into one evidence line."""

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
                        "completion_a); pass fmt= to force a format",
                    )
                ]
            )
    unreadable: list[InputIssue] = []
    for number, data in iter_objects(path):
        if isinstance(data, InputIssue):  # the next readable line tells the format
            unreadable.append(data)
            continue
        keys = set(data)
        if {"response_a", "response_b"} <= keys:
            return "prefjudge"
        if {"choices", "gt_choice"} <= keys:
            return "codeprefbench"
        if "human_vote" in keys or "chat_session_id" in keys:
            return "bigcodereward"
        shown = ", ".join(sorted(keys)[:12])
        message = f"cannot tell the pair format from the keys ({shown}); pass fmt= to force one"
        raise InputError([InputIssue(spath, number, "", message)])
    if unreadable:
        raise InputError(unreadable)
    raise InputError([InputIssue(spath, 0, "", "the file has no records")])


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
    spath = str(path)
    source = f"codeprefbench:{Path(path).name}"
    unique = _UniqueIds()
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    for number, data in iter_objects(path):
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
        }
        if annotations is not None:
            fields["annotations"] = annotations
        made = _make_pair(spath, number, fields)
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return _finish(pairs, issues, skip_invalid)


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
    return _finish(pairs, issues, skip_invalid)


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
            lines.append(f"execution {kind}: {_shorten(text, EVIDENCE_CHARS)}")
    return lines


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


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
    records, issues = read_records(path, Pair, collect=True)
    pairs: list[Pair] = []
    first_line: dict[str, int] = {}
    for number, pair in records:
        if pair.pair_id in first_line:
            message = (
                f"duplicate pair_id {pair.pair_id!r} (first on line {first_line[pair.pair_id]})"
            )
            issues.append(InputIssue(str(path), number, "pair_id", message))
            continue
        first_line[pair.pair_id] = number
        pairs.append(pair)
    return _finish(pairs, issues, skip_invalid)


# ---------------------------------------------------------------------------------------
# Pairs from generations, and evidence from scores
# ---------------------------------------------------------------------------------------


def _listing(ids: list[str], limit: int = 20) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... and {len(ids) - limit} more" if len(ids) > limit else "")


def _first_per_task(
    path: str | os.PathLike[str], notes: list[str]
) -> dict[str, tuple[int, Generation]]:
    records, _ = read_records(path, Generation)
    first: dict[str, tuple[int, Generation]] = {}
    repeated: Counter[str] = Counter()
    for number, gen in records:
        if gen.task_id in first:
            repeated[gen.task_id] += 1
        else:
            first[gen.task_id] = (number, gen)
    if repeated:
        notes.append(
            f"{path}: {len(repeated)} task id(s) have several generations; the first of each "
            f"was used: {_listing(sorted(repeated))}"
        )
    return first


def pairs_from_generations(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    *,
    tasks: Mapping[str, str] | None = None,
) -> tuple[list[Pair], list[str]]:
    """Pair two models' generations of the same tasks.

    Generations are joined on ``task_id`` (the first generation of a task in each file is
    used). The instruction is ``tasks[task_id]`` when given, else the generation's
    ``prompt`` field (of ``path_a``'s generation, then ``path_b``'s).
    ``pair_id`` is ``f"{task_id}:{model_a}:{model_b}"``; pairs follow ``path_a``'s order.

    Args:
        path_a: Generation JSONL of the first model.
        path_b: Generation JSONL of the second model.
        tasks: Prompt text by task id.

    Returns:
        ``(pairs, notes)``: the pairs, and human-readable notes on task ids found in only
        one file and on repeated generations.

    Raises:
        InputError: On an invalid generation line, or when a task's instruction is known
            neither from ``tasks`` nor from a ``prompt`` field (names file, line, task id).
    """
    notes: list[str] = []
    gens_a = _first_per_task(path_a, notes)
    gens_b = _first_per_task(path_b, notes)
    only_a = [t for t in gens_a if t not in gens_b]
    only_b = [t for t in gens_b if t not in gens_a]
    if only_a:
        notes.append(f"{len(only_a)} task id(s) only in {path_a}: {_listing(only_a)}")
    if only_b:
        notes.append(f"{len(only_b)} task id(s) only in {path_b}: {_listing(only_b)}")
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    for task_id, (line_a, gen_a) in gens_a.items():
        if task_id not in gens_b:
            continue
        gen_b = gens_b[task_id][1]
        instruction = tasks.get(task_id) if tasks is not None else None
        if instruction is None:
            for gen in (gen_a, gen_b):
                prompt = (gen.model_extra or {}).get("prompt")
                if isinstance(prompt, str):
                    instruction = prompt
                    break
        if instruction is None:
            message = (
                f"no instruction for task {task_id!r}: pass tasks or give the generation "
                "a 'prompt' field"
            )
            issues.append(InputIssue(str(path_a), line_a, "prompt", message))
            continue
        pairs.append(
            Pair(
                pair_id=f"{task_id}:{gen_a.model}:{gen_b.model}",
                task_id=task_id,
                instruction=instruction,
                response_a=gen_a.response,
                response_b=gen_b.response,
                model_a=gen_a.model,
                model_b=gen_b.model,
                source=f"generations:{Path(path_a).name}+{Path(path_b).name}",
            )
        )
    if issues:
        raise InputError(issues)
    return pairs, notes


def _format_params(params: Mapping[str, Any]) -> str:
    parts = [f"{str(key).replace('_', ' ')} {value}" for key, value in params.items()]
    return f" ({', '.join(parts)})" if parts else ""


def evidence_from_scored(record: dict[str, Any] | ScoredSample) -> list[str]:
    """Turn a ``prefjudge score`` output record into short factual lines for the judge.

    One line per instruction check, e.g. ``instruction style_3 (line length 79): fail —
    line 4 is 95 characters`` (the reason, at most :data:`DETAIL_CHARS` characters, only
    when the check gave one), then the unit-test line when tests ran: ``unit tests:
    pass``, ``unit tests: fail — <detail>``, ``unit tests: timeout`` or ``unit tests:
    error — <detail>``.

    Args:
        record: A scored sample, or its JSON form.

    Returns:
        The evidence lines.

    Raises:
        InputError: When ``record`` is not a valid scored sample.
    """
    if not isinstance(record, ScoredSample):
        try:
            record = ScoredSample.model_validate(record)
        except ValidationError as exc:
            raise InputError(validation_issues("<scored record>", 0, exc)) from exc
    lines = []
    for check in record.instruction_results:
        line = f"instruction {check.id}{_format_params(check.params)}: {check.status}"
        if check.reason.strip():
            line += f" — {_shorten(check.reason, DETAIL_CHARS)}"
        lines.append(line)
    func = record.func
    if func is not None:
        line = f"unit tests: {func.status}"
        if func.status in ("fail", "error") and func.detail.strip():
            line += f" — {_shorten(func.detail, DETAIL_CHARS)}"
        lines.append(line)
    return lines


def _scored_index(
    path: str | os.PathLike[str],
) -> tuple[dict[tuple[str, str], ScoredSample], dict[str, list[ScoredSample]]]:
    records, _ = read_records(path, ScoredSample)
    by_key: dict[tuple[str, str], ScoredSample] = {}
    by_task: dict[str, list[ScoredSample]] = {}
    for _, rec in records:
        by_key.setdefault((rec.task_id, rec.model), rec)
        by_task.setdefault(rec.task_id, []).append(rec)
    return by_key, by_task


def _find_scored(
    index: tuple[dict[tuple[str, str], ScoredSample], dict[str, list[ScoredSample]]],
    task_id: str,
    model: str,
) -> ScoredSample | None:
    by_key, by_task = index
    if (task_id, model) in by_key:
        return by_key[(task_id, model)]
    candidates = by_task.get(task_id, [])
    if candidates and len({rec.model for rec in candidates}) == 1:
        return candidates[0]
    return None


def attach_evidence(
    pairs: Iterable[Pair],
    scored_a_path: str | os.PathLike[str],
    scored_b_path: str | os.PathLike[str],
) -> tuple[list[Pair], list[str]]:
    """Fill ``evidence_a``/``evidence_b`` from ``prefjudge score`` outputs.

    Each side is looked up in its own file by ``(task_id, model)``; when no record has the
    pair's model, a record with the pair's ``task_id`` is used if all records of that task
    in the file come from one model (files of a single model, or pairs whose model names
    are the placeholders ``A``/``B``). A side with no match keeps its evidence and is noted.

    Args:
        pairs: The pairs (not modified).
        scored_a_path: Scored samples of the ``response_a`` side.
        scored_b_path: Scored samples of the ``response_b`` side.

    Returns:
        ``(pairs, notes)``: new pairs with evidence filled, and one note per side that
        found no scored record.

    Raises:
        InputError: On an invalid line in either scored file.
    """
    index_a = _scored_index(scored_a_path)
    index_b = _scored_index(scored_b_path)
    out: list[Pair] = []
    notes: list[str] = []
    for pair in pairs:
        update: dict[str, list[str]] = {}
        for side, index, model, path in (
            ("a", index_a, pair.model_a, scored_a_path),
            ("b", index_b, pair.model_b, scored_b_path),
        ):
            found = _find_scored(index, pair.task_id, model)
            if found is None:
                notes.append(
                    f"pair {pair.pair_id}: no scored record for task {pair.task_id!r} "
                    f"and model {model!r} in {path}"
                )
            else:
                update[f"evidence_{side}"] = evidence_from_scored(found)
        out.append(pair.model_copy(update=update, deep=True))
    return out, notes
