"""Running the Ruff part of many checks: batched (few runs) or naive (one run per check).

Both return, per check, the findings its own selectors select (or the RuffRunError that
stopped Ruff), so the results built from them are the same whichever way ran.

Batched: checks are packed into runs by :func:`~prefjudge.scoring.verify.plan.plan_runs`; runs
of more than :data:`MAX_FILES_PER_RUN` files are split so the workers share the load;
threshold checks are answered from runs with a few shared, smaller limits
(:mod:`prefjudge.scoring.verify.thresholds`). A
run that fails is redone check by check, exactly as the naive way would, so that one
broken check or file cannot turn its neighbours into errors.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.scoring.verify.plan import RuffCheck, RuffRun, plan_runs
from prefjudge.scoring.verify.ruff_engine import (
    Diagnostic,
    RuffConfig,
    RuffOptions,
    RuffRunError,
    any_selector_matches,
    diagnostic_of,
    diagnostic_order,
    file_of,
    is_rule_code,
    run_ruff,
)
from prefjudge.scoring.verify.thresholds import (
    Threshold,
    floor,
    narrow,
    shared_limits,
    threshold_of,
)

# Outcome of the Ruff part of one check: the findings it selects, or why Ruff failed.
RuffOutcome = list[Diagnostic] | RuffRunError
RuffExecutor = Callable[["RuffBatch", int], dict[int, RuffOutcome]]
MAX_FILES_PER_RUN = 1000


@dataclass
class RuffBatch:
    """The Ruff checks of one call and the files they read.

    Attributes:
        checks: The checks; ``key`` numbers them from 0.
        codes: Item index to the code written for it.
        workdir: Directory holding one file per item (see :func:`file_name`).
        options: The verification profile's Ruff-wide options.
    """

    checks: list[RuffCheck]
    codes: dict[int, str]
    workdir: Path
    options: RuffOptions = field(default_factory=RuffOptions)


def file_name(item: int) -> str:
    """Name of the temporary file holding item ``item``'s code (the same in both ways)."""
    return f"response_{item}.py"


def write_files(workdir: Path, codes: dict[int, str]) -> None:
    """Write each item's code to its file in ``workdir`` (UTF-8).

    Files are opened relative to the open directory (no path building and resolving per
    file: thousands are written per batch).
    """
    directory = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for item, code in codes.items():
            data = memoryview(code.encode("utf-8"))
            handle = os.open(file_name(item), _NEW_FILE, 0o600, dir_fd=directory)
            try:
                while data:
                    data = data[os.write(handle, data) :]
            finally:
                os.close(handle)
    finally:
        os.close(directory)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def scratch_root() -> str | None:
    """RAM-backed ``/dev/shm`` when it is usable (files there cost no disk I/O), else None."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


@contextmanager
def scratch_files(codes: dict[int, str]) -> Iterator[Path]:
    """A temporary directory holding one file per item, removed afterwards.

    Tries :func:`scratch_root` first and the system's temporary directory when writing
    there fails (``/dev/shm`` full, for instance).
    """
    preferred = scratch_root()
    for root in [preferred, None] if preferred else [None]:
        try:
            directory = tempfile.TemporaryDirectory(prefix="prefjudge-ruff-", dir=root)
        except OSError:
            if root is None:
                raise
            continue
        try:
            write_files(Path(directory.name), codes)
        except OSError:
            directory.cleanup()
            if root is None:
                raise
            continue
        with directory:
            yield Path(directory.name)
        return


def _attribute(
    members: dict[int, list[RuffCheck]], report: list[dict[str, Any]]
) -> dict[int, list[Diagnostic]]:
    """Give each check the findings of its file that its own selectors select.

    Findings without a rule code (syntax errors) go to every check of their file.
    """
    by_name = {file_name(item): checks for item, checks in members.items()}
    found: dict[int, list[Diagnostic]] = {c.key: [] for checks in members.values() for c in checks}
    for entry in report:
        checks = by_name.get(file_of(entry))
        if not checks:
            continue
        code = entry.get("code")
        diagnostic = None
        for check in checks:
            if code is None or any_selector_matches(check.select, code) or not is_rule_code(code):
                diagnostic = diagnostic or diagnostic_of(entry)
                found[check.key].append(diagnostic)
    for diagnostics in found.values():
        diagnostics.sort(key=diagnostic_order)
    return found


def _single(check: RuffCheck, batch: RuffBatch) -> RuffOutcome:
    """One Ruff process for one check with exactly its own configuration."""
    config = RuffConfig(
        tuple(sorted(set(check.select))), check.preview, check.settings, batch.options
    )
    try:
        report = run_ruff(config, [file_name(check.item)], workdir=batch.workdir)
    except RuffRunError as exc:
        return exc
    return _attribute({check.item: [check]}, report)[check.key]


def run_naive(batch: RuffBatch, workers: int) -> dict[int, RuffOutcome]:
    """One Ruff process per check, one after the other (``workers`` is ignored)."""
    del workers
    return {check.key: _single(check, batch) for check in batch.checks}


def run_batched(batch: RuffBatch, workers: int) -> dict[int, RuffOutcome]:
    """Answer every check with as few Ruff runs as possible.

    Threshold checks that may share a smaller limit are planned with the smallest limit
    asked for their rule; if a message then looks unexpected they are planned again with
    their own limit.
    """
    by_rule: dict[str, dict[int, tuple[int, int]]] = {}
    thresholds: dict[int, Threshold] = {}
    for check in batch.checks:
        threshold = threshold_of(check.select, check.settings)
        if threshold is not None:
            thresholds[check.key] = threshold
            wanted = (floor(threshold, batch.codes[check.item]), threshold.value)
            by_rule.setdefault(threshold.code, {})[check.key] = wanted
    shared: dict[int, tuple[Threshold, int]] = {}
    for wanted in by_rule.values():
        for key, limit in shared_limits(wanted).items():
            shared[key] = (thresholds[key], limit)
    for check in batch.checks:
        if check.key in shared:
            threshold, limit = shared[check.key]
            check.plan_settings = ((threshold.key, limit),)
    outcomes = _execute(plan_runs(batch.checks), batch, workers)
    again = []
    for check in batch.checks:
        outcome = outcomes[check.key]
        if check.key in shared and not isinstance(outcome, RuffRunError):
            narrowed = narrow(outcome, *shared[check.key])
            if narrowed is None:
                again.append(check)
            else:
                outcomes[check.key] = narrowed
    if again:
        for check in again:
            check.plan_settings = None
        outcomes.update(_execute(plan_runs(again), batch, workers))
    return outcomes


def _execute(runs: list[RuffRun], batch: RuffBatch, workers: int) -> dict[int, RuffOutcome]:
    """Run the planned runs (large ones in chunks) in parallel; fall back per check on failure."""
    parts = [(run, dict(chunk)) for run in runs for chunk in _chunks(sorted(run.members.items()))]

    def execute(part: tuple[RuffRun, dict[int, list[RuffCheck]]]) -> dict[int, RuffOutcome]:
        run, members = part
        config = RuffConfig.build(run.select, run.preview, run.settings, batch.options)
        names = [file_name(item) for item in members]
        try:
            report = run_ruff(config, names, workdir=batch.workdir)
        except RuffRunError:
            # Find out which checks fail and why, exactly as the naive way would.
            return {c.key: _single(c, batch) for group in members.values() for c in group}
        return dict(_attribute(members, report))

    outcomes: dict[int, RuffOutcome] = {}
    if workers <= 1 or len(parts) <= 1:
        for part in parts:
            outcomes.update(execute(part))
        return outcomes
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for result in pool.map(execute, parts):
            outcomes.update(result)
    return outcomes


def _chunks(members: list[tuple[int, list[RuffCheck]]]) -> list[list[tuple[int, list[RuffCheck]]]]:
    count = max(1, -(-len(members) // MAX_FILES_PER_RUN))
    size = -(-len(members) // count)
    return [members[start : start + size] for start in range(0, len(members), size)]
