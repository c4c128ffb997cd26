"""Reading the inputs of ``prefjudge rank`` and ``prefjudge correlate``, with file:line errors.

Battles, per-model score tables, Elo tables, alias files and scored records can come as
CSV, JSON (an array of objects, or an object holding one under ``ratings``/``models``)
or JSONL; ``.gz`` is decompressed transparently. Every problem is reported with its
file, line (record number for JSON arrays) and field, all at once.

Every battle source (``prefjudge judge`` verdicts, arena CSV/JSONL with their own column
names and winner labels) is read into :class:`prefjudge.records.Battle` records, the one
battle contract; :func:`read_battles` returns them as a frame (:func:`battles_frame`). A
verdict row becomes a battle by :meth:`prefjudge.records.Verdict.battle`, the one rule of
what counts (:func:`verdict_battle`): an error is reported, a verdict decided by no
evidence is not a battle and is counted apart (:attr:`BattleFile.no_evidence`).

A battle row may also carry the style features of its two responses (for
``prefjudge rank --control``, :mod:`prefjudge.ranking.style`): ``features_a`` and
``features_b``, objects of non-negative numbers, where a value may itself be an object of
numbers that is summed (``{"token_len": 120, "list_count": {"ordered": 2,
"unordered": 3}}``, as :func:`prefjudge.features.features_record` writes and
arena-hard-auto's ``conv_metadata`` has them); in a CSV, a cell holding such a JSON
object. arena-hard-auto's flat ``conv_metadata`` (``sum_assistant_a_tokens``,
``header_count_a``, … ``bold_count_b``) is read as the same four features when a row
has no ``features_a``/``features_b``. They become the frame columns ``fa_<name>`` and
``fb_<name>`` (:func:`feature_column`; NaN where a row has none), with the tokenizer
names in ``tokenizer_a``/``tokenizer_b``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from prefjudge.features import TOKENIZER_KEY
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
from prefjudge.records import (
    NO_EVIDENCE,
    Battle,
    battle_of,
    is_verdict_row,
    model_name_warnings,
    normalize_model_name,
)
from prefjudge.reporting import display_name

CANONICAL_WINNERS = ("model_a", "model_b", "tie")
BATTLE_COLUMNS = ["model_a", "model_b", "winner", "weight", "category", "line"]
"""Columns of a battles frame: the :class:`~prefjudge.records.Battle` fields and ``line``."""
_MAX_ISSUES = 200
FEATURE_FIELDS = {"a": "features_a", "b": "features_b"}
"""Row fields holding the style features of each side's response."""
TOKENIZER_COLUMNS = {"a": "tokenizer_a", "b": "tokenizer_b"}
"""Frame columns naming the tokenizer that counted each side's ``token_len``."""
_CONV_METADATA = {
    "sum_assistant_a_tokens": ("a", "token_len"),
    "header_count_a": ("a", "header_count"),
    "list_count_a": ("a", "list_count"),
    "bold_count_a": ("a", "bold_count"),
    "sum_assistant_b_tokens": ("b", "token_len"),
    "header_count_b": ("b", "header_count"),
    "list_count_b": ("b", "list_count"),
    "bold_count_b": ("b", "bold_count"),
}


class ModelNameWarning(UserWarning):
    """Model names in one input that differ only by case or by Unicode normalisation."""


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


def _label(value: Any) -> list[str]:
    """Lookup keys for a winner label: as written, and integers written as floats."""
    text = str(value).strip()
    keys = [text]
    try:
        number = float(text)
    except ValueError:
        return keys
    if number.is_integer():
        keys.append(str(int(number)))
    return keys


@dataclass(frozen=True)
class BattleColumns:
    """Where the battle fields are in the input file.

    Attributes:
        model_a: Column of the first model.
        model_b: Column of the second model.
        winner: Column of the outcome.
        weight: Column of the optional weight.
        category: Column of the optional category (or any ``--by`` column).
    """

    model_a: str = "model_a"
    model_b: str = "model_b"
    winner: str = "winner"
    weight: str = "weight"
    category: str = "category"


def _winner(raw: Any, mapping: Mapping[str, str]) -> str | None:
    for key in _label(raw):
        found = mapping.get(key) or (key if key in CANONICAL_WINNERS else None)
        if found:
            return found
    return None


def _parse_battle(
    row: Row, cols: BattleColumns, mapping: Mapping[str, str], labels: Mapping[str, str]
) -> tuple[Battle | None, list[tuple[str, str]]]:
    """Read one battle row: ``(battle or None, [(field, problem), ...])``.

    The common row (string names, a winner label as written in ``labels``) is validated
    by :class:`Battle` directly; any row it rejects is checked field by field, which
    names every problem with the file's column names (and still accepts what only needed
    tidying: a label with spaces, a number as a label, a blank weight).
    """
    data = row.data
    raw = data.get(cols.winner)
    fields: dict[str, Any] = {
        "model_a": data.get(cols.model_a),
        "model_b": data.get(cols.model_b),
        "winner": labels.get(raw) if isinstance(raw, str) else None,
    }
    raw_weight = data.get(cols.weight)
    try:
        if raw_weight is not None and raw_weight != "":
            fields["weight"] = float(raw_weight)
        raw_category = data.get(cols.category)
        if raw_category is not None:
            fields["category"] = None if _missing(raw_category) else str(raw_category)
        return Battle.model_validate(fields), []
    except (TypeError, ValueError, ValidationError):  # ValidationError is a ValueError
        return _checked_battle(row, cols, mapping)


def _checked_battle(
    row: Row, cols: BattleColumns, mapping: Mapping[str, str]
) -> tuple[Battle | None, list[tuple[str, str]]]:
    """Check a battle row field by field, naming each problem; the battle when none."""
    problems: list[tuple[str, str]] = []
    names = []
    for field in (cols.model_a, cols.model_b):
        value = row.data.get(field)
        if _missing(value):
            problems.append((field, "missing model name"))
        elif not isinstance(value, str):
            problems.append((field, f"model name must be a string, got {value!r:.80}"))
        else:
            value = normalize_model_name(value)
        names.append(value)
    if not problems and names[0] == names[1]:
        problems.append((cols.model_b, f"model_a and model_b are the same model {names[0]!r}"))
    raw = row.data.get(cols.winner)
    winner = None if _missing(raw) else _winner(raw, mapping)
    if _missing(raw) and row.data.get("status") == "error":  # a `prefjudge judge` verdict
        problems.append((cols.winner, f"no winner: the judge failed ({row.data.get('error')})"))
    elif _missing(raw):
        problems.append((cols.winner, "missing winner"))
    elif winner is None:
        accepted = ", ".join(sorted(set(CANONICAL_WINNERS) | set(mapping)))
        problems.append((cols.winner, f"unknown winner label {str(raw)!r}; expected one of "
                         f"{accepted} (map others with --winner-map, "
                         "e.g. --winner-map left=model_a,right=model_b)"))
    weight, weight_problems = _weight(row.data, cols)
    problems += weight_problems
    if problems:
        return None, problems
    battle = Battle(model_a=names[0], model_b=names[1], winner=winner, weight=weight,
                    category=_category(row.data, cols))
    return battle, []


def _weight(data: Mapping[str, Any], cols: BattleColumns) -> tuple[float, list[tuple[str, str]]]:
    """The row's weight (1 when it has none), or the problem with it."""
    raw_weight = data.get(cols.weight)
    if _missing(raw_weight):
        return 1.0, []
    try:
        weight = float(raw_weight)
    except (TypeError, ValueError):
        return 1.0, [(cols.weight, f"weight must be a number, got {raw_weight!r}")]
    if not math.isfinite(weight) or weight < 0:
        return 1.0, [(cols.weight, f"weight must be finite and >= 0, got {raw_weight!r}")]
    return weight, []


def _category(data: Mapping[str, Any], cols: BattleColumns) -> str | None:
    """The row's category (the ``--by`` column), None when blank or absent."""
    raw_category = data.get(cols.category)
    return None if _missing(raw_category) else str(raw_category)


def verdict_battle(data: Mapping[str, Any]) -> Battle | None:
    """The battle of a ``prefjudge`` verdict row, blank cells read as absent.

    The rule is :meth:`prefjudge.records.Verdict.battle` (through
    :func:`prefjudge.records.battle_of`): an error and a verdict decided by no evidence are
    not battles.

    Args:
        data: The row (:func:`prefjudge.records.is_verdict_row` holds for it).

    Returns:
        The battle (without weight, ``--by`` category or style features), or None.

    Raises:
        ValidationError: When the row is not a valid verdict, or names one model twice.
    """
    return battle_of({key: value for key, value in data.items() if not _missing(value)})


def _verdict_problems(row: Row, cols: BattleColumns, mapping: Mapping[str, str],
                      exc: ValidationError) -> list[tuple[str, str]]:
    """Why a verdict row is no valid verdict, in the words of a battle row when they fit."""
    _, problems = _checked_battle(row, cols, mapping)
    return problems or [(".".join(str(part) for part in error["loc"]) or "(row)", error["msg"])
                        for error in exc.errors()]


def _parse_verdict(
    row: Row, cols: BattleColumns, mapping: Mapping[str, str]
) -> tuple[Battle | None, list[tuple[str, str]]]:
    """Read one ``prefjudge`` verdict row: ``(battle or None, [(field, problem), ...])``.

    The battle is the verdict's own (:func:`verdict_battle`), with the weight and category
    (``--by``) columns of ``cols``. ``(None, [])`` is a valid verdict that is no battle
    (decided by no evidence); a verdict without a winner is a problem, as in a battle row.
    """
    data = row.data
    own = BattleColumns(weight=cols.weight, category=cols.category)  # a verdict's own names
    try:
        battle = verdict_battle(data)
    except ValidationError as exc:
        return None, _verdict_problems(row, own, mapping, exc)
    if battle is None and _missing(data.get("winner")):  # the judge failed: a problem
        return None, _checked_battle(row, own, mapping)[1]
    if battle is None:
        return None, []
    weight, problems = _weight(data, cols)
    if problems:
        return None, problems
    return battle.model_copy(update={"weight": weight, "category": _category(data, cols)}), []


def feature_column(side: str, name: str) -> str:
    """Frame column of feature ``name`` of side ``a`` or ``b`` (``fa_token_len``)."""
    return f"f{side}_{name}"


@dataclass(frozen=True)
class BattleFeatures:
    """Style features of a battle's two responses (either side may have none).

    Attributes:
        a: Feature name → value for ``model_a``'s response, or None.
        b: The same for ``model_b``'s response.
        tokenizer_a: Tokenizer that counted ``a``'s ``token_len``, when recorded.
        tokenizer_b: The same for ``b``.
    """

    a: dict[str, float] | None = None
    b: dict[str, float] | None = None
    tokenizer_a: str | None = None
    tokenizer_b: str | None = None


def _count(value: Any) -> float | None:
    """A feature count as a float, or None when it is not a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float (JSON allows any number of digits)
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _feature_value(value: Any, field: str) -> tuple[float | None, list[tuple[str, str]]]:
    """A number, or an object of numbers summed; ``(None, [(field, problem)])`` otherwise."""
    if isinstance(value, dict):
        total = 0.0
        for key, part in value.items():
            number = _count(part)
            if number is None:
                return None, [(f"{field}.{key}",
                               f"must be a number >= 0, got {part!r:.80}")]
            total += number
        return total, []
    number = _count(value)
    if number is None:
        return None, [(field, "must be a number >= 0 or an object of such numbers (summed), "
                       f"got {value!r:.80}")]
    return number, []


def _side_features(
    raw: Any, field: str
) -> tuple[dict[str, float] | None, str | None, list[tuple[str, str]]]:
    """Read one ``features_a``/``features_b`` value: ``(features, tokenizer, problems)``."""
    if _missing(raw):
        return None, None, []
    if isinstance(raw, str):  # a CSV cell holding a JSON object
        try:
            raw = parse_json(raw)
        except JsonValueError as exc:
            return None, None, [(field, f"not a JSON object of features ({exc})")]
    if not isinstance(raw, dict):
        return None, None, [(field, f"must be an object of feature counts, got {raw!r}")]
    features: dict[str, float] = {}
    problems: list[tuple[str, str]] = []
    tokenizer = raw.get(TOKENIZER_KEY)
    if tokenizer is not None and not isinstance(tokenizer, str):
        problems.append((f"{field}.{TOKENIZER_KEY}",
                         f"must be the tokenizer's name, got {tokenizer!r}"))
    for key, value in raw.items():
        if key == TOKENIZER_KEY:
            continue
        number, found = _feature_value(value, f"{field}.{key}")
        problems.extend(found)
        if number is not None:
            features[str(key)] = number
    return (None if problems else features), tokenizer, problems


def _conv_metadata(raw: Any) -> tuple[BattleFeatures, list[tuple[str, str]]]:
    """arena-hard-auto's flat ``conv_metadata`` as the four features of each side."""
    if isinstance(raw, str):
        try:
            raw = parse_json(raw)
        except JsonValueError as exc:
            return BattleFeatures(), [("conv_metadata", f"not a JSON object ({exc})")]
    if not isinstance(raw, dict):
        return BattleFeatures(), [("conv_metadata", f"must be an object, got {raw!r}")]
    sides: dict[str, dict[str, float]] = {"a": {}, "b": {}}
    problems: list[tuple[str, str]] = []
    for key, (side, name) in _CONV_METADATA.items():
        if key in raw:
            number, found = _feature_value(raw[key], f"conv_metadata.{key}")
            problems.extend(found)
            if number is not None:
                sides[side][name] = number
    if problems:
        return BattleFeatures(), problems
    return BattleFeatures(sides["a"] or None, sides["b"] or None), []


def parse_features(data: Mapping[str, Any]) -> tuple[BattleFeatures, list[tuple[str, str]]]:
    """Read the style features of a battle row (see the module docstring).

    Args:
        data: The row, column → value.

    Returns:
        ``(features, problems)``; ``problems`` lists ``(field, message)`` for values that
        are not non-negative numbers (or objects of them), and then the features are empty.
    """
    raw_a, raw_b = data.get(FEATURE_FIELDS["a"]), data.get(FEATURE_FIELDS["b"])
    if _missing(raw_a) and _missing(raw_b) and not _missing(data.get("conv_metadata")):
        return _conv_metadata(data["conv_metadata"])
    a, tokenizer_a, problems = _side_features(raw_a, FEATURE_FIELDS["a"])
    b, tokenizer_b, problems_b = _side_features(raw_b, FEATURE_FIELDS["b"])
    problems += problems_b
    if problems:
        return BattleFeatures(), problems
    counted_by = data.get("features_by")  # verdicts and persona comparisons name it once
    if isinstance(counted_by, str):
        tokenizer_a, tokenizer_b = tokenizer_a or counted_by, tokenizer_b or counted_by
    return BattleFeatures(a, b, tokenizer_a, tokenizer_b), []


class _BattleTable:
    """Battles gathered as columns (the records themselves are not kept: 1M battles fit)."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in BATTLE_COLUMNS}
        self.features: list[BattleFeatures | None] = []

    def add(self, battle: Battle, line: int, features: BattleFeatures | None = None) -> None:
        columns = self.columns
        columns["model_a"].append(battle.model_a)
        columns["model_b"].append(battle.model_b)
        columns["winner"].append(battle.winner)
        columns["weight"].append(battle.weight)
        columns["category"].append(battle.category)
        columns["line"].append(line)
        self.features.append(features if features != BattleFeatures() else None)

    def __len__(self) -> int:
        return len(self.columns["line"])

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.columns, columns=BATTLE_COLUMNS)
        if all(f is None for f in self.features):
            return frame
        parts = [frame]
        for side in ("a", "b"):
            values = pd.DataFrame.from_records(
                [(getattr(f, side) or {}) if f else {} for f in self.features],
                index=frame.index,
            )
            parts.append(values.astype(float).rename(columns=lambda c, s=side:
                                                     feature_column(s, str(c))))
            parts.append(pd.Series([getattr(f, f"tokenizer_{side}") if f else None
                                    for f in self.features], index=frame.index,
                                   name=TOKENIZER_COLUMNS[side], dtype=object))
        return pd.concat(parts, axis=1)


def battles_frame(battles: Iterable[Battle], lines: Iterable[int] | None = None) -> pd.DataFrame:
    """Make the frame ``prefjudge rank`` fits from battle records.

    Args:
        battles: Battles, e.g. ``verdict.battle()`` of the verdicts that have one.
        lines: Where each battle came from (default: 1, 2, ...).

    Returns:
        One row per battle with columns :data:`BATTLE_COLUMNS`.
    """
    table = _BattleTable()
    numbered = zip(battles, lines, strict=True) if lines is not None else (
        (battle, index) for index, battle in enumerate(battles, start=1))
    for battle, line in numbered:
        table.add(battle, line)
    return table.frame()


@dataclass(frozen=True)
class BattleFile:
    """What :func:`read_battle_file` read from one battles file.

    Attributes:
        frame: The battles (:func:`battles_frame`'s columns, then the style feature
            columns when any row has features).
        issues: One per problem in the rows left out (the first 200, then one issue
            counting the rest).
        no_evidence: ``prefjudge`` verdicts decided by no evidence (``decided_by``
            :data:`~prefjudge.records.NO_EVIDENCE`): valid, but not battles, so not counted.
    """

    frame: pd.DataFrame
    issues: list[InputIssue]
    no_evidence: int = 0


def no_evidence_note(count: int) -> str:
    """Say that ``count`` verdicts decided by no evidence were not counted (for messages)."""
    verdicts, were = ("verdict", "was") if count == 1 else ("verdicts", "were")
    return (f"{count} {verdicts} decided by no evidence (decided_by {NO_EVIDENCE}) {were} "
            "not counted as battles")


def read_battles(
    path: str | os.PathLike[str],
    *,
    columns: BattleColumns | None = None,
    winner_map: Mapping[str, str] | None = None,
    skip_invalid: bool = False,
) -> tuple[pd.DataFrame, list[InputIssue]]:
    """Read and validate battles: :func:`read_battle_file`'s frame and issues.

    Args:
        path: CSV/JSON/JSONL file.
        columns: Column names (defaults: the :class:`prefjudge.records.Battle` fields).
        winner_map: Extra winner labels → canonical label.
        skip_invalid: Return invalid rows as issues instead of raising.

    Returns:
        ``(battles, issues)``, as :attr:`BattleFile.frame` and :attr:`BattleFile.issues`.

    Raises:
        InputError: As :func:`read_battle_file`.
        ValueError: As :func:`read_battle_file`.
    """
    read = read_battle_file(path, columns=columns, winner_map=winner_map,
                            skip_invalid=skip_invalid)
    return read.frame, read.issues


def _winner_labels(winner_map: Mapping[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """``(mapping, labels)``: the extra labels, and every label a winner may be written as."""
    mapping = {str(k).strip(): v for k, v in (winner_map or {}).items()}
    for label in mapping.values():
        if label not in CANONICAL_WINNERS:
            raise ValueError(f"winner map target {label!r} must be one of {CANONICAL_WINNERS}")
    return mapping, {**{label: label for label in CANONICAL_WINNERS}, **mapping}


class _BattleReader:
    """Rows of one battles file gathered into battles, issues and uncounted verdicts."""

    def __init__(self, spath: str, cols: BattleColumns, winner_map: Mapping[str, str] | None):
        self.spath = spath
        self.cols = cols
        self.mapping, self.labels = _winner_labels(winner_map)
        self.table = _BattleTable()
        self.issues: list[InputIssue] = []
        self.unlisted = 0
        self.raw_names: set[str] = set()
        self.rows = 0
        self.no_evidence = 0
        self.battle_rows = 0
        self.found_columns: set[str] = set()
        self.first_columns: list[str] | None = None

    def problem(self, issues: list[InputIssue]) -> None:
        """Keep the issues of one row while fewer than the limit are kept, else count it."""
        if len(self.issues) < _MAX_ISSUES:
            self.issues.extend(issues)
        else:
            self.unlisted += 1

    def add(self, row: Row | InputIssue) -> None:
        """Read one row: a battle, a problem, or a verdict that is no battle."""
        self.rows += 1
        if isinstance(row, InputIssue):
            self.problem([row])
            return
        verdict = is_verdict_row(row.data)
        if verdict:
            battle, problems = _parse_verdict(row, self.cols, self.mapping)
            if battle is None and not problems:
                self.no_evidence += 1
                return
        else:
            self._columns_of(row)
            battle, problems = _parse_battle(row, self.cols, self.mapping, self.labels)
        features, feature_problems = parse_features(row.data)
        if feature_problems:
            battle, problems = None, problems + feature_problems
        if battle is None:
            self.problem([InputIssue(self.spath, row.line, row.where + field, message)
                          for field, message in problems])
            return
        self.table.add(battle, row.line, features)
        keys = ("model_a", "model_b") if verdict else (self.cols.model_a, self.cols.model_b)
        self.raw_names.update(row.data[key] for key in keys)

    def _columns_of(self, row: Row) -> None:
        """Note which of the battle columns this (non-verdict) row has."""
        self.battle_rows += 1
        if self.first_columns is None:
            self.first_columns = [str(key) for key in row.data]
        if len(self.found_columns) < 3:
            self.found_columns.update(key for key in (self.cols.model_a, self.cols.model_b,
                                                      self.cols.winner) if key in row.data)

    def absent_columns(self) -> list[InputIssue]:
        """One issue per battle column no row has, naming the option that names it."""
        if not self.battle_rows:
            return []
        columns = ", ".join(display_name(name, 40) for name in (self.first_columns or [])[:30])
        flags = ((self.cols.model_a, "--model-a-col"), (self.cols.model_b, "--model-b-col"),
                 (self.cols.winner, "--winner-col"))
        return [InputIssue(self.spath, 0, column,
                           f"no such column in any row (columns: {columns or 'none'}); "
                           f"name the column that holds it with {flag}")
                for column, flag in flags if column not in self.found_columns]

    def finish(self, skip_invalid: bool) -> BattleFile:
        """The battles read, or the error that stops the file."""
        spath = self.spath
        if self.rows == 0:
            raise InputError([InputIssue(spath, 0, "", "no battles in the file (it is empty)")])
        absent = self.absent_columns()
        if absent and (not skip_invalid or not len(self.table)):
            raise InputError(absent)
        issues = self.issues
        if self.unlisted:
            issues.append(InputIssue(spath, 0, "", f"{self.unlisted} more invalid rows not listed"))
        if issues and not skip_invalid:
            raise InputError(issues)
        if not len(self.table):
            why = f" ({no_evidence_note(self.no_evidence)})" if self.no_evidence else ""
            raise InputError([InputIssue(spath, 0, "", "no valid battle in the file" + why),
                              *issues])
        for message in model_name_warnings(self.raw_names):
            warnings.warn(ModelNameWarning(f"{spath}: {message}"), stacklevel=3)
        return BattleFile(self.table.frame(), issues, self.no_evidence)


def read_battle_file(
    path: str | os.PathLike[str],
    *,
    columns: BattleColumns | None = None,
    winner_map: Mapping[str, str] | None = None,
    skip_invalid: bool = False,
) -> BattleFile:
    """Read and validate battles, and count the verdicts that are not battles.

    Each row becomes a :class:`prefjudge.records.Battle` (the winner must be
    ``model_a``, ``model_b`` or ``tie``, or a label that ``winner_map`` maps to one of
    those, e.g. ``{"left": "model_a"}``); a row it cannot become is reported field by
    field. A ``prefjudge`` verdict (a row with ``pair_id``, ``method`` and ``model_a``:
    :func:`prefjudge.records.is_verdict_row`) is read as a verdict: its battle is
    :meth:`prefjudge.records.Verdict.battle` (its own ``model_a``, ``model_b`` and
    ``winner``, whatever ``columns`` names; the weight and category columns still apply),
    so a failed verdict is reported, never counted, and one decided by no evidence is
    not a battle: it is counted in :attr:`BattleFile.no_evidence`, not reported. Model
    names are normalised to Unicode NFC; names that differ only by case, or that were
    written in more than one normalisation form, are reported with a
    :class:`ModelNameWarning` (``warnings.warn``; ``prefjudge rank`` prints it).

    Args:
        path: CSV/JSON/JSONL file.
        columns: Column names (defaults: the :class:`prefjudge.records.Battle` fields).
        winner_map: Extra winner labels → canonical label.
        skip_invalid: Return invalid rows as issues instead of raising.

    Returns:
        The battles as a frame (:func:`battles_frame`: columns ``model_a, model_b, winner,
        weight, category, line``, then the style feature columns when any row has
        features), one issue per problem in the rows left out (a row whose features are
        not numbers is such a problem) and the count of verdicts decided by no evidence.

    Raises:
        InputError: On invalid rows (unless ``skip_invalid``), an empty file, or when
            no valid battle remains.
        ValueError: When ``winner_map`` maps to something other than a canonical label.
    """
    reader = _BattleReader(str(path), columns or BattleColumns(), winner_map)
    for row in iter_rows(path):
        reader.add(row)
    return reader.finish(skip_invalid)


def parse_winner_map(text: str | None) -> dict[str, str]:
    """Parse ``label=canonical,label=canonical`` (e.g. ``left=model_a,right=model_b``).

    Args:
        text: The option value (None or empty: no extra labels).

    Returns:
        Label → canonical winner.

    Raises:
        ValueError: On a malformed pair or a target that is not canonical.
    """
    mapping: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"winner map entry {part!r} is not LABEL=TARGET")
        label, target = (s.strip() for s in part.split("=", 1))
        if target not in CANONICAL_WINNERS:
            raise ValueError(
                f"winner map target {target!r} must be one of {', '.join(CANONICAL_WINNERS)}"
            )
        mapping[label] = target
    return mapping


def read_model_table(
    path: str | os.PathLike[str],
    model_col: str,
    value_cols: list[str],
) -> pd.DataFrame:
    """Read a per-model table of numbers (scores or Elo ratings).

    Empty cells become NaN (the caller lists such models); text that is not a number,
    a missing column, a missing model name or a model named twice is an error.

    Args:
        path: CSV/JSON/JSONL file.
        model_col: Column holding the model name.
        value_cols: Numeric columns to read.

    Returns:
        A frame with ``model`` and the value columns (in file order) plus ``line``.

    Raises:
        InputError: On any of the problems above, or an empty file.
    """
    path = Path(path)
    spath = str(path)
    issues: list[InputIssue] = []
    records: list[dict[str, Any]] = []
    first_line: dict[str, int | str] = {}
    header_checked = False
    for row in iter_rows(path):
        if isinstance(row, InputIssue):
            header_checked = True
            issues.append(row)
            continue
        if not header_checked:
            header_checked = True
            absent = [c for c in [model_col, *value_cols] if c not in row.data]
            if absent and row.where == "":
                shown = ", ".join(sorted(row.data))
                raise InputError([InputIssue(spath, row.line, c,
                                             f"no such column (columns: {shown})")
                                  for c in absent])
        name = row.data.get(model_col)
        if _missing(name):
            issues.append(InputIssue(spath, row.line, row.where + model_col, "missing model name"))
            continue
        name = normalize_model_name(str(name).strip())
        if name in first_line:
            issues.append(InputIssue(spath, row.line, row.where + model_col,
                                     f"model {name!r} appears twice "
                                     f"(first at {first_line[name]})"))
            continue
        first_line[name] = row.line or row.where.rstrip(".")
        record: dict[str, Any] = {"model": name, "line": row.line}
        for col in value_cols:
            value = row.data.get(col)
            if _missing(value):
                record[col] = math.nan
                continue
            try:
                record[col] = float(value)
            except (TypeError, ValueError):
                issues.append(InputIssue(spath, row.line, row.where + col,
                                         f"not a number: {value!r}"))
                record[col] = math.nan
        records.append(record)
    if not header_checked:
        raise InputError([InputIssue(spath, 0, "", "the file is empty")])
    if issues:
        raise InputError(issues)
    return pd.DataFrame(records, columns=["model", *value_cols, "line"])


def is_scored_records(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like ``prefjudge score`` output (JSONL with scored samples).

    Args:
        path: Input file.

    Returns:
        True when it is JSONL whose first record has ``if_instruction`` or ``func``.
    """
    path = Path(path)
    if _format(path) != "jsonl":
        return False
    for row in _iter_jsonl(path):
        if isinstance(row, Row):
            return "if_instruction" in row.data or "func" in row.data
    return False


def read_scored_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the fields of scored records that the correlation needs.

    Args:
        path: JSONL written by ``prefjudge score``.

    Returns:
        Dicts with ``model``, ``if_instruction`` (float or None), ``func_pass`` (bool or
        None when the record has no functional result) and ``n_instructions``.

    Raises:
        InputError: On a record without a model name, a non-numeric
            ``if_instruction``, or a ``func`` without a ``status``.
    """
    spath = str(path)
    issues: list[InputIssue] = []
    out: list[dict[str, Any]] = []
    for row in _iter_jsonl(Path(path)):
        if isinstance(row, InputIssue):
            issues.append(row)
            continue
        data = row.data
        model = data.get("model")
        if not isinstance(model, str) or not model.strip():
            issues.append(InputIssue(spath, row.line, "model", "missing model name"))
            continue
        model = normalize_model_name(model)
        if_value = data.get("if_instruction")
        if if_value is not None and (isinstance(if_value, bool)
                                     or not isinstance(if_value, int | float)):
            issues.append(InputIssue(spath, row.line, "if_instruction",
                                     f"must be a number or null, got {if_value!r}"))
            continue
        func = data.get("func")
        func_pass = None
        if func is not None:
            if not isinstance(func, dict) or not isinstance(func.get("status"), str):
                issues.append(InputIssue(spath, row.line, "func",
                                         'must be null or an object with a "status"'))
                continue
            func_pass = func["status"] == "pass"
        instructions = data.get("instructions")
        out.append({
            "model": model,
            "if_instruction": None if if_value is None else float(if_value),
            "func_pass": func_pass,
            "n_instructions": len(instructions) if isinstance(instructions, list) else None,
        })
    if issues:
        raise InputError(issues)
    if not out:
        raise InputError([InputIssue(spath, 0, "", "no scored records in the file (it is empty)")])
    return out


def read_aliases(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a model-name alias file: score-table name → Elo-table name.

    Accepted forms: a JSON object ``{"name in scores": "name in Elo table"}``, or a
    CSV/JSONL table with columns ``score_model`` and ``elo_model``.

    Args:
        path: Alias file.

    Returns:
        The mapping.

    Raises:
        InputError: On a malformed file or a name mapped twice.
    """
    path = Path(path)
    spath = str(path)
    if _format(path) == "json":
        data = _load_json(path)
        if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
            return {normalize_model_name(str(k)): normalize_model_name(v)
                    for k, v in data.items()}
    aliases: dict[str, str] = {}
    issues: list[InputIssue] = []
    for row in iter_rows(path):
        if isinstance(row, InputIssue):
            issues.append(row)
            continue
        source, target = row.data.get("score_model"), row.data.get("elo_model")
        if _missing(source) or _missing(target):
            issues.append(InputIssue(spath, row.line, row.where + "score_model/elo_model",
                                     "expected columns score_model and elo_model"))
            continue
        source = normalize_model_name(str(source).strip())
        target = normalize_model_name(str(target).strip())
        if source in aliases and aliases[source] != target:
            issues.append(InputIssue(spath, row.line, row.where + "score_model",
                                     f"{source!r} is mapped twice"))
            continue
        aliases[source] = target
    if issues:
        raise InputError(issues)
    return aliases


# --------------------------------------------------------------------------- tasks of battles


def _judged_task(data: Mapping[str, Any], cols: BattleColumns) -> tuple[str, str, str] | None:
    """``(model_a, model_b, task_id)`` of a row that is a battle on a task, else None.

    A verdict row is a battle when :func:`verdict_battle` says so (a failed verdict, or one
    decided by no evidence, judged nothing that ``rank`` counts).
    """
    task = data.get("task_id")
    if _missing(task):
        return None
    if is_verdict_row(data):
        try:
            battle = verdict_battle(data)
        except ValidationError:  # not a valid verdict: rank reports it, it is no battle
            return None
        return None if battle is None else (battle.model_a, battle.model_b, str(task))
    a, b = data.get(cols.model_a), data.get(cols.model_b)
    if any(_missing(v) for v in (a, b, data.get(cols.winner))):
        return None
    if not (isinstance(a, str) and isinstance(b, str)):
        return None
    return normalize_model_name(a), normalize_model_name(b), str(task)


def read_battle_tasks(path: str | os.PathLike[str], columns: BattleColumns | None = None
                      ) -> pd.DataFrame:
    """The task each judged battle of a battles file was on, when the file says.

    Only rows with both models, a winner and a ``task_id`` count; a verdict counts when it
    is a battle (:func:`verdict_battle`: a failed verdict, or one decided by no evidence,
    is not, so its task is still untried).

    Args:
        path: The battles file ``prefjudge rank`` reads (verdicts carry ``task_id``).
        columns: Its column names (defaults: ``model_a``, ``model_b``, ``winner``).

    Returns:
        Columns ``model_a, model_b, task_id``; empty when no row has a task id.

    Raises:
        InputError: When the file cannot be read.
    """
    cols = columns or BattleColumns()
    found: dict[str, list[str]] = {"model_a": [], "model_b": [], "task_id": []}
    for row in iter_rows(path):
        judged = _judged_task(row.data, cols) if isinstance(row, Row) else None
        if judged is not None:
            for name, value in zip(found, judged, strict=True):
                found[name].append(value)
    return pd.DataFrame(found, columns=["model_a", "model_b", "task_id"])


def read_task_ids(path: str | os.PathLike[str]) -> list[str]:
    """Task ids of a task, generation or verdict file (its ``task_id`` column), in order.

    Args:
        path: CSV/JSON/JSONL file whose records carry ``task_id``.

    Returns:
        The distinct task ids, first appearance first.

    Raises:
        InputError: When the file cannot be read, a record of it cannot (not valid JSON,
            not UTF-8 ...) or has no ``task_id`` (or one that is not text), or the file
            holds no record.
    """
    seen: dict[str, None] = {}
    issues: list[InputIssue] = []
    for row in iter_rows(path):
        if not isinstance(row, InputIssue):
            task_id = row.data.get("task_id")
            if isinstance(task_id, str | int) and not isinstance(task_id, bool) \
                    and not _missing(task_id):
                seen.setdefault(str(task_id), None)
                continue
            problem = "missing" if _missing(task_id) else f"must be text, got {task_id!r:.60}"
            row = InputIssue(str(path), row.line, row.where + "task_id", problem)
        if len(issues) < _MAX_ISSUES:
            issues.append(row)
    if issues:
        raise InputError(issues)
    if not seen:
        raise InputError([InputIssue(str(path), 0, "task_id", "no record has a task_id")])
    return list(seen)
