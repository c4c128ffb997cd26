"""Packing Ruff checks into few Ruff runs.

A check needs some settings to have given values (``max-line-length = 95``) and preview
mode on or off; nothing else about a run matters to it, because findings are attributed
to checks by rule code. Checks are grouped by those needs, and the groups are packed
first-fit into runs whose settings do not contradict them, so the number of runs stays
close to the largest number of distinct values any one setting takes, whatever the
number of checks. Checks with no settings join a run their file is already in.

Rules that fire on most real code (:data:`LOUD_SELECTORS`: pycodestyle, line lengths,
pydocstyle, quotes, annotations) get runs of their own, holding only the files that
need them: run over every file they would mostly print findings nobody asked for, and
parsing those costs more than the extra Ruff processes (measured on BigCodeBench and
EvalPerf code with ``scripts/bench_verify.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

LOUD_SELECTORS = frozenset({"E", "W", "E501", "W505", "D", "Q", "ANN001", "ANN201"})

Needs = tuple[tuple[str, Any], ...]


@dataclass(slots=True)
class RuffCheck:
    """One Ruff-verified instruction on one file.

    Attributes:
        key: Caller's identifier of the check.
        item: Index of the file (response) it applies to.
        select: Rule selectors of the instruction.
        preview: Whether its rules need preview mode.
        settings: Settings it depends on, as sorted (key, value) pairs.
        plan_settings: Settings the run answering it must have; the same as ``settings``
            unless its answer is derived from a run with another limit (see
            :mod:`prefjudge.scoring.verify.thresholds`).
    """

    key: int
    item: int
    select: tuple[str, ...]
    preview: bool
    settings: Needs
    plan_settings: Needs | None = None

    @property
    def needs(self) -> Needs:
        """The settings the planner must honour."""
        return self.settings if self.plan_settings is None else self.plan_settings

    @property
    def family(self) -> tuple[str, ...]:
        """Its own selectors when they are loud (own runs), else ``()`` (shared runs)."""
        return self.select if LOUD_SELECTORS.intersection(self.select) else ()


@dataclass
class RuffRun:
    """One planned Ruff process: a configuration and the checks it answers, per file."""

    preview: bool
    family: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    select: set[str] = field(default_factory=set)
    members: dict[int, list[RuffCheck]] = field(default_factory=dict)

    def accepts(self, preview: bool, family: tuple[str, ...], needs: Needs) -> bool:
        """Whether checks with these needs can join without changing anyone's settings."""
        if preview != self.preview or family != self.family:
            return False
        return all(self.settings.get(key, value) == value for key, value in needs)

    def add(self, check: RuffCheck) -> None:
        """Add a check (its needs must be accepted)."""
        self.settings.update(check.needs)
        self.select.update(check.select)
        self.members.setdefault(check.item, []).append(check)


def plan_runs(checks: list[RuffCheck]) -> list[RuffRun]:
    """Pack checks into runs; every check lands in exactly one run.

    Args:
        checks: The Ruff checks to perform.

    Returns:
        The runs, those with most files first.
    """
    groups: dict[tuple[bool, tuple[str, ...], Needs], list[RuffCheck]] = defaultdict(list)
    for check in checks:
        groups[(check.preview, check.family, check.needs)].append(check)
    constrained = sorted(
        (key for key in groups if key[2]), key=lambda key: (-len(groups[key]), repr(key))
    )
    runs: list[RuffRun] = []
    for preview, family, needs in constrained:
        run = next((r for r in runs if r.accepts(preview, family, needs)), None)
        if run is None:
            run = RuffRun(preview=preview, family=family)
            runs.append(run)
        for check in groups[(preview, family, needs)]:
            run.add(check)
    home: dict[tuple[bool, tuple[str, ...], int], RuffRun] = {}
    for run in runs:
        for item in run.members:
            home.setdefault((run.preview, run.family, item), run)
    free = sorted((key for key in groups if not key[2]), key=repr)
    for preview, family, needs in free:
        for check in groups[(preview, family, needs)]:
            where = (preview, family, check.item)
            run = home.get(where) or _first_run(runs, preview, family)
            run.add(check)
            home.setdefault(where, run)
    runs.sort(key=lambda r: -len(r.members))
    return runs


def _first_run(runs: list[RuffRun], preview: bool, family: tuple[str, ...]) -> RuffRun:
    """The first run with this preview mode and family, created when there is none."""
    for run in runs:
        if run.preview == preview and run.family == family:
            return run
    run = RuffRun(preview=preview, family=family)
    runs.append(run)
    return run
