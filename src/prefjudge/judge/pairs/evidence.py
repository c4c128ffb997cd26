"""Evidence for the judge: short factual lines from ``prefjudge score`` outputs, put on pairs.

:func:`evidence_from_scored` turns one scored sample into lines (each instruction check,
then the unit tests); :func:`attach_evidence` fills ``evidence_a``/``evidence_b`` of pairs
from two scored files. Pairs made from ``prefjudge generate`` output carry ``protocol``,
``k`` and ``sample``; their evidence comes from the scored record of that same generation.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from prefjudge.io import InputError, read_records, validation_issues
from prefjudge.judge.pairs.join import join_values
from prefjudge.records import Pair, ScoredSample

EVIDENCE_CHARS = 300
"""How much of an execution output or error goes into one evidence line."""

DETAIL_CHARS = 200
"""How much of a test detail or check reason goes into one evidence line."""


def shorten(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` characters.

    Args:
        text: Any text (an execution output, a test detail, a check reason).
        limit: Most characters kept; a cut text ends with ``…`` (one more character).

    Returns:
        The flattened, possibly shortened text.
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


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
            line += f" — {shorten(check.reason, DETAIL_CHARS)}"
        lines.append(line)
    func = record.func
    if func is not None:
        line = f"unit tests: {func.status}"
        if func.status in ("fail", "error") and func.detail.strip():
            line += f" — {shorten(func.detail, DETAIL_CHARS)}"
        lines.append(line)
    return lines


def _scored_by_task(path: str | os.PathLike[str]) -> dict[str, list[ScoredSample]]:
    """Scored records of a file by task id, in file order."""
    records, _ = read_records(path, ScoredSample)
    by_task: dict[str, list[ScoredSample]] = {}
    for _, rec in records:
        by_task.setdefault(rec.task_id, []).append(rec)
    return by_task


def _find_scored(
    by_task: dict[str, list[ScoredSample]], pair: Pair, model: str
) -> ScoredSample | None:
    """The scored record of one side of ``pair`` (see :func:`attach_evidence`)."""
    wanted = join_values(pair)
    candidates = [
        rec
        for rec in by_task.get(pair.task_id, [])
        if all(join_values(rec).get(name) == value for name, value in wanted.items())
    ]
    for rec in candidates:
        if rec.model == model:
            return rec
    if candidates and len({rec.model for rec in candidates}) == 1:
        return candidates[0]
    return None


def attach_evidence(
    pairs: Iterable[Pair],
    scored_a_path: str | os.PathLike[str],
    scored_b_path: str | os.PathLike[str],
) -> tuple[list[Pair], list[str]]:
    """Fill ``evidence_a``/``evidence_b`` from ``prefjudge score`` outputs.

    Each side is looked up in its own file by ``(task_id, model)``, the first such record
    in file order; when no record has the pair's model, a record with the pair's
    ``task_id`` is used if all records of that task in the file come from one model (files
    of a single model, or pairs whose model names are the placeholders ``A``/``B``). A pair
    that carries ``protocol``, ``k`` or ``sample`` (made by
    :func:`~prefjudge.judge.pairs.join.pairs_from_generations` from ``prefjudge generate``
    output) only matches records with the same values, so each side gets the evidence of
    the very generation it shows. A side with no match keeps its evidence and is noted.

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
    index_a = _scored_by_task(scored_a_path)
    index_b = _scored_by_task(scored_b_path)
    out: list[Pair] = []
    notes: list[str] = []
    for pair in pairs:
        update: dict[str, list[str]] = {}
        for side, index, model, path in (
            ("a", index_a, pair.model_a, scored_a_path),
            ("b", index_b, pair.model_b, scored_b_path),
        ):
            found = _find_scored(index, pair, model)
            if found is None:
                where = "".join(f", {name} {value!r}" for name, value in join_values(pair).items())
                notes.append(
                    f"pair {pair.pair_id}: no scored record for task {pair.task_id!r}{where} "
                    f"and model {model!r} in {path}"
                )
            else:
                update[f"evidence_{side}"] = evidence_from_scored(found)
        out.append(pair.model_copy(update=update, deep=True))
    return out, notes
