"""The pairs a judging stage works on, read from what its command line names.

One pair source (a pair file, a dataset folder or a hub dataset), or two generation files
joined on task id (with the instructions from a task source); with the files and source
identities that the verdict journal binds. Notes and skipped rows go to the reporter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.io import InputError
from prefjudge.judge.pairs.formats import open_preference_source
from prefjudge.judge.pairs.join import pairs_from_generations
from prefjudge.judge.settings import JudgeOptionError, source_error
from prefjudge.records import Pair
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.sources import SourceError, open_task_source


@dataclass
class PairInputs:
    """The pairs a judging stage works on, and what its journal binds them to.

    Attributes:
        pairs: The pairs.
        files: Local input files by role (``pairs``, ``tasks``), hashed by the journal.
        sources: Identities of hub datasets and dataset folders by role (``pairs_source``,
            ``tasks_source``), bound as settings; empty when every input is a file.
    """

    pairs: list[Pair]
    files: dict[str, list[Path]] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_pair_inputs(
    paths: Sequence[str],
    tasks_path: str | None,
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
            (joined on task id, and on protocol, k and sample when both files carry them).
        tasks_path: A task source (file, folder or hub dataset) giving the instructions for
            two generation files.
        fmt: Format of a pair file (``auto`` to detect it).
        skip_invalid: Skip unusable rows (reported) instead of stopping.
        reporter: Where notes and skipped rows go.
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.

    Returns:
        The pairs, with the files and source identities their journal binds.

    Raises:
        JudgeOptionError: When one of two generation files does not exist, or a source
            names no file, folder or known hub dataset (the error names the argument).
        StageError: When an input cannot be read (the message names the file and line).
    """
    try:
        if len(paths) == 2:
            return _from_generations(paths, tasks_path, reporter, split=split, subset=subset)
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
        raise StageError(str(exc)) from exc
    for issue in issues:
        reporter.note(f"skipped: {issue}")
    inputs = PairInputs(pairs, {"pairs": list(origin.paths)})
    if origin.identity:
        inputs.sources["pairs_source"] = dict(origin.identity)
    return inputs


def _from_generations(
    paths: Sequence[str],
    tasks_path: str | None,
    reporter: Reporter,
    *,
    split: str | None,
    subset: str | None,
) -> PairInputs:
    """Pairs of two generation files (see :func:`read_pair_inputs`)."""
    for index, path in enumerate(paths):
        if not Path(path).is_file():
            raise JudgeOptionError(
                f"{path}: no such file (two arguments are generation files)",
                "GENERATIONS_B" if index else "PAIRS",
            )
    inputs = PairInputs([], {"pairs": [Path(p) for p in paths]})
    tasks = None
    if tasks_path:
        try:
            loaded, where = open_task_source(tasks_path, split=split, subset=subset)
        except SourceError as exc:
            raise source_error(exc, "--tasks") from exc
        tasks = {t.task_id: t.prompt for t in loaded.values()}
        inputs.files["tasks"] = list(where.paths)
        if where.identity:
            inputs.sources["tasks_source"] = dict(where.identity)
    inputs.pairs, notes = pairs_from_generations(paths[0], paths[1], tasks=tasks)
    for note in notes:
        reporter.note(f"note: {note}")
    return inputs
