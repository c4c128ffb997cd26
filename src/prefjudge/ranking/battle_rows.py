"""One battle row or verdict row read into a :class:`prefjudge.records.Battle`, each problem named.

A battle row (arena CSV/JSONL) is read with the column names of :class:`BattleColumns` and
the winner labels of ``--winner-map`` (:func:`parse_winner_map`); a ``prefjudge judge``
verdict row becomes a battle by :meth:`prefjudge.records.Verdict.battle`, the one rule of
what counts (:func:`verdict_battle`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from prefjudge.ranking.table_rows import Row, _missing
from prefjudge.records import Battle, battle_of, normalize_model_name

CANONICAL_WINNERS = ("model_a", "model_b", "tie")


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
