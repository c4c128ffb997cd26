"""The pairs a judging stage works on, read from what its command line names.

One pair source (a pair file, a dataset folder or a hub dataset), or two generation files
(read as ``prefjudge score`` reads one) joined on task id, with the instructions from the
task sources (``--tasks``, repeatable, loaded as ``score`` loads them); with the files and
source identities that the verdict journal binds. Notes and skipped rows go to the
reporter.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.io import InputError, InputIssue
from prefjudge.judge.pairs.formats.load import open_preference_source
from prefjudge.judge.settings import JudgeOptionError, source_error
from prefjudge.records import Pair
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.sources import SourceError

if TYPE_CHECKING:
    from prefjudge.records import Generation


@dataclass
class PairInputs:
    """The pairs a judging stage works on, and what its journal binds them to.

    Attributes:
        pairs: The pairs.
        files: Local input files by role (``pairs``, ``tasks``), hashed by the journal.
        sources: Identities of hub datasets and dataset folders by role (``pairs_source``,
            ``tasks_source``: one identity, or a list of them when several ``--tasks``
            sources are hub datasets or folders), bound as settings; empty when every
            input is a file.
        waiting: Ids of the pairs of two generation files not judged because a side's
            model call failed (:class:`~prefjudge.judge.pairs.join.Joined`).
    """

    pairs: list[Pair]
    files: dict[str, list[Path]] = field(default_factory=dict)
    sources: dict[str, Any] = field(default_factory=dict)
    waiting: list[str] = field(default_factory=list)


def read_pair_inputs(
    paths: Sequence[str],
    tasks: Sequence[str],
    fmt: str,
    skip_invalid: bool,
    reporter: Reporter,
    *,
    split: str | None = None,
    subset: str | None = None,
) -> PairInputs:
    """Load the pairs a judging stage works on, reporting notes and skipped rows.

    Args:
        paths: One pair source (a file, a dataset folder or a hub dataset, see
            :func:`prefjudge.judge.pairs.load_preference_source`), or two generation files
            (read as ``prefjudge score`` reads one: prefjudge records, EvalPlus,
            BigCodeBench or SWE-IF samples; joined on task id, and on protocol, k and
            sample when both files carry them).
        tasks: Task sources (files, folders or hub datasets, ``--tasks``, merged by task
            id) giving the instructions of two generation files, and the prompts their
            completion-style samples continue.
        fmt: Format of a pair file (``auto`` to detect it).
        skip_invalid: Skip unusable rows (listed on the reporter) instead of stopping.
        reporter: Where notes and skipped rows go.
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.

    Returns:
        The pairs, with the files and source identities their journal binds.

    Raises:
        JudgeOptionError: When one of two generation files does not exist, a source names
            no file, folder or known hub dataset, or two ``--tasks`` sources hold one task
            (the error names the argument).
        StageError: When an input cannot be read (the message names the file and line).
    """
    try:
        if len(paths) == 2:
            return _from_generations(
                paths, tasks, skip_invalid, reporter, split=split, subset=subset
            )
        try:
            pairs, issues, origin = open_preference_source(
                paths[0],
                fmt=fmt,
                split=split,
                subset=subset,
                skip_invalid=skip_invalid,  # type: ignore[arg-type]
            )
        except SourceError as exc:
            raise source_error(exc, "PAIRS") from exc
    except InputError as exc:
        raise _input_failure(exc, skip_invalid) from exc
    report_skipped(issues, reporter)
    inputs = PairInputs(pairs, {"pairs": list(origin.paths)})
    if origin.identity:
        inputs.sources["pairs_source"] = dict(origin.identity)
    return inputs


def _input_failure(exc: InputError, skip_invalid: bool) -> StageError:
    """The stage error of unusable input; it names ``--skip-invalid`` when that would help."""
    if skip_invalid or not any(issue.line > 0 for issue in exc.issues):
        return StageError(str(exc))
    return StageError(
        f"{exc}\nNothing was judged (use --skip-invalid to judge the pairs of the valid lines)."
    )


def report_skipped(issues: Sequence[InputIssue], reporter: Reporter) -> None:
    """List the input problems ``--skip-invalid`` skipped, as ``prefjudge score`` does.

    Args:
        issues: The problems skipped.
        reporter: Where the list goes (a warning: stderr).
    """
    if issues:
        reporter.warn(f"skipped {len(issues)} invalid input problem(s):")
        for issue in issues:
            reporter.warn(f"  skipped: {issue}")


def _from_generations(
    paths: Sequence[str],
    sources: Sequence[str],
    skip_invalid: bool,
    reporter: Reporter,
    *,
    split: str | None,
    subset: str | None,
) -> PairInputs:
    """Pairs of two generation files (see :func:`read_pair_inputs`)."""
    # joining and the sample formats are imported here: a pair file needs neither
    from prefjudge.judge.pairs.join import join_generations
    from prefjudge.scoring.formats import SampleFormatWarning, read_generations
    from prefjudge.scoring.task_sources import load_task_sources

    for index, path in enumerate(paths):
        if not Path(path).is_file():
            raise JudgeOptionError(
                f"{path}: no such file (two arguments are generation files)",
                "GENERATIONS_B" if index else "PAIRS",
            )
    inputs = PairInputs([], {"pairs": [Path(p) for p in paths]})
    tasks = None
    if sources:
        try:
            loaded = load_task_sources(sources, split=split, subset=subset, option="--tasks")
        except SourceError as exc:
            raise source_error(exc, "--tasks") from exc
        tasks = loaded.tasks
        inputs.files["tasks"] = list(loaded.paths)
        if loaded.identities:
            many = len(loaded.identities) > 1
            inputs.sources["tasks_source"] = loaded.identities if many else loaded.identities[0]
    sides, issues = [], []
    for path in paths:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SampleFormatWarning)
            records, problems = read_generations(path, tasks=tasks)
        for warning in caught:
            if issubclass(warning.category, SampleFormatWarning):
                reporter.warn(f"warning: {warning.message}")
        sides.append((path, records))
        issues.extend(problems)
    _warn_same_model(sides, reporter)
    joined = join_generations(
        sides[0],
        sides[1],
        prompts=None if tasks is None else {i: t.prompt for i, t in tasks.items()},
    )
    issues.extend(joined.issues)
    if issues and not skip_invalid:
        raise InputError(issues)
    report_skipped(issues, reporter)
    for note in joined.notes:
        reporter.note(f"note: {note}")
    inputs.pairs = joined.pairs
    inputs.waiting = joined.waiting
    return inputs


def _warn_same_model(
    sides: Sequence[tuple[str, Sequence[tuple[int, Generation]]]], reporter: Reporter
) -> None:
    """Warn when both files hold one model's generations (no ranking can use such pairs)."""
    (path_a, records_a), (path_b, records_b) = sides
    shared = {g.model for _, g in records_a} & {g.model for _, g in records_b}
    if shared:
        named = ", ".join(repr(m) for m in sorted(shared)[:3])
        reporter.warn(
            f"warning: {path_a} and {path_b} both hold generations of model {named}: its pairs "
            "compare a model with itself (a sample file's model is its file name, or "
            "prefjudge score --model; rename one file to tell them apart)"
        )
