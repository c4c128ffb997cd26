"""The ``augment`` stage's use case: augment a task source into an AugmentedTask journal.

:func:`augment_file` is what ``prefjudge augment`` and ``prefjudge run`` call: it loads the
tasks (a file, a dataset folder or a hub dataset), chooses k instructions for each with the
rule or the LLM selector, writes the augmented tasks to a resumable journal and the run's
summary (category distribution, invalid-parameter rate) next to it. It never prints: notes
and progress go to a :class:`~prefjudge.reporting.Reporter`, failures are
:class:`~prefjudge.reporting.StageError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prefjudge.backends import Backend, BackendError, Sampling
from prefjudge.io import InputError, summary_path
from prefjudge.journal import Journal, content_digest, model_settings, open_journal
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, Task
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.sources import SourceError, open_task_source
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.testbed.augment.llm import select_llm
from prefjudge.testbed.augment.rule import select_rule
from prefjudge.testbed.augment.summary import dumps_summary, summarize

if TYPE_CHECKING:
    from prefjudge.scoring.sources import Origin

__all__ = ["LLM_CHUNK", "SELECTOR_SAMPLING", "AugmentOutcome", "AugmentSettings", "augment_file"]

#: Tasks sent to the LLM selector per ``generate`` call (each chunk is journaled at once).
LLM_CHUNK = 64
#: The LLM selector's sampling defaults (the user's settings win over them).
SELECTOR_SAMPLING: Mapping[str, Any] = {"max_tokens": 512, "seed": 0}

Selector = Literal["rule", "llm"]


@dataclass(frozen=True)
class AugmentSettings:
    """What an augment run does.

    Attributes:
        source: The tasks: a task file, a dataset folder or a hub dataset name (as the
            command's TASKS argument).
        output: The augmented-task JSONL (appended; rerunning resumes).
        selector: ``rule`` (deterministic) or ``llm`` (the backend chooses).
        k: Instructions chosen per task.
        seed: Permutation seed of the selector.
        limit: Only the first N tasks (None: all).
        split: Split of a hub dataset or dataset folder (None: the dataset's own).
        subset: Subset of a hub dataset (None: the dataset's own).
        force_new: Start the output again instead of resuming it.
        sampling: Sampling of the LLM selector (not used by the rule selector).
    """

    source: str
    output: Path
    selector: Selector = "rule"
    k: int = 5
    seed: int = 0
    limit: int | None = None
    split: str | None = None
    subset: str | None = None
    force_new: bool = False
    sampling: Sampling = field(default_factory=lambda: Sampling(**SELECTOR_SAMPLING))


@dataclass(frozen=True)
class AugmentOutcome:
    """What an augment run did.

    Attributes:
        output: The augmented-task JSONL.
        summary_file: The summary JSON written next to it.
        summary: The summary (as written): category distribution, invalid-parameter rate,
            ``k``, ``seed``, ``selector`` and ``tasks_file``.
        tasks: Tasks of the source (after ``limit``).
        written: Augmented tasks written by this run.
        resumed: Augmented tasks already in the output when the run began (0 when new).
        selector_calls: Tasks sent to the LLM selector by this run (0 for the rule one).
    """

    output: Path
    summary_file: Path
    summary: Mapping[str, Any]
    tasks: int
    written: int
    resumed: int
    selector_calls: int


def _check_instructions(records: list[AugmentedTask], taxonomy: Taxonomy, out: Path) -> None:
    """Refuse a resumed output whose records name instructions the taxonomy lacks."""
    for record in records:
        unknown = [ref.id for ref in record.instructions if ref.id not in taxonomy]
        if unknown:
            raise StageError(
                f"{out}: task {record.task_id!r} has unknown instruction id {unknown[0]!r} "
                "(not in the taxonomy): fix or remove its line, or use --force-new to start "
                "again"
            )


def _journal(settings: AugmentSettings, origin: Origin, model: Backend | None) -> Journal:
    """The output's journal, bound to k, seed, selector, taxonomy, source and model."""
    journal_settings: dict[str, object] = {
        "k": settings.k,
        "seed": settings.seed,
        "selector": settings.selector,
        "taxonomy": content_digest(data_dir("rubrics") / "vericode.yaml"),
    }
    if origin.identity:  # a hub dataset or folder: no input file to hash
        journal_settings["tasks_source"] = dict(origin.identity)
    if model is not None:
        journal_settings.update(model_settings(model, settings.sampling))
        journal_settings["prompt"] = content_digest(
            data_dir("rubrics") / "prompts" / "augment_selector.md"
        )
    return Journal(
        settings.output,
        AugmentedTask,
        lambda record: record.task_id,
        stage="augment",
        inputs={"tasks": list(origin.paths)},
        settings=journal_settings,
        force_new=settings.force_new,
    )


def augment_file(
    settings: AugmentSettings, backend: Backend | None, reporter: Reporter
) -> AugmentOutcome:
    """Augment every task of a source with k instructions; write the journal and its summary.

    Resumes by ``task_id``: tasks already in the output are not chosen again (the journal
    refuses an output made from other inputs or settings unless ``force_new``).

    Args:
        settings: What to run.
        backend: An open backend, used (and needed) only by the ``llm`` selector; the
            caller closes it.
        reporter: Where notes and progress go.

    Returns:
        What was written.

    Raises:
        StageError: The source cannot be read (chained from its ``SourceError`` or
            ``InputError``), the ``llm`` selector has no backend, the journal refuses the
            output, or the backend fails (tasks written so far are kept).
    """
    if settings.selector == "llm" and backend is None:
        raise StageError("the llm selector needs a model backend (configure a model)")
    model = backend if settings.selector == "llm" else None
    try:
        loaded, origin = open_task_source(
            settings.source, split=settings.split, subset=settings.subset, limit=settings.limit
        )
    except (SourceError, InputError) as exc:
        raise StageError(str(exc)) from exc
    tasks: list[Task] = list(loaded.values())
    out = settings.output
    taxonomy = load_taxonomy()
    journal = _journal(settings, origin, model)
    with open_journal(journal, reporter):
        todo = [task for task in tasks if task.task_id not in journal.done]
        resumed = len(journal.done) if journal.resumed else 0
        if journal.resumed:
            reporter.note(
                f"resuming: {len(journal.done)} tasks already in {out}, {len(todo)} to do"
            )
        if model is None:
            for task in todo:
                journal.write(select_rule(task, settings.k, settings.seed, taxonomy))
        elif todo:
            _run_llm(todo, model, settings, taxonomy, journal, reporter)
        wanted = {task.task_id for task in tasks}
        records = [r for r in journal.records() if r.task_id in wanted]
    _check_instructions(records, taxonomy, out)
    summary = summarize(records, taxonomy)
    shown_tasks = origin.label if origin.identity else settings.source
    summary.update(
        {
            "k": settings.k,
            "seed": settings.seed,
            "selector": settings.selector,
            "tasks_file": shown_tasks,
        }
    )
    summary_file = summary_path(out, ".json")
    summary_file.write_text(dumps_summary(summary) + "\n", encoding="utf-8")
    return AugmentOutcome(
        output=out,
        summary_file=summary_file,
        summary=summary,
        tasks=len(tasks),
        written=len(todo),
        resumed=resumed,
        selector_calls=len(todo) if model is not None else 0,
    )


def _run_llm(
    todo: list[Task],
    backend: Backend,
    settings: AugmentSettings,
    taxonomy: Taxonomy,
    journal: Journal[AugmentedTask],
    reporter: Reporter,
) -> None:
    """Ask the selector model about ``todo``, a chunk at a time, journaling each chunk."""
    try:
        with reporter.progress("selector calls", len(todo)) as advance:
            for start in range(0, len(todo), LLM_CHUNK):
                chunk = todo[start : start + LLM_CHUNK]
                for record in select_llm(
                    chunk,
                    backend,
                    k=settings.k,
                    seed=settings.seed,
                    taxonomy=taxonomy,
                    sampling=settings.sampling,
                    on_result=lambda _result: advance(1),
                ):
                    journal.write(record)
    except BackendError as exc:
        raise StageError(f"{exc} (tasks written so far are kept)") from exc
