"""The persona ``rewrite`` use case: tasks and a persona in, rewritten tasks out, journalled.

Rewrites that fail their checks are written to a rejected file beside the output
(:func:`rejected_path`); a summary of the run goes beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.backends import Backend, Sampling
from prefjudge.io import summary_path, write_json
from prefjudge.journal import Journal, JournalError, content_digest, model_settings, open_journal
from prefjudge.paths import data_dir
from prefjudge.persona.rewrite import (
    RejectedRewrite,
    Rewriter,
    TaskRewrite,
    sandbox_reference_check,
)
from prefjudge.persona.stage_common import CHUNK, _persona, _tasks
from prefjudge.persona.summary import RewriteSummary, summarize_rewrites
from prefjudge.records import Persona, Task
from prefjudge.reporting import Reporter, StageError

REWRITE_SAMPLING: dict[str, Any] = {"max_tokens": 1024, "seed": 0}
"""The rewrite stage's sampling defaults."""


@dataclass(frozen=True)
class RewriteSettings:
    """What ``persona rewrite`` rewrites, and how.

    Attributes:
        tasks: The task file (any format :func:`prefjudge.scoring.tasks.load_tasks` reads).
        persona: A built-in persona's name or a persona YAML file.
        output: Rewritten tasks (JSONL journal); rejected tasks go to OUTPUT's
            ``.rejected.jsonl``, the summary to OUTPUT's ``.summary.json``.
        limit: Only the first N tasks (None: every task).
        max_attempts: Rewrites tried per task before it is rejected.
        reference_check: Run each task's reference solution against its tests in the
            sandbox on the rewritten prompt.
        force_new: Start OUTPUT (and its rejected file) again instead of resuming.
        sampling: Sampling of the model calls (the first attempt's; retries sample warmer).
    """

    tasks: Path
    persona: str
    output: Path
    limit: int | None = None
    max_attempts: int = 3
    reference_check: bool = True
    force_new: bool = False
    sampling: Sampling = field(default_factory=lambda: Sampling(**REWRITE_SAMPLING))


@dataclass(frozen=True)
class RewriteOutcome:
    """What a rewrite run left in its outputs.

    Attributes:
        summary: Counts (tasks, accepted, rejected, retries, modes, rejection kinds), as
            written to ``summary_file``.
        output: The accepted rewrites.
        rejected: The rejected tasks with their reasons.
        summary_file: The summary JSON.
    """

    summary: RewriteSummary
    output: Path
    rejected: Path
    summary_file: Path


def rejected_path(output: Path) -> Path:
    """Where ``persona rewrite`` puts the rejected tasks of ``output``.

    Args:
        output: The rewritten tasks' JSONL.

    Returns:
        ``tasks.jsonl`` -> ``tasks.rejected.jsonl``.
    """
    return output.with_name(output.name.removesuffix(".jsonl") + ".rejected.jsonl")


def _journals(settings: RewriteSettings, backend: Backend, who: Persona,
              rejected: Path) -> tuple[Journal, Journal]:
    """The accepted and rejected journals, both bound to the same inputs and settings."""
    bound = {
        "persona": who.model_dump(mode="json"),
        "max_attempts": settings.max_attempts,
        "reference_check": settings.reference_check,
        "templates": content_digest(data_dir("rubrics") / "personas" / "prompts"),
        **model_settings(backend, settings.sampling),
    }
    inputs = {"tasks": settings.tasks}
    good = Journal(
        settings.output,
        Task,
        lambda t: t.task_id,
        stage="persona rewrite",
        inputs=inputs,
        settings=bound,
        force_new=settings.force_new,
    )
    bad = Journal(
        rejected,
        RejectedRewrite,
        lambda r: r.task_id,
        stage="persona rewrite (rejected)",
        inputs=inputs,
        settings=bound,
        force_new=settings.force_new,
    )
    return good, bad


def _rewrite(rewriter: Rewriter, todo: list[Task], good: Journal, bad: Journal, persona: str,
             reporter: Reporter) -> list[TaskRewrite]:
    """Rewrite ``todo`` in chunks, each outcome journaled as it comes; the outcomes."""
    outcomes: list[TaskRewrite] = []
    with reporter.progress("rewrite calls (first attempt)", len(todo) * 3) as advance:
        for start in range(0, len(todo), CHUNK):
            for outcome in rewriter.rewrite(
                todo[start : start + CHUNK], on_result=lambda _r: advance(1)
            ):
                outcomes.append(outcome)
                if outcome.accepted:
                    good.write(outcome.task)
                else:
                    bad.write(
                        RejectedRewrite(
                            task_id=outcome.task.task_id,
                            persona=persona,
                            mode=outcome.mode,
                            attempts=outcome.attempts,
                            reasons=outcome.reasons,
                        )
                    )
    return outcomes


def rewrite_file(settings: RewriteSettings, backend: Backend, reporter: Reporter) -> RewriteOutcome:
    """Rewrite a task file in a persona's voice, checking each rewrite; resumable.

    Accepted rewrites go to ``settings.output``, tasks rejected after every attempt to its
    ``.rejected.jsonl`` (both journals bound to the tasks, persona, attempts, reference
    check, prompt templates, model and sampling); tasks in either are not asked again. The
    summary of both files is written to OUTPUT's ``.summary.json``.

    Args:
        settings: The tasks, persona, outputs and rewrite options.
        backend: The model (open; the caller closes it and reports its usage).
        reporter: Where journal notes, the resuming note and the progress go.

    Returns:
        The summary and the paths written.

    Raises:
        StageError: When the persona or the task file cannot be loaded, or an output
            cannot be opened (another run holds it, other inputs or settings made it).
    """
    who = _persona(settings.persona)
    tasks = _tasks(settings.tasks)[: settings.limit]
    out = settings.output
    rejected = rejected_path(out)
    good, bad = _journals(settings, backend, who, rejected)
    rewriter = Rewriter(
        backend,
        who,
        settings.sampling,
        max_attempts=settings.max_attempts,
        reference_check=sandbox_reference_check if settings.reference_check else None,
    )
    try:
        with open_journal(good, reporter), open_journal(bad, reporter):
            todo = [t for t in tasks if t.task_id not in good.done and t.task_id not in bad.done]
            if good.resumed or bad.resumed:
                reporter.note(
                    f"resuming: {len(good.done)} accepted and {len(bad.done)} "
                    f"rejected already, {len(todo)} to do"
                )
            outcomes = _rewrite(rewriter, todo, good, bad, who.name, reporter)
            accepted = good.records()
            all_rejected = bad.records()
    except JournalError as exc:
        raise StageError(str(exc)) from exc
    summary = summarize_rewrites(
        persona=who.name,
        tasks_file=str(settings.tasks),
        tasks=len(tasks),
        accepted=accepted,
        rejected=all_rejected,
        outcomes=outcomes,
        reference_check=settings.reference_check,
    )
    written = summary_path(out, ".json")
    write_json(written, summary.as_dict())
    return RewriteOutcome(summary=summary, output=out, rejected=rejected, summary_file=written)
