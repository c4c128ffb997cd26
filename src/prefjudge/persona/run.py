"""The persona stages as use cases: profile, rewrite, compare and flips, without a command line.

Each function takes typed settings, an open backend (the caller owns it: it opens and
closes it, and shows its usage) and a :class:`~prefjudge.reporting.Reporter`; it never
prints. ``prefjudge persona ...`` and ``prefjudge run`` both call them::

    outcome = rewrite_file(RewriteSettings(tasks, "beginner", out), backend, reporter)
    compared = compare_files(CompareSettings(gen_a, gen_b, "beginner", (out_tasks,), cmp_out,
                                             original=(orig_a, orig_b),
                                             original_tasks=(tasks,)), backend, reporter)

A failure a person must act on (a bad input file, an unknown persona, an output made with
other settings) raises :class:`~prefjudge.reporting.StageError`; records already written
are kept, and running the stage again resumes after them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import ValidationError

from prefjudge.backends import Backend, Sampling
from prefjudge.io import InputError, read_records, read_text, summary_path, write_json
from prefjudge.journal import Journal, JournalError, content_digest, model_settings, open_journal
from prefjudge.judge.pairs import pairs_from_generations
from prefjudge.paths import data_dir
from prefjudge.persona.compare import ComparisonItem, compare
from prefjudge.persona.flips import DEFAULT_RESAMPLES, flip_table, flips_summary
from prefjudge.persona.profile import (
    PersonaError,
    build_profile,
    load_dimensions,
    load_persona,
    persona_yaml,
)
from prefjudge.persona.rewrite import (
    RejectedRewrite,
    Rewriter,
    TaskRewrite,
    sandbox_reference_check,
)
from prefjudge.persona.summary import RewriteSummary, summarize_rewrites
from prefjudge.plots.persona import plot_flips
from prefjudge.records import Persona, PersonaComparison, Task
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.scoring.sources import SourceError
from prefjudge.scoring.task_sources import load_task_sources
from prefjudge.scoring.tasks import load_tasks
from prefjudge.stats import DEFAULT_SEED

CHUNK = 32
"""Tasks (rewrite) or response pairs (compare) sent to the backend at a time."""
PROFILE_SAMPLING: dict[str, Any] = {"max_tokens": 1536, "seed": 0}
"""The profile stage's sampling defaults (``BackendConfig.sampling(**PROFILE_SAMPLING)``)."""
REWRITE_SAMPLING: dict[str, Any] = {"max_tokens": 1024, "seed": 0}
"""The rewrite stage's sampling defaults."""
COMPARE_SAMPLING: dict[str, Any] = {"max_tokens": 1536, "seed": 0}
"""The compare stage's sampling defaults."""

Condition = Literal["original", "persona"]


# -- shared helpers ----------------------------------------------------------------------------


def _persona(name: str | Path) -> Persona:
    """The persona named (built-in name or YAML file), or a StageError saying why not."""
    try:
        return load_persona(name)
    except PersonaError as exc:
        raise StageError(str(exc)) from exc


def _tasks(path: Path) -> list[Task]:
    try:
        return list(load_tasks(path).values())
    except InputError as exc:
        raise StageError(str(exc)) from exc


# -- profile -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileSettings:
    """What ``persona profile`` builds.

    Attributes:
        description: A short free-text description of the user, or a text file holding it.
        name: The persona's name (checked by the caller with
            :func:`prefjudge.paths.check_path_name`).
        output: Persona YAML to write; None writes no file (the YAML is only returned).
        sampling: Sampling of the model call.
    """

    description: str
    name: str
    output: Path | None = None
    sampling: Sampling = field(default_factory=lambda: Sampling(**PROFILE_SAMPLING))


@dataclass(frozen=True)
class ProfileOutcome:
    """What ``persona profile`` made.

    Attributes:
        persona: The validated persona.
        yaml: Its YAML text (it loads back as the persona).
        output: The file written, or None.
    """

    persona: Persona
    yaml: str
    output: Path | None


def profile_file(settings: ProfileSettings, backend: Backend, reporter: Reporter) -> ProfileOutcome:
    """Build a structured persona profile from a short description, with one model call.

    Args:
        settings: The description, the name, where to write it and the sampling.
        backend: The model (open; the caller closes it).
        reporter: Unused today (no notes); taken as every stage takes one.

    Returns:
        The persona, its YAML and the file written.

    Raises:
        StageError: When the description file cannot be read, or the model gives no valid
            profile.
    """
    del reporter
    text = settings.description
    if Path(text).is_file():
        try:
            text = read_text(text)
        except InputError as exc:
            raise StageError(str(exc)) from exc
    try:
        made = build_profile(text, settings.name, backend, settings.sampling)
    except (PersonaError, ValidationError) as exc:
        raise StageError(str(exc)) from exc
    written = persona_yaml(made)
    try:
        if settings.output is None:
            with tempfile.TemporaryDirectory(prefix="prefjudge-persona-") as folder:
                check = Path(folder) / "persona.yaml"
                check.write_text(written, encoding="utf-8")
                load_persona(check)  # what we return must load back
        else:
            settings.output.write_text(written, encoding="utf-8")
            load_persona(settings.output)  # what we wrote must load back
    except PersonaError as exc:
        raise StageError(str(exc)) from exc
    return ProfileOutcome(persona=made, yaml=written, output=settings.output)


# -- rewrite -----------------------------------------------------------------------------------


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
    bound = {
        "persona": who.model_dump(mode="json"),
        "max_attempts": settings.max_attempts,
        "reference_check": settings.reference_check,
        "templates": content_digest(data_dir("rubrics") / "personas" / "prompts"),
        **model_settings(backend, settings.sampling),
    }
    inputs = {"tasks": settings.tasks}
    good = Journal(
        out,
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
    rewriter = Rewriter(
        backend,
        who,
        settings.sampling,
        max_attempts=settings.max_attempts,
        reference_check=sandbox_reference_check if settings.reference_check else None,
    )
    outcomes: list[TaskRewrite] = []
    try:
        with open_journal(good, reporter), open_journal(bad, reporter):
            todo = [t for t in tasks if t.task_id not in good.done and t.task_id not in bad.done]
            if good.resumed or bad.resumed:
                reporter.note(
                    f"resuming: {len(good.done)} accepted and {len(bad.done)} "
                    f"rejected already, {len(todo)} to do"
                )
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
                                    persona=who.name,
                                    mode=outcome.mode,
                                    attempts=outcome.attempts,
                                    reasons=outcome.reasons,
                                )
                            )
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


# -- flips -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlipsOutcome:
    """Where the preferred model flips between original and persona prompts.

    Attributes:
        table: Per dimension (and ``overall``): both conditions' win rates with their
            intervals, the paired difference and the flips, as shown to a person.
        summary: The JSON summary written to ``json_file``
            (:func:`prefjudge.persona.flips.flips_summary`).
        message: One line naming the flipped dimensions and those outside the intervals.
        csv_file: The whole flip table (every column of
            :data:`prefjudge.persona.flips.FLIP_COLUMNS`).
        json_file: The summary.
        png_file: The chart.
    """

    table: TextTable
    summary: dict[str, Any]
    message: str
    csv_file: Path
    json_file: Path
    png_file: Path


SHOWN_COLUMNS = ["dimension", "original [95% CI]", "persona [95% CI]", "difference", "flip"]
"""The columns of the flip table shown to a person (the CSV holds every column, by name:
``orig_win_rate, orig_lo, orig_hi, persona_win_rate, ..., diff, flip, significant_flip``)."""


def _rate(value: float, lower: float, upper: float) -> str:
    if pd.isna(value):
        return "–"
    if pd.isna(lower) or pd.isna(upper):
        return f"{value:.3f}"
    return f"{value:.3f} [{lower:.3f}, {upper:.3f}]"


def flips_table(frame: pd.DataFrame, title: str) -> TextTable:
    """The flip table as a person reads it: each win rate with its interval in one cell.

    Args:
        frame: Output of :func:`prefjudge.persona.flips.flip_table`.
        title: The table's title.

    Returns:
        The table (:data:`SHOWN_COLUMNS`); a flip is ``yes``, or ``yes, outside the
        intervals`` when significant; ``–`` marks a rate with no trials.
    """
    rows = []
    for row in frame.itertuples(index=False):
        flip = "yes, outside the intervals" if row.significant_flip else "yes" if row.flip else "no"
        diff = "–" if pd.isna(row.diff) else f"{row.diff:+.3f}"
        rows.append(
            [
                str(row.dimension),
                _rate(row.orig_win_rate, row.orig_lo, row.orig_hi),
                _rate(row.persona_win_rate, row.persona_lo, row.persona_hi),
                diff,
                flip,
            ]
        )
    return TextTable(title, SHOWN_COLUMNS, rows, right=frozenset(SHOWN_COLUMNS[1:4]))


def write_flips(
    comparisons: Sequence[PersonaComparison],
    prefix: Path,
    *,
    bootstrap: int = DEFAULT_RESAMPLES,
    ci_seed: int = DEFAULT_SEED,
    title: str,
) -> FlipsOutcome:
    """Compute the flip table and write ``<prefix>.flips.{json,csv,png}``.

    Args:
        comparisons: Persona comparisons of both conditions.
        prefix: Path prefix of the three files.
        bootstrap: Bootstrap resamples of the intervals.
        ci_seed: Seed of the intervals.
        title: Names the persona(s) in the table and chart titles.

    Returns:
        The shown table, the summary and the files written.

    Raises:
        ValueError: When the comparisons name more than two models.
    """
    dims = [d.id for d in load_dimensions()]
    frame = flip_table(comparisons, n_resamples=bootstrap, seed=ci_seed, dimensions=dims)
    x, y = frame["model_x"].iloc[0], frame["model_y"].iloc[0]
    table = flips_table(frame, f"{title}: win rate of {x} over {y} (ties half)")
    summary = flips_summary(frame)
    json_file = prefix.with_name(prefix.name + ".flips.json")
    csv_file = prefix.with_name(prefix.name + ".flips.csv")
    png_file = prefix.with_name(prefix.name + ".flips.png")
    write_json(json_file, summary)
    frame.to_csv(csv_file, index=False)
    plot_flips(frame, png_file, title=title)
    flipped = summary.get("flipped", [])
    message = (
        f"preference flips: {', '.join(flipped) or 'none'}; outside the intervals: "
        f"{', '.join(summary.get('significant_flips', [])) or 'none'}"
    )
    return FlipsOutcome(
        table=table,
        summary=summary,
        message=message,
        csv_file=csv_file,
        json_file=json_file,
        png_file=png_file,
    )


@dataclass(frozen=True)
class FlipsSettings:
    """What ``persona flips`` reads and writes.

    Attributes:
        comparisons: A ``persona compare`` output (both conditions).
        prefix: Prefix of the ``.flips.{csv,json,png}`` files (None: COMPARISONS without
            its suffix).
        bootstrap: Bootstrap resamples of the intervals.
        ci_seed: Seed of the intervals.
    """

    comparisons: Path
    prefix: Path | None = None
    bootstrap: int = DEFAULT_RESAMPLES
    ci_seed: int = DEFAULT_SEED


def flips_file(settings: FlipsSettings, reporter: Reporter) -> FlipsOutcome:
    """Per-dimension win rates, original vs persona prompts, of a comparisons file.

    Args:
        settings: The comparisons file, the output prefix and the intervals.
        reporter: Unused today (no notes); taken as every stage takes one.

    Returns:
        The shown table, the summary and the files written.

    Raises:
        StageError: When the file holds an invalid comparison or more than two models, or
            lacks the comparisons of one condition (it is empty, or was made without the
            original prompts): a flip needs both.
    """
    del reporter
    try:
        rows = [row for _, row in read_records(settings.comparisons, PersonaComparison)[0]]
    except InputError as exc:
        raise StageError(str(exc)) from exc
    if not rows:
        raise StageError(f"{settings.comparisons}: no comparisons in the file (it is empty)")
    missing = sorted({"original", "persona"} - {row.condition for row in rows})
    if missing:
        raise StageError(
            f"{settings.comparisons}: no comparison with condition {missing[0]!r}: flips "
            "compare the original prompts with the persona's, so the file needs both "
            "(persona compare writes both when given --original)"
        )
    personas = sorted({c.persona for c in rows if c.condition == "persona" and c.persona})
    base = settings.prefix if settings.prefix else settings.comparisons.with_suffix("")
    try:
        return write_flips(
            rows,
            base,
            bootstrap=settings.bootstrap,
            ci_seed=settings.ci_seed,
            title=f"persona {', '.join(personas) or '?'}",
        )
    except ValueError as exc:
        raise StageError(f"{settings.comparisons}: {exc}") from exc


# -- compare -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareSettings:
    """What ``persona compare`` compares, and how.

    Attributes:
        gen_a: Model A's generations for the persona's prompts.
        gen_b: Model B's generations for the same prompts.
        persona: A built-in persona's name or a persona YAML file.
        tasks: The persona's rewritten tasks (the prompts GEN_A and GEN_B answered): one
            file or several (``--tasks``, repeatable), merged by task id.
        output: Comparisons JSONL (a journal: rerunning resumes).
        original: The same two models' generations on the original prompts (ORIG_A,
            ORIG_B), or None to compare the persona prompts only (then no flips).
        original_tasks: The original tasks (required with ``original``; repeatable too).
        original_judging: Judge the original prompts' answers as a ``generic`` developer
            or with the ``persona``'s preferences.
        bootstrap: Bootstrap resamples of the flip intervals (with ``original``).
        ci_seed: Seed of the flip intervals.
        force_new: Start OUTPUT again instead of resuming it.
        sampling: Sampling of the judge's calls.
    """

    gen_a: Path
    gen_b: Path
    persona: str
    tasks: tuple[Path, ...]
    output: Path
    original: tuple[Path, Path] | None = None
    original_tasks: tuple[Path, ...] = ()
    original_judging: Literal["generic", "persona"] = "generic"
    bootstrap: int = DEFAULT_RESAMPLES
    ci_seed: int = DEFAULT_SEED
    force_new: bool = False
    sampling: Sampling = field(default_factory=lambda: Sampling(**COMPARE_SAMPLING))


@dataclass(frozen=True)
class CompareOutcome:
    """What a comparison run left in its output.

    Attributes:
        output: The comparisons JSONL.
        comparisons: Comparisons in it (earlier runs' and this one's).
        errors: Those whose judging failed (never counted in the flips).
        flips: The flip table and its files (with ``original``), else None.
    """

    output: Path
    comparisons: int
    errors: int
    flips: FlipsOutcome | None = None

    @property
    def message(self) -> str:
        """One line: how many comparisons, errors and where."""
        return f"{self.comparisons} comparisons ({self.errors} errors) in {self.output}"


def _items(
    gen_a: Path, gen_b: Path, tasks: Sequence[Path], condition: Condition, option: str
) -> list[ComparisonItem]:
    try:
        loaded = load_task_sources([str(path) for path in tasks], option=option)
    except (InputError, SourceError) as exc:
        raise StageError(str(exc)) from exc
    prompts = {task_id: task.prompt for task_id, task in loaded.tasks.items()}
    try:
        pairs, _notes = pairs_from_generations(gen_a, gen_b, tasks=prompts)
    except InputError as exc:
        raise StageError(str(exc)) from exc
    return [
        ComparisonItem(
            p.task_id, p.instruction, p.response_a, p.response_b, p.model_a, p.model_b, condition
        )
        for p in pairs
    ]


def compare_files(
    settings: CompareSettings, backend: Backend, reporter: Reporter
) -> CompareOutcome:
    """Compare two models per dimension as the persona would; with originals, the flips.

    Every response pair is judged in both orders on every dimension (one call per order);
    the comparisons go to a journal bound to the inputs, persona, dimensions, rubrics,
    model and sampling, keyed by ``condition::task_id``. With ``original``, the same
    models' answers to the original prompts are compared too (as a generic developer, or
    as the persona), and the flip table is written beside the output
    (``<output without .jsonl>.flips.{json,csv,png}``).

    Args:
        settings: The generations, tasks, persona, output and options.
        backend: The judge model (open; the caller closes it and reports its usage).
        reporter: Where journal notes, progress and the first failed comparisons go.

    Returns:
        The counts, and the flips when the originals were compared.

    Raises:
        StageError: When the persona or an input cannot be loaded, ``original`` comes
            without ``original_tasks``, the output cannot be opened, or the comparisons
            name more than two models.
    """
    who = _persona(settings.persona)
    if settings.original and not settings.original_tasks:
        raise StageError("--original needs --original-tasks")
    work: list[tuple[Condition, Persona | None, list[ComparisonItem]]] = [
        ("persona", who, _items(settings.gen_a, settings.gen_b, settings.tasks, "persona",
                                "--tasks"))
    ]
    if settings.original and settings.original_tasks:
        judge_as = who if settings.original_judging == "persona" else None
        orig_a, orig_b = settings.original
        work.append(
            (
                "original",
                judge_as,
                _items(orig_a, orig_b, settings.original_tasks, "original", "--original-tasks"),
            )
        )
    out = settings.output
    dims = load_dimensions()
    journal = Journal(
        out,
        PersonaComparison,
        lambda c: f"{c.condition}::{c.task_id}",
        stage="persona compare",
        inputs={
            "gen_a": settings.gen_a,
            "gen_b": settings.gen_b,
            "tasks": list(settings.tasks),
            "original": list(settings.original or ()),
            "original_tasks": list(settings.original_tasks),
        },
        settings={
            "persona": who.model_dump(mode="json"),
            "original_judging": settings.original_judging if settings.original else None,
            "dimensions": [d.id for d in dims],
            "rubrics": content_digest(data_dir("rubrics") / "personas"),
            **model_settings(backend, settings.sampling),
        },
        force_new=settings.force_new,
    )
    try:
        with open_journal(journal, reporter):
            existing = list(journal.done.values())
            fresh: list[PersonaComparison] = []
            for condition, judge_as, items in work:
                todo = [it for it in items if f"{condition}::{it.task_id}" not in journal.done]
                with reporter.progress(f"{condition} comparisons", 2 * len(todo)) as advance:
                    for start in range(0, len(todo), CHUNK):
                        for result in compare(
                            todo[start : start + CHUNK],
                            judge_as,
                            dims,
                            backend,
                            settings.sampling,
                            on_result=lambda _r: advance(1),
                        ):
                            journal.write(result)
                            fresh.append(result)
    except JournalError as exc:
        raise StageError(str(exc)) from exc
    everything = existing + fresh
    errors = [c for c in everything if c.status == "error"]
    for c in errors[:5]:
        reporter.warn(f"error {c.condition} {c.task_id}: {c.error or ''}")
    flips = None
    if settings.original:
        try:
            flips = write_flips(
                everything,
                out.with_suffix(""),
                bootstrap=settings.bootstrap,
                ci_seed=settings.ci_seed,
                title=f"persona {who.name}",
            )
        except ValueError as exc:
            raise StageError(f"{out}: {exc}") from exc
    return CompareOutcome(output=out, comparisons=len(everything), errors=len(errors), flips=flips)


__all__ = [
    "COMPARE_SAMPLING",
    "PROFILE_SAMPLING",
    "REWRITE_SAMPLING",
    "CompareOutcome",
    "CompareSettings",
    "FlipsOutcome",
    "FlipsSettings",
    "ProfileOutcome",
    "ProfileSettings",
    "RewriteOutcome",
    "RewriteSettings",
    "compare_files",
    "flips_file",
    "profile_file",
    "rejected_path",
    "rewrite_file",
    "write_flips",
]
