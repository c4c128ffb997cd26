"""What the pair-format readers share: checking a row, making a pair of it, unique ids, finishing.

A row converter (``codeprefbench_pairs``, ``bigcodereward_pairs``) runs
:func:`convert_rows` with its one-row function, which collects the row's problems in a
:class:`RowIssues` and makes the pair with :func:`make_pair`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from prefjudge.io import InputError, InputIssue, validation_issues
from prefjudge.records import Pair


def finish(
    pairs: list[Pair], issues: list[InputIssue], skip_invalid: bool
) -> tuple[list[Pair], list[InputIssue]]:
    """``(pairs, issues)``, or :class:`InputError` with the issues unless ``skip_invalid``."""
    if issues and not skip_invalid:
        raise InputError(issues)
    return pairs, issues


def make_pair(spath: str, number: int, fields: dict[str, Any]) -> Pair | list[InputIssue]:
    """A validated pair of ``fields``, or the issues naming what is wrong with them."""
    try:
        return Pair.model_validate(fields)
    except ValidationError as exc:
        return validation_issues(spath, number, exc)


class RowIssues(list[InputIssue]):
    """The problems found in one row (a list of issues), and the checks converters share.

    Args:
        spath: Where the row is from (a path or ``hub:NAME[SPLIT]``).
        number: The row's line or row number.
    """

    def __init__(self, spath: str, number: int) -> None:
        super().__init__()
        self.spath = spath
        self.number = number

    def bad(self, field: str, message: str) -> None:
        """Note a problem with ``field``."""
        self.append(InputIssue(self.spath, self.number, field, message))

    def key(self, data: Mapping[str, Any], field: str) -> Any:
        """``data[field]``, noted as a problem unless it is a non-empty string (an id)."""
        value = data.get(field)
        if not isinstance(value, str) or not value:
            self.bad(field, "expected a non-empty string")
        return value

    def text(self, data: Mapping[str, Any], field: str) -> Any:
        """``data[field]``, noted as a problem unless it is a string (an instruction)."""
        value = data.get(field)
        if not isinstance(value, str):
            self.bad(field, "expected a string")
        return value


def convert_rows(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]],
    convert: Callable[[int, dict[str, Any]], Pair | list[InputIssue]],
) -> tuple[list[Pair], list[InputIssue]]:
    """Each row made a pair by ``convert``, in order; rows already issues, and problems, kept.

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        convert: ``convert(number, record)``: the row's pair, or its issues.

    Returns:
        ``(pairs, issues)``.
    """
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    for number, data in rows:
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        made = convert(number, data)
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return pairs, issues


def unknown_keys(record: Mapping[str, Any]) -> str:
    """The message of a record whose keys match no format."""
    shown = ", ".join(sorted(record)[:12])
    return (
        f"cannot tell the pair format from the keys ({shown}); name the format with --pairs-format"
    )


class UniqueIds:
    """Hands out ``key``, ``key#2``, ``key#3``, ... for repeated keys."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._used: set[str] = set()

    def __call__(self, key: str) -> str:
        """The next unused id for ``key``."""
        self._seen[key] += 1
        count = self._seen[key]
        candidate = key if count == 1 else f"{key}#{count}"
        while candidate in self._used:
            count += 1
            candidate = f"{key}#{count}"
        self._used.add(candidate)
        return candidate
