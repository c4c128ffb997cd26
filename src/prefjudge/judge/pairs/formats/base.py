"""What the pair-format readers share: making a pair of a row, unique ids, finishing a load."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
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
