"""The style features of a battle row's two responses (for ``prefjudge rank --control``).

``features_a`` and ``features_b`` are objects of non-negative numbers, where a value may
itself be an object of numbers that is summed (``{"token_len": 120, "list_count":
{"ordered": 2, "unordered": 3}}``, as :func:`prefjudge.features.features_record` writes and
arena-hard-auto's ``conv_metadata`` has them); in a CSV, a cell holding such a JSON object.
arena-hard-auto's flat ``conv_metadata`` (``sum_assistant_a_tokens``, ``header_count_a``, …
``bold_count_b``) is read as the same four features when a row has no
``features_a``/``features_b``. They become the frame columns ``fa_<name>`` and ``fb_<name>``
(:func:`feature_column`), with the tokenizer names in ``tokenizer_a``/``tokenizer_b``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefjudge.features import TOKENIZER_KEY
from prefjudge.io import JsonValueError, parse_json
from prefjudge.ranking.table_rows import _missing

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
