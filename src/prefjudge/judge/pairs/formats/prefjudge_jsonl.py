"""The ``prefjudge`` pair format: JSONL of :class:`~prefjudge.records.Pair` records themselves."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prefjudge.io import InputIssue, iter_objects
from prefjudge.judge.pairs.formats.base import finish, make_pair
from prefjudge.judge.pairs.formats.registry import PairFormatSpec, Rows, register_pair_format
from prefjudge.records import Pair


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
    return finish(pairs, issues, skip_invalid)


def prefjudge_pairs(
    rows: Rows, spath: str, source: str = ""
) -> tuple[list[Pair], list[InputIssue]]:
    """:class:`Pair` records (from a file or a dataset), validated, ``pair_id`` unique.

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues.
        source: Not used: the records carry their own ``source``.

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
        made = make_pair(spath, number, data)
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


def _has_keys(record: Mapping[str, Any]) -> bool:
    return {"response_a", "response_b"} <= set(record)


register_pair_format(
    PairFormatSpec(
        "prefjudge",
        load_prefjudge_pairs,
        convert_rows=prefjudge_pairs,
        json_keys=_has_keys,
        title="prefjudge",
        summary="JSONL of ``Pair`` records themselves",
        rank=10,
    )
)
