"""The ``codeprefbench`` pair format: CodePrefBench JSONL(.gz) rows (``choices``, ``gt_choice``)."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefjudge.io import InputIssue, iter_objects
from prefjudge.judge.pairs.formats.base import (
    RowIssues,
    UniqueIds,
    convert_rows,
    finish,
    make_pair,
)
from prefjudge.judge.pairs.formats.registry import PairFormatSpec, Rows, register_pair_format
from prefjudge.records import Pair, Side

_ANNOTATIONS = {"codea": "A", "codeb": "B", "tie": "tie"}
_OTHER: dict[str, Side] = {"A": "B", "B": "A"}

CODEPREFBENCH_CRITERIA = {
    "correctness": "correctness",
    "efficiency": "efficiency",
    "security": "security",
    "human-preference": None,
}
"""CodePrefBench split → the evidence that decides its pairs (None: the developers' overall
preference, which no single kind of evidence decides; the evidence judge weighs its
default order)."""


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
    return finish(pairs, issues, skip_invalid)


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


def codeprefbench_pairs(rows: Rows, spath: str, source: str) -> tuple[list[Pair], list[InputIssue]]:
    """CodePrefBench rows (from a file or a dataset) into pairs (see :func:`load_codeprefbench`).

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues (a path or ``hub:NAME[SPLIT]``).
        source: The pairs' ``source`` field.

    Returns:
        ``(pairs, issues)``.
    """
    unique = UniqueIds()
    shared = {"source": source, "criterion": codeprefbench_criterion(spath)}
    return convert_rows(
        rows, lambda number, data: _codeprefbench_pair(spath, number, data, unique, shared)
    )


def _codeprefbench_pair(
    spath: str, number: int, data: dict[str, Any], unique: UniqueIds, shared: dict[str, Any]
) -> Pair | list[InputIssue]:
    """One CodePrefBench row as a pair (``shared``: its ``source`` and ``criterion``)."""
    issues = RowIssues(spath, number)
    bad = issues.bad
    task_id = issues.key(data, "task_id")
    instruction = issues.text(data, "instruction")
    choices = data.get("choices")
    if not (
        isinstance(choices, list) and len(choices) == 2 and all(isinstance(c, str) for c in choices)
    ):
        bad("choices", "expected a list of two strings")
    gt = data.get("gt_choice")
    label: Side | None = None
    if gt in (0, 1, "0", "1") and not isinstance(gt, bool):
        label = "A" if int(gt) == 0 else "B"
    else:
        bad("gt_choice", f"expected 0 or 1, got {gt!r}")
    annotations = data.get("annotations")
    sides = _annotation_sides(annotations, bad)
    pair_id = unique(task_id) if isinstance(task_id, str) and task_id else ""
    if issues:
        return issues
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
        **shared,
    }
    if annotations is not None:
        fields["annotations"] = annotations
    return make_pair(spath, number, fields)


def _annotation_sides(annotations: Any, bad: Any) -> list[str]:
    """The sides of a row's ``annotations`` (``codeA``/``codeB``/``Tie``); ``bad`` gets errors."""
    sides: list[str] = []
    if annotations is None:
        return sides
    if not isinstance(annotations, list):
        bad("annotations", "expected a list of 'codeA'/'codeB'/'Tie'")
        return sides
    for i, value in enumerate(annotations):
        side = _ANNOTATIONS.get(value.lower()) if isinstance(value, str) else None
        if side is None:
            bad(f"annotations.{i}", f"expected 'codeA', 'codeB' or 'Tie', got {value!r}")
        else:
            sides.append(side)
    return sides


def _agreement_votes(sides: list[str], label: Side) -> list[Side]:
    counts = Counter(side for side in sides if side != "tie")
    major = max(counts.values(), default=0)
    minor = sum(counts.values()) - major
    ties = len(sides) - major - minor
    other: Side = _OTHER.get(label, "tie")
    return [label] * major + [other] * minor + ["tie"] * ties


def _has_keys(record: Mapping[str, Any]) -> bool:
    return {"choices", "gt_choice"} <= set(record)


register_pair_format(
    PairFormatSpec(
        "codeprefbench",
        load_codeprefbench,
        convert_rows=codeprefbench_pairs,
        json_keys=_has_keys,
        title="CodePrefBench",
        summary="CodePrefBench JSONL(.gz) rows (``choices``, ``gt_choice``)",
        rank=20,
    )
)
