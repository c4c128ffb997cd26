"""The registry of sample (generation file) formats: each format registers itself here, once.

A format is one module (``prefjudge``, ``evalplus``, ``swe_if`` in this package) that
calls :func:`register_sample_format` with its name, the fields that mark its lines, how a
line is told apart and how it becomes a generation. Everything that names sample formats
is derived from here: the detection order, :data:`prefjudge.scoring.formats.FORMATS` and
the "expected ..." of error messages.

This module imports no numeric library: the CLI may read names from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefjudge.records import Task
from prefjudge.scoring.registry_base import Registry, named_list


@dataclass(frozen=True)
class SampleParts:
    """What a sample line says, before it is built into a generation record.

    Attributes:
        response: The text scored (code for ``is_code``).
        instructions: Instruction refs (``{"id", "params"}``) the response was asked to follow.
        protocol: ``single`` or ``multi``.
        turns: The turns of a multi-turn record (None: none known).
        error: Why generation failed (the response is then empty).
        is_code: The response is code as a whole, never Markdown to find code in.
        bare: 1 when a completion is scored without the task's prompt (said once).
    """

    response: str
    instructions: list[dict[str, Any]] = field(default_factory=list)
    protocol: str = "single"
    turns: list[dict[str, Any]] | None = None
    error: str | None = None
    is_code: bool = False
    bare: int = 0


SampleConverter = Callable[[Mapping[str, Any], str, "Mapping[str, Task] | None"], SampleParts]
"""``(line, task id, tasks or None) -> SampleParts``; raises ``FieldProblem`` on a bad field."""


@dataclass(frozen=True)
class SampleFormat:
    """One format of generation files.

    Attributes:
        name: Its name (a generation's ``source_format``).
        description: What it is and the fields that mark it (for listings and messages).
        expected: How "expected ..." messages name it; formats that share one are named once.
        detect: The field that tells a line is in this format, or None when it is not.
        convert: A line to :class:`SampleParts`; None for prefjudge's own records, which
            are validated as they are.
        order: Detection order, lowest first (ties: registration order).
        marks: The fields a line of this format must have one of (named when a line has
            none of any format's).
        missing: ``(field, what is needed)`` for a line of a file in this format that lacks
            the field holding the response.
        ambiguous: Why a line this format detects cannot be told apart after all, or None.
    """

    name: str
    description: str
    expected: str
    detect: Callable[[Mapping[str, Any]], str | None]
    convert: SampleConverter | None
    order: int = 50
    marks: tuple[str, ...] = ()
    missing: tuple[str, str] = ("", "")
    ambiguous: Callable[[Mapping[str, Any]], str | None] | None = None


_FORMATS: Registry[SampleFormat] = Registry("sample format")

register_sample_format = _FORMATS.add
"""Add a sample format (``replace_existing=True`` replaces one of the same name; else a
second one of a name is a ValueError); returns it."""

unregister_sample_format = _FORMATS.remove
"""Remove a sample format by name (tests that register one of their own); None when unknown."""

sample_formats = _FORMATS.entries
"""Every registered sample format, in registration order."""

sample_format_names = _FORMATS.names
"""The names of every registered sample format, in registration order."""

get_sample_format = _FORMATS.get
"""The sample format of that name (KeyError, listing the names, when there is none)."""

sample_detection_order = _FORMATS.ordered
"""The formats in the order lines are tried: by ``order``, then registration."""


def sample_marks() -> tuple[str, ...]:
    """Every format's marking fields once, in registration order."""
    return tuple(dict.fromkeys(mark for fmt in _FORMATS.entries() for mark in fmt.marks))


def expected_samples() -> str:
    """``expected A, B or C``: every format's ``expected`` once, in registration order."""
    return f"expected {named_list([fmt.expected for fmt in _FORMATS.entries()])}"
