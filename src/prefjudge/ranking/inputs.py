"""Reading a battles file into the frame ``prefjudge rank`` fits, with file:line errors.

Every battle source (``prefjudge judge`` verdicts, arena CSV/JSONL with their own column
names and winner labels) is read into :class:`prefjudge.records.Battle` records, the one
battle contract; :func:`read_battles` returns them as a frame (:func:`battles_frame`). A
verdict row becomes a battle by :meth:`prefjudge.records.Verdict.battle`, the one rule of
what counts (:func:`verdict_battle`): an error is reported, a verdict decided by no
evidence is not a battle and is counted apart (:attr:`BattleFile.no_evidence`). A row's
style features (:mod:`prefjudge.ranking.battle_features`) become the frame columns
``fa_<name>`` and ``fb_<name>`` (NaN where a row has none).

The other inputs of ``prefjudge rank`` and ``prefjudge correlate`` are read by their own
modules and re-exported here: table records (:mod:`.table_rows`), one battle row
(:mod:`.battle_rows`), style features (:mod:`.battle_features`), per-model tables and
aliases (:mod:`.model_tables`), scored records (:mod:`.scored`) and the tasks of battles
(:mod:`.battle_tasks`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from prefjudge.io import InputError, InputIssue
from prefjudge.ranking.battle_features import (
    FEATURE_FIELDS,
    TOKENIZER_COLUMNS,
    BattleFeatures,
    feature_column,
    parse_features,
)
from prefjudge.ranking.battle_rows import (
    CANONICAL_WINNERS,
    BattleColumns,
    _parse_battle,
    _parse_verdict,
    parse_winner_map,
    verdict_battle,
)
from prefjudge.ranking.battle_tasks import read_battle_tasks, read_task_ids
from prefjudge.ranking.model_tables import read_aliases, read_model_table
from prefjudge.ranking.scored import is_scored_records, read_scored_records
from prefjudge.ranking.table_rows import _MAX_ISSUES, Row, iter_rows
from prefjudge.records import NO_EVIDENCE, Battle, is_verdict_row, model_name_warnings
from prefjudge.reporting import display_name

__all__ = [
    "BATTLE_COLUMNS",
    "CANONICAL_WINNERS",
    "FEATURE_FIELDS",
    "TOKENIZER_COLUMNS",
    "BattleColumns",
    "BattleFeatures",
    "BattleFile",
    "ModelNameWarning",
    "Row",
    "battles_frame",
    "feature_column",
    "is_scored_records",
    "iter_rows",
    "no_evidence_note",
    "parse_features",
    "parse_winner_map",
    "read_aliases",
    "read_battle_file",
    "read_battle_tasks",
    "read_battles",
    "read_model_table",
    "read_scored_records",
    "read_task_ids",
    "verdict_battle",
]

BATTLE_COLUMNS = ["model_a", "model_b", "winner", "weight", "category", "line"]
"""Columns of a battles frame: the :class:`~prefjudge.records.Battle` fields and ``line``."""


class ModelNameWarning(UserWarning):
    """Model names in one input that differ only by case or by Unicode normalisation."""


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
