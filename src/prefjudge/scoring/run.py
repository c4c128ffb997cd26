"""``prefjudge score`` as a use case: a generations file into scored records and a summary.

:func:`score_file` reads the generations and their tasks, verifies the instructions and
runs the unit tests (on this machine or on a Ray cluster), writes one scored record per
generation to a resumable journal, and then the per-model summary (``.csv``, ``.json``,
``.png``). It never prints: notes, warnings, progress bars and tables go to a
:class:`~prefjudge.reporting.Reporter`. The ``score`` command and ``prefjudge run`` both
call it::

    outcome = score_file(ScoreSettings(Path("gens.jsonl"), output=Path("scores.jsonl")),
                         SilentReporter())

The verification process of a large input scored without unit tests is started first
(:func:`early_verifier`), so that its start-up overlaps everything else the run does: this
module is imported before it, so it imports the rest of scoring where it is used. The
summary (table, notes, files) is :mod:`prefjudge.scoring.summary_table`'s.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.scoring.engine_protocol import EngineRun, EngineWork, ScoringEngine
from prefjudge.scoring.run_inputs import (
    ScoreUsageError,
    check_exports,
    load_tasks,
    regenerated_records,
)
from prefjudge.scoring.summary_table import (
    SummaryFacts,
    frame_table,
    load_summary_meanwhile,
    summary_table,
    unrated_notes,
    write_summary,
)
from prefjudge.scoring.verify.process import VerifyProcess

if TYPE_CHECKING:
    from prefjudge.journal import Journal
    from prefjudge.records import ScoredSample, Task
    from prefjudge.scoring.export import ExportTarget
    from prefjudge.scoring.score import ScoreJob

STDIN = "-"
"""How messages and the summary name generations read from stdin."""

EARLY_VERIFIER_BYTES = 1_000_000
"""Inputs from this size (about 1,000 generations) are verified in a second process started
before the file is read (see :mod:`prefjudge.scoring.verify.process`)."""


@dataclass(frozen=True)
class ScoreSettings:
    """Everything ``prefjudge score``'s options decide.

    Attributes:
        generations: Generation records (prefjudge JSONL, or an EvalPlus, BigCodeBench or
            SWE-IF sample file).
        output: Scored records (JSONL), a journal: rerunning resumes.
        tasks: Task sources (files, dataset folders, hub names); empty: ``tasks.jsonl``
            beside ``generations``, if present.
        split: Split of the hub datasets or folders among ``tasks`` (None: their own).
        subset: Subset of the hub datasets among ``tasks`` (None: their own).
        skip_invalid: Score the valid lines and list the invalid ones instead of stopping.
        no_tests: Only verify instructions; skip unit tests.
        profile: Verification profile (``reference`` or ``strict``).
        model: Model name for sample files without one (None: the file name).
        workers: Parallel Ruff groups and sandboxes of the local engine (None: CPU count).
        test_timeout: Wall-clock seconds per sample's test run (None: the task
            format's own harness's, :data:`~prefjudge.sandbox.limits.HARNESS_DEFAULTS`).
        memory_mb: Address-space limit per sample's test run (None: likewise).
        zygote: Fork test runs from a per-worker zygote (None: the environment's default).
        preload: Modules the zygotes import besides the tasks' own.
        bootstrap: Task-bootstrap resamples for the summary's intervals.
        ci_seed: Seed of the bootstrap intervals.
        summary_prefix: Prefix of the summary files (None: ``output`` without its
            extension + ``.summary``).
        engine: Where to score: None for this machine, or an engine such as
            ``prefjudge.scale.score_engine.RayEngine(RaySettings(...))`` (``--engine ray``).
        force_new: Start ``output`` again instead of resuming it.
        stdin: ``generations`` is a copy of stdin: messages and the summary name it ``-``
            and no ``tasks.jsonl`` is looked for beside it.
        exports: Peers' result files to write once the output is complete (``--export``:
            :mod:`prefjudge.scoring.export`); checked against the tasks before anything is
            scored, and written from a finished output too.
    """

    generations: Path
    output: Path = Path("scores.jsonl")
    tasks: tuple[str, ...] = ()
    split: str | None = None
    subset: str | None = None
    skip_invalid: bool = False
    no_tests: bool = False
    profile: Literal["reference", "strict"] = "reference"
    model: str | None = None
    workers: int | None = None
    test_timeout: float | None = None
    memory_mb: int | None = None
    zygote: bool | None = None
    preload: tuple[str, ...] = ()
    bootstrap: int = 1000  # prefjudge.stats.DEFAULT_RESAMPLES (which imports NumPy)
    ci_seed: int = 0
    summary_prefix: Path | None = None
    engine: ScoringEngine | None = None
    force_new: bool = False
    stdin: bool = False
    exports: tuple[ExportTarget, ...] = ()

    @property
    def source(self) -> str:
        """How messages and the summary name the generations: ``-`` for stdin, else the path."""
        return STDIN if self.stdin else os.fspath(self.generations)


@dataclass(frozen=True)
class ScoreOutcome:
    """What a scoring run did.

    Attributes:
        output: The scored records.
        records: Records of this input in ``output`` (those the summary counts).
        scored: Records scored in this run.
        resumed: Records ``output`` already held when the run began.
        skipped: Invalid input problems skipped (``skip_invalid``).
        tests: Whether unit tests ran.
        tasks: Where the tasks came from.
        sandbox: How the unit tests were isolated ("" without tests).
        summary_csv: The per-model summary (CSV).
        summary_json: The per-model summary with the run's settings (JSON).
        summary_plot: The per-model summary plot (PNG).
        table: The per-model table the run reported.
        check_errors: Instruction checks that ended in error, over all models.
        test_errors: Test runs that ended in error, over all models.
        exported: The peers' result files written (``exports``).
        summary: The summary file's object as the file holds it (the run's settings and
            ``models``, one row per model; NaN as None), so that a caller needs not read
            the file back.
    """

    output: Path
    records: int
    scored: int
    resumed: int
    skipped: int
    tests: bool
    tasks: str
    sandbox: str
    summary_csv: Path
    summary_json: Path
    summary_plot: Path
    table: TextTable
    check_errors: int
    test_errors: int
    exported: tuple[Path, ...] = ()
    summary: dict[str, Any] = field(default_factory=dict, compare=False)


def score_file(settings: ScoreSettings, reporter: Reporter, *,
               verifier: VerifyProcess | None = None) -> ScoreOutcome:
    """Score the generations into ``settings.output`` and write the per-model summary.

    Reports where the tasks came from, the profile, the sandbox (or the Ray nodes), invalid
    lines skipped, resuming, progress over instructions and unit tests, the per-model table
    (a result) and the files written.

    Args:
        settings: What to score, where, and how.
        reporter: Where notes, warnings, progress and tables go.
        verifier: The run's verification process, started before by
            :func:`early_verifier` (``score_file`` closes it); None: ``score_file`` starts
            one itself when the run should have one.

    Returns:
        What was scored and the files written.

    Raises:
        ScoreUsageError: When a task source is unknown or two name the same task.
        StageError: When an input is invalid or empty, a task source cannot be used, the
            output cannot be resumed, or the Ray engine cannot go on (records already
            written are kept).
    """
    stack = ExitStack()
    try:
        if verifier is None:
            verifier = early_verifier(settings)
        if verifier is not None:
            stack.callback(verifier.close)
        return _score(settings, reporter, stack, verifier)
    finally:
        stack.close()


def _score(settings: ScoreSettings, reporter: Reporter, stack: ExitStack,
           verifier: VerifyProcess | None) -> ScoreOutcome:
    """:func:`score_file`, with ``stack`` closing the verifier and the Ray connection."""
    from prefjudge.journal import open_journal

    run = _Run(settings, reporter, stack, verifier)
    journal = run.journal()
    with open_journal(journal, reporter):
        if journal.revised:
            reporter.note(f"{settings.generations} has failed generations made again: their "
                          f"{journal.revised} record(s) are scored again")
        loading = load_summary_meanwhile()
        rows, new, resumed = run.score_into(journal)
    if run.verifier is not None:  # its end overlaps the summary (score_file waits for it)
        run.verifier.finish()
    loading.join()
    return run.summarise(rows, new, resumed)


@dataclass
class _Inputs:
    """What a run reads before it scores.

    Attributes:
        tasks: Tasks by id.
        origin: Where the tasks came from (reported).
        paths: The local task files, bound as inputs.
        sources: The hub datasets' and folders' identities, bound as a setting.
        job: The validated generations.
    """

    tasks: dict[str, Task]
    origin: str
    paths: list[Path]
    sources: list[dict]
    job: ScoreJob


class _Run:
    """One ``score_file`` run: its inputs, engine and journal, scoring, then the summary."""

    def __init__(self, settings: ScoreSettings, reporter: Reporter, stack: ExitStack,
                 verifier: VerifyProcess | None) -> None:
        self.settings, self.reporter, self.stack = settings, reporter, stack
        self.workers = settings.workers or os.cpu_count()
        self.verifier = verifier
        self.inputs = self._read_inputs()
        self.tests_on = not settings.no_tests and bool(self.inputs.tasks)
        self.engine: EngineRun | None = None
        self.isolation = self.isolation_mode = ""
        self._start_engine()

    def _read_inputs(self) -> _Inputs:
        """Load the tasks, then read and check the generations (reporting what was wrong)."""
        from prefjudge.io import InputError
        from prefjudge.records import model_name_warnings
        from prefjudge.scoring.formats import SampleFormatWarning
        from prefjudge.scoring.profiles import get_profile
        from prefjudge.scoring.score import prepare_job

        settings, reporter = self.settings, self.reporter
        try:
            tasks, tasks_origin, task_paths, task_sources = load_tasks(settings)
            check_exports(settings, tasks)
            tests = not settings.no_tests and bool(tasks)
            if self.verifier is None:  # the tasks loaded have no tests after all
                self.verifier = early_verifier(settings, tests=tests)
                if self.verifier is not None:
                    self.stack.callback(self.verifier.close)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SampleFormatWarning)
                job = prepare_job(settings.generations, tasks,
                                  skip_invalid=settings.skip_invalid, model=settings.model)
        except InputError as exc:
            raise StageError(
                f"{exc}\nNothing was scored (use --skip-invalid to score the valid lines)."
            ) from exc
        if not job.generations and not job.skipped:
            raise StageError(f"{settings.source}: no generation records (the file is empty)")
        for warning in caught:
            if issubclass(warning.category, SampleFormatWarning):
                reporter.warn(f"warning: {warning.message}")
        reporter.note(f"tasks: {tasks_origin}")
        reporter.note(f"profile: {settings.profile} — {get_profile(settings.profile).summary}")
        for warning in model_name_warnings({gen.model for _, gen in job.generations}):
            reporter.warn(f"warning: {settings.source}: {warning}")
        if job.skipped:
            reporter.warn(f"skipped {len(job.skipped)} invalid input problem(s):")
            for issue in job.skipped:
                reporter.warn(f"  {issue}")
        return _Inputs(tasks, tasks_origin, task_paths, task_sources, job)

    def _start_engine(self) -> None:
        """Connect the engine (when one is set), or report this machine's sandbox."""
        settings, reporter = self.settings, self.reporter
        if settings.engine is not None:
            self.engine = settings.engine.start(tests=self.tests_on, reporter=reporter)
            self.stack.callback(self.engine.close)
            self.isolation, self.isolation_mode = self.engine.sandbox, self.engine.sandbox_mode
        elif self.tests_on:
            from prefjudge.sandbox import isolation_line, isolation_report
            from prefjudge.sandbox.zygote import zygote_default

            report = isolation_report()
            self.isolation_mode = str(report["mode"])
            use_zygote = zygote_default() if settings.zygote is None else settings.zygote
            self.isolation = isolation_line(report, use_zygote)
            if report["isolated"]:
                reporter.note(f"sandbox: {self.isolation}")
            else:
                reporter.warn(f"sandbox: {report['warning'] or self.isolation}")
                for item in report["not_enforced"]:
                    reporter.warn(f"  not enforced: {item}")

    def journal(self) -> Journal[ScoredSample]:
        """The output's journal, bound to the inputs and the settings that change records."""
        from prefjudge.journal import Journal
        from prefjudge.records import ScoredSample
        from prefjudge.scoring.verify import ruff_version

        settings, inputs, job = self.settings, self.inputs, self.inputs.job
        return Journal(
            settings.output,
            ScoredSample,
            lambda rec: str(rec.meta.get("key")),
            stage="score",
            inputs={"generations": settings.generations, "tasks": inputs.paths},
            settings={
                "tests": self.tests_on,
                "timeout_s": settings.test_timeout,
                "memory_mb": settings.memory_mb,
                "ruff_version": ruff_version(),
                "sandbox": self.isolation_mode,
                "harness": harness_digest(),
                "profile": settings.profile,
                "model": settings.model,
                **({"tasks_sources": inputs.sources} if inputs.sources else {}),
            },
            force_new=settings.force_new,
            changing_inputs=("generations",),
            revise=lambda done: regenerated_records(done, job, settings.generations),
        )

    def score_into(self, journal: Journal[ScoredSample]) -> tuple[list[tuple], int, int]:
        """Score what the journal lacks, writing each batch as it comes.

        Returns:
            The summary's rows in the output's order (the records it held, then the new
            ones), how many records were scored now, and how many it held already.
        """
        from prefjudge.scoring.rows import sample_row
        from prefjudge.scoring.score import has_tests

        settings, reporter, job = self.settings, self.reporter, self.inputs.job
        done = set(journal.done)
        todo = sum(key not in done for key in job.keys)
        resumed = len(job.keys) - todo
        if journal.resumed:
            reporter.note(f"resuming {settings.output}: {resumed} already scored, {todo} to go")
        with_tests = 0 if settings.no_tests else sum(
            1 for key, (_, gen) in zip(job.keys, job.generations, strict=True)
            if key not in done and has_tests(gen, self.inputs.tasks))
        scored: list[tuple[str, tuple]] = []
        tests_progress = (reporter.progress("unit tests  ", with_tests) if with_tests
                          else nullcontext(lambda _n: None))
        with reporter.progress("instructions", todo) as verify_bar, tests_progress as tests_bar:
            bars = {"verify": verify_bar, "tests": tests_bar}
            try:
                for batch in self._batches(done, lambda phase, n: bars[phase](n)):
                    # Written, then let go: the summary needs only a small row per record,
                    # so memory does not grow by a whole record per generation.
                    journal.write_lines([(key, line) for key, line, _ in batch])
                    scored += [(key, row) for key, _, row in batch]
            except StageError as exc:  # only an engine raises it
                raise StageError(
                    f"{exc}\n{len(scored)} record(s) scored in this run are in "
                    f"{settings.output}; rerun the command to resume."
                ) from exc
        wanted = set(job.keys)
        rows = [sample_row(rec) for rec in journal.done.values() if rec.meta.get("key") in wanted]
        rows += [row for key, row in scored if key in wanted]
        return rows, len(scored), resumed

    def _batches(
        self, done: set[str], advance: Callable[[str, int], None]
    ) -> Iterator[list[tuple[str, str, tuple]]]:
        """``(key, line, summary row)`` of each record scored, a finished batch at a time."""
        from prefjudge.journal import record_line
        from prefjudge.sandbox import SandboxLimits
        from prefjudge.scoring.rows import sample_row
        from prefjudge.scoring.score import scored_batches

        settings, job = self.settings, self.inputs.job
        limits = SandboxLimits(timeout_s=settings.test_timeout, memory_mb=settings.memory_mb)
        if self.engine is None:  # lines and rows straight from scoring: no record is built
            for scored in scored_batches(
                job, done=done, workers=self.workers, limits=limits,
                run_tests=not settings.no_tests, isolation=self.isolation,
                profile=settings.profile, separate_process=self.verifier,
                zygote=settings.zygote, preload=settings.preload, on_progress=advance,
                prepare_lines=True,
            ):
                yield [(item.key, item.line(), item.row()) for item in scored]
            return
        work = EngineWork(job, self.inputs.tasks if self.tests_on else {}, done=done,
                          limits=limits, profile=settings.profile, zygote=settings.zygote,
                          preload=settings.preload, on_progress=advance,
                          on_event=self.reporter.warn)
        for batch in self.engine.batches(work):
            yield [(str(rec.meta.get("key")), record_line(rec), sample_row(rec))
                   for rec in batch]

    def summarise(self, rows: list[tuple], new: int, resumed: int) -> ScoreOutcome:
        """Report the per-model table, write the summary files and the exports."""
        from prefjudge.io import summary_path
        from prefjudge.scoring.verify import ruff_version

        settings, reporter, inputs = self.settings, self.reporter, self.inputs
        prefix = settings.summary_prefix or summary_path(settings.output)
        written = write_summary(rows, SummaryFacts(
            title=f"prefjudge score — {Path(settings.source).name} — profile {settings.profile}",
            prefix=str(prefix),
            settings={
                "generations": settings.source, "tasks": inputs.origin,
                "seed": settings.ci_seed, "bootstrap": settings.bootstrap,
                "profile": settings.profile, "ruff_version": ruff_version(),
                "sandbox": self.isolation,
                "engine": self.engine.summary() if self.engine else {"name": "local"},
            },
            profile=settings.profile, bootstrap=settings.bootstrap, ci_seed=settings.ci_seed,
            tests=self.tests_on, no_tests=settings.no_tests,
        ), reporter)
        reporter.note(f"wrote {settings.output} ({len(rows)} records), {prefix}.csv/.json/.png")
        if written.check_errors or written.test_errors:
            reporter.warn(
                "some checks or test runs ended in error: they are counted apart, "
                "not as failures — see the 'reason'/'detail' fields."
            )
        exported = self._export() if settings.exports else []
        return ScoreOutcome(
            output=settings.output, records=len(rows), scored=new, resumed=resumed,
            skipped=len(inputs.job.skipped), tests=self.tests_on, tasks=inputs.origin,
            sandbox=self.isolation, summary_csv=written.csv, summary_json=written.json,
            summary_plot=written.plot, table=written.table,
            check_errors=written.check_errors, test_errors=written.test_errors,
            exported=tuple(exported), summary=written.document,
        )

    def _export(self) -> list[Path]:
        """Write the ``--export`` files (the exporters imported only when asked for)."""
        from prefjudge.scoring.export import ExportSettings, export_scores

        settings, inputs = self.settings, self.inputs
        return [path for target in settings.exports for path in export_scores(
            ExportSettings(settings.output, target, inputs.tasks, inputs.paths,
                           generations=settings.source), self.reporter).files]


def early_verifier(settings: ScoreSettings, *, tests: bool | None = None) -> VerifyProcess | None:
    """A verification process, started now, for a large input scored without unit tests.

    Its start-up then overlaps the rest of the run's start: its imports, reading and
    validating the input (the process reads ahead meanwhile). Smaller inputs and stdin
    are left to :func:`~prefjudge.scoring.score.score_batches`, which starts one itself
    when the run has more than one chunk. The caller closes it when the run ends.

    Args:
        settings: The run's settings.
        tests: Whether the run has unit tests; None when its tasks are not loaded yet:
            then only a run that cannot have any (``no_tests``, or no task source: no
            ``tasks`` and no ``tasks.jsonl`` beside the generations) gets one.

    Returns:
        The started process, or None when the run should not have one (yet).
    """
    if tests is None:
        tests = not settings.no_tests and bool(
            settings.tasks or (settings.generations.parent / "tasks.jsonl").exists())
    if tests or settings.stdin:
        return None
    try:
        if os.stat(settings.generations).st_size < EARLY_VERIFIER_BYTES:
            return None
    except OSError:  # reading it reports the problem
        return None
    return VerifyProcess(workers=settings.workers or os.cpu_count(), profile=settings.profile,
                         read_ahead=settings.generations)


def harness_digest() -> str:
    """The sandbox harness's digest, bound in the output's journal.

    :func:`prefjudge.sandbox.harness_digest`, imported when a journal is made (the tests
    replace this name to pose as another harness).
    """
    from prefjudge.sandbox import harness_digest as digest

    return digest()


__all__ = [
    "EARLY_VERIFIER_BYTES",
    "EngineRun",
    "EngineWork",
    "ScoreOutcome",
    "ScoreSettings",
    "ScoreUsageError",
    "ScoringEngine",
    "SummaryFacts",
    "early_verifier",
    "frame_table",
    "load_summary_meanwhile",
    "load_tasks",
    "regenerated_records",
    "score_file",
    "summary_table",
    "unrated_notes",
    "write_summary",
]
