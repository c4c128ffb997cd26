"""Applicability predicates: the names ``applies_when`` in ``rubrics/vericode.yaml`` may use.

Every instruction of the taxonomy states when it is relevant to a task: one predicate
name, or a list of names (the instruction applies when any of them holds); ``always`` for
instructions that fit every task. A predicate is a function of :class:`TaskFacts`, what
the augment stage reads from a task's reference solution, libs and prompt
(:func:`prefjudge.testbed.augment.task_facts`).

:data:`PREDICATES` is the whole vocabulary. The taxonomy loader rejects a name that is not
in it, so a typo fails the load instead of silently meaning "always applies".

A task without reference code has every code fact False; instructions about the code's
structure therefore add ``no_reference`` (nothing is known against them), while the
``error_*`` instructions do not (nothing shows the task raises) and the library ones rely
on libs and prompt, which ``uses_pandas`` and ``uses_files`` read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple


@dataclass(frozen=True)
class TaskFacts:
    """What the augment stage knows about a task.

    Attributes:
        has_code: A parsable reference solution exists.
        uses_pandas: pandas appears in libs, imports or the prompt.
        uses_files: Files or paths are involved (imports, ``open()`` or the prompt).
        uses_open: The reference calls ``open()``.
        raises: The reference has a ``raise`` statement.
        catches: The reference has an ``except`` clause.
        imports: The reference imports something.
        compares_literal: The reference compares with a literal constant.
        unpacks: The reference unpacks a tuple in an assignment or loop.
        branches_any: The reference has an ``if``/loop/``try``.
        loops: The reference has a ``for`` or ``while`` loop.
        has_function: The reference defines a function.
        longest_line: Longest reference line, in characters.
        numpy_docstring: The reference's docstrings use numpy section underlines.
        metrics: Largest per-function value of each limit metric (see
            :data:`prefjudge.testbed.augment.LIMIT_PARAMS`).
    """

    has_code: bool = False
    uses_pandas: bool = False
    uses_files: bool = False
    uses_open: bool = False
    raises: bool = False
    catches: bool = False
    imports: bool = False
    compares_literal: bool = False
    unpacks: bool = False
    branches_any: bool = False
    loops: bool = False
    has_function: bool = False
    longest_line: int = 0
    numpy_docstring: bool = False
    metrics: dict[str, int] = field(default_factory=dict)


class Predicate(NamedTuple):
    """One named applicability test.

    Attributes:
        test: True when the task's facts make the instruction relevant.
        description: What it means, in plain words.
    """

    test: Callable[[TaskFacts], bool]
    description: str


ALWAYS = "always"

PREDICATES: Mapping[str, Predicate] = MappingProxyType(
    {
        ALWAYS: Predicate(lambda f: True, "every task"),
        "no_reference": Predicate(lambda f: not f.has_code, "the task has no parsable reference"),
        "uses_pandas": Predicate(lambda f: f.uses_pandas, "pandas in libs, imports or prompt"),
        "uses_files": Predicate(
            lambda f: f.uses_files, "file/path modules, open() or a prompt about files"
        ),
        "uses_open": Predicate(lambda f: f.uses_open, "the reference calls open()"),
        "raises": Predicate(lambda f: f.raises, "the reference raises"),
        "catches": Predicate(lambda f: f.catches, "the reference has an except clause"),
        "imports": Predicate(lambda f: f.imports, "the reference imports something"),
        "compares_literal": Predicate(
            lambda f: f.compares_literal, "the reference compares with a literal"
        ),
        "unpacks": Predicate(lambda f: f.unpacks, "the reference unpacks a tuple"),
        "branches": Predicate(lambda f: f.branches_any, "the reference has if/for/while/try"),
        "loops": Predicate(lambda f: f.loops, "the reference has a for or while loop"),
        "defines_function": Predicate(lambda f: f.has_function, "the reference defines a function"),
    }
)


def unknown_predicates(names: Iterable[str]) -> list[str]:
    """The names that :data:`PREDICATES` does not define, in the order given."""
    return [name for name in names if name not in PREDICATES]


def applies(names: Iterable[str], facts: TaskFacts) -> bool:
    """Whether any of the named predicates holds for a task.

    Args:
        names: Predicate names (an instruction's ``applies_when``).
        facts: The task's facts.

    Returns:
        True when at least one predicate holds.

    Raises:
        KeyError: When a name is not a known predicate (the taxonomy loader prevents it).
    """
    return any(PREDICATES[name].test(facts) for name in names)
