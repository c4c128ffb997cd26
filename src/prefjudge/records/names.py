"""The names and value sets records share: model names, sides, winners, methods.

A model name is read in Unicode NFC (:data:`ModelName`); :func:`model_name_warnings`
says when one input writes what looks like one model two ways. A judging method's name
(:data:`JudgeMethodName`) is an open, validated name, so a method registered later
(``prefjudge.judge.methods.judge_method``) has its verdicts written like the built-ins'.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

CheckStatus = Literal["pass", "fail", "error"]
FuncStatus = Literal["pass", "fail", "timeout", "error"]
TestFormat = Literal["bigcodebench", "humaneval", "evalplus", "stdio", "none"]
Winner = Literal["model_a", "model_b", "tie"]


def normalize_model_name(name: str) -> str:
    """Return a model name in Unicode NFC, so that ``café`` is one model however typed.

    Args:
        name: The name as read.

    Returns:
        Its NFC form (case and spacing are kept).
    """
    return unicodedata.normalize("NFC", name)


ModelName = Annotated[str, AfterValidator(normalize_model_name)]
"""A model name, normalised to Unicode NFC on input."""


def model_name_warnings(raw_names: Iterable[str]) -> list[str]:
    """Warn about model names that look like one model written two ways.

    Two cases: names that are the same after NFC normalisation but were written in
    different forms (they are merged, since every reader normalises), and names that
    differ only by case after NFC (kept apart: ``GPT-4o`` and ``gpt-4o`` may be different
    models, but usually are a typo).

    Args:
        raw_names: Every model name as it appeared in one input, before normalisation.

    Returns:
        One message per group, e.g. ``model names 'Model-A' and 'model-a' differ only by
        case; they are kept as 2 different models``.
    """
    forms: dict[str, set[str]] = {}
    for raw in raw_names:
        forms.setdefault(normalize_model_name(raw), set()).add(raw)
    messages = []
    for name, raws in sorted(forms.items()):
        if len(raws) > 1:
            written = " and ".join(ascii(raw) for raw in sorted(raws))
            messages.append(
                f"model name {name!r} is written in {len(raws)} Unicode normalisation forms "
                f"({written}); they are merged into one model"
            )
    by_case: dict[str, list[str]] = {}
    for name in sorted(forms):
        by_case.setdefault(name.casefold(), []).append(name)
    for names in by_case.values():
        if len(names) > 1:
            listed = ", ".join(repr(n) for n in names[:-1]) + f" and {names[-1]!r}"
            messages.append(
                f"model names {listed} differ only by case; they are kept as {len(names)} "
                "different models (rename them if they are the same model)"
            )
    return messages



Side = Literal["A", "B", "tie"]
SIDE_WINNERS: dict[str, Winner] = {"A": "model_a", "B": "model_b", "tie": "tie"}
"""A preferred side as the battle outcome ``rank`` counts."""
CriterionOutcome = Literal["A", "B", "tie", "insufficient"]
METHOD_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,63}")
"""What a judging method may be called: a lowercase letter, then up to 63 lowercase
letters, digits, ``_`` or ``-`` (the built-ins: ``criteralign``, ``monolithic``,
``pointwise``, ``evidence``, ``hybrid``)."""


def check_method_name(name: str) -> str:
    """Return a judging method's name when it is one a method may have.

    Only the form is checked here: which methods exist is the judge's registry
    (``prefjudge.judge.methods``), a higher layer that records do not import.

    Args:
        name: The name as read (a verdict's ``method``).

    Returns:
        The name, unchanged.

    Raises:
        pydantic_core.PydanticCustomError: When it does not match
            :data:`METHOD_NAME_PATTERN`.
    """
    if not METHOD_NAME_PATTERN.fullmatch(name):
        raise PydanticCustomError(
            "method_name",
            "a judging method's name is a lowercase letter, then up to 63 lowercase "
            "letters, digits, '_' or '-'; got {got}",
            {"got": repr(name)},
        )
    return name


JudgeMethodName = Annotated[str, AfterValidator(check_method_name)]
"""A judging method's name (``Verdict.method``): any registered method's, built-in or not
(:func:`check_method_name` checks its form; the judge's registry, which methods exist)."""
EvidenceKind = Literal["correctness", "efficiency", "security", "instructions"]
FactOutcome = Literal["A", "B", "tie", "insufficient", "error"]
