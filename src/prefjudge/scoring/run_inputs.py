"""What a ``prefjudge score`` run reads before it scores, and what it refuses in it.

:func:`load_tasks` loads the run's task sources (or the ``tasks.jsonl`` beside the
generations), :func:`check_exports` refuses an export the run could not write before
anything is scored, and :func:`regenerated_records` says which held records a changed
generations file makes again (failed generations made again, nothing else). Their
libraries are imported where used: :mod:`prefjudge.scoring.run` imports this module
before it starts the verification process.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from prefjudge.records import ScoredSample, Task
    from prefjudge.scoring.export import ExportTarget
    from prefjudge.scoring.score import ScoreJob


class ScoreSources(Protocol):
    """What this module reads of a run's settings (a ``ScoreSettings``)."""

    @property
    def generations(self) -> Path: ...
    @property
    def tasks(self) -> tuple[str, ...]: ...
    @property
    def split(self) -> str | None: ...
    @property
    def subset(self) -> str | None: ...
    @property
    def stdin(self) -> bool: ...
    @property
    def no_tests(self) -> bool: ...
    @property
    def exports(self) -> tuple[ExportTarget, ...]: ...


class ScoreUsageError(StageError):
    """The settings name the tasks wrongly (an unknown source, a task in two sources).

    The command shows it as a usage error (exit status 2); for ``prefjudge run`` it is a
    :class:`~prefjudge.reporting.StageError` like any other.

    Attributes:
        param_hint: The option at fault (``--tasks``), or None when the message says it.
    """

    def __init__(self, message: str, param_hint: str | None = None) -> None:
        super().__init__(message)
        self.param_hint = param_hint


def regenerated_records(
    done: Mapping[str, ScoredSample], job: ScoreJob, generations: Path
) -> list[str]:
    """The scored records to make again now that the generations file has changed.

    The one change a score output accepts from its generations file is that of failed
    model requests made again (``generate --retry-errors``, ``run --retry-errors``): the
    records of failed generations (status ``error``) are scored again, whatever they hold
    now. Any other record must still be in the file, the generation it was scored from
    (task, response, instructions); if one is not, the change is refused as any other
    change of an input is.

    Args:
        done: The records held, by key.
        job: The generations as they are now.
        generations: The generations file (named in the refusal).

    Returns:
        The keys of the records to score again.

    Raises:
        JournalError: A record that did not fail was scored from another generation.
    """
    from prefjudge.journal import JournalError

    current = dict(zip(job.keys, (gen for _, gen in job.generations), strict=True))
    again, changed = [], []
    for key, record in done.items():
        if record.status == "error":
            again.append(key)
            continue
        gen = current.get(key)
        if gen is None or (gen.task_id, gen.response, gen.instructions) != (
            record.task_id, record.response, record.instructions
        ):
            changed.append(key)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5
                                          else "")
        raise JournalError(
            f"input generations: {generations} has changed since, in generations that did not "
            f"fail ({shown}); only failed ones may be made again. Use another -o, or "
            "--force-new to score it again from the start."
        )
    return again


def check_exports(settings: ScoreSources, tasks: Mapping[str, Task]) -> None:
    """Refuse, before anything is scored, an export the run cannot write.

    Raises:
        ScoreUsageError: With ``no_tests`` (an export needs the tests' verdicts).
        ExportError: When a format fits none of the tasks.
    """
    from prefjudge.scoring.export import check_fits

    if settings.exports and settings.no_tests:
        raise ScoreUsageError("--export needs the unit tests' verdicts: drop --no-tests",
                              param_hint="--export")
    for target in settings.exports:
        check_fits(target.format, tasks)


def load_tasks(settings: ScoreSources) -> tuple[dict[str, Task], str, list[Path], list[dict]]:
    """Load the settings' task sources, or the ``tasks.jsonl`` beside the generations file.

    Args:
        settings: The run's settings (``tasks``, ``split``, ``subset``, ``generations``,
            ``stdin``).

    Returns:
        The tasks by id, where they came from (reported), the local files to bind as
        inputs, and the identities of the hub datasets and folders among the sources (bound
        as a setting: they have no file to hash).

    Raises:
        ScoreUsageError: When a source is unknown (or its split or subset), or two sources
            hold the same task.
        StageError: When a source cannot be used (e.g. a hub dataset not cached).
    """
    from prefjudge.scoring.sources import SourceError, UnknownSourceError
    from prefjudge.scoring.task_sources import RepeatedTaskError, load_task_sources

    sources: list[str] = list(settings.tasks)
    origin = "--tasks"
    if not sources:
        if settings.stdin:
            return {}, "none (GENERATIONS is stdin: name the tasks with --tasks)", [], []
        sibling = settings.generations.parent / "tasks.jsonl"
        if not sibling.exists():
            return {}, "none", [], []
        sources, origin = [str(sibling)], "tasks.jsonl beside the generations file"
    try:
        loaded = load_task_sources(sources, split=settings.split, subset=settings.subset)
    except UnknownSourceError as exc:
        raise ScoreUsageError(str(exc), param_hint="--tasks") from exc
    except RepeatedTaskError as exc:
        raise ScoreUsageError(str(exc)) from exc
    except SourceError as exc:
        raise StageError(str(exc)) from exc
    tasks, paths, identities, labels = loaded.tasks, loaded.paths, loaded.identities, loaded.labels
    names = ", ".join(labels)
    return tasks, f"{len(tasks)} tasks from {names} ({origin})", paths, identities


__all__ = ["ScoreUsageError", "check_exports", "load_tasks", "regenerated_records"]
