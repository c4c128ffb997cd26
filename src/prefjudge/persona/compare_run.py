"""The persona ``compare`` use case: response pairs judged under the original and persona tasks.

Each pair is judged under the original task and under the persona's rewrite of it; the
comparisons are journalled, so a stopped run resumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prefjudge.backends import Backend, Sampling
from prefjudge.io import InputError
from prefjudge.journal import Journal, JournalError, content_digest, model_settings, open_journal
from prefjudge.judge.pairs import pairs_from_generations
from prefjudge.paths import data_dir
from prefjudge.persona.compare import ComparisonItem, compare
from prefjudge.persona.flips import DEFAULT_RESAMPLES
from prefjudge.persona.flips_run import FlipsOutcome, write_flips
from prefjudge.persona.profile import Dimension, load_dimensions
from prefjudge.persona.stage_common import CHUNK, Condition, _persona
from prefjudge.records import Persona, PersonaComparison
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.sources import SourceError
from prefjudge.scoring.task_sources import load_task_sources
from prefjudge.stats import DEFAULT_SEED

COMPARE_SAMPLING: dict[str, Any] = {"max_tokens": 1536, "seed": 0}
"""The compare stage's sampling defaults."""


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


Work = tuple[Condition, Persona | None, list[ComparisonItem]]
"""One condition to compare: its name, whom to judge as (None: a generic developer), its items."""


def _work(settings: CompareSettings, who: Persona) -> list[Work]:
    """The persona's items, then the originals' when ``original`` is given."""
    work: list[Work] = [
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
    return work


def _journal(settings: CompareSettings, backend: Backend, who: Persona,
             dims: Sequence[Dimension]) -> Journal:
    """The comparisons' journal, bound to the inputs, persona, dimensions, rubrics and model."""
    return Journal(
        settings.output,
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


def _compare(work: list[Work], journal: Journal, dims: Sequence[Dimension], backend: Backend,
             settings: CompareSettings, reporter: Reporter) -> list[PersonaComparison]:
    """Compare what is not journaled yet, condition by condition; the new comparisons."""
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
    return fresh


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
    work = _work(settings, who)
    out = settings.output
    dims = load_dimensions()
    journal = _journal(settings, backend, who, dims)
    try:
        with open_journal(journal, reporter):
            existing = list(journal.done.values())
            fresh = _compare(work, journal, dims, backend, settings, reporter)
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
