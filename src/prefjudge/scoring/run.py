"""``prefjudge score`` as a use case: a generations file into scored records and a summary.

:func:`score_file` reads the generations and their tasks, verifies the instructions and
runs the unit tests (on this machine or on a Ray cluster), writes one scored record per
generation to a resumable journal, and then the per-model summary (``.csv``, ``.json``,
``.png``). It never prints: notes, warnings, progress bars and tables go to a
:class:`~prefjudge.reporting.Reporter`. The ``score`` command and ``prefjudge run`` both
call it::

    outcome = score_file(ScoreSettings(Path("gens.jsonl"), output=Path("scores.jsonl")),
                         SilentReporter())
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from prefjudge.io import InputError, summary_path, write_json
from prefjudge.journal import Journal, JournalError, open_journal, record_line
from prefjudge.records import ScoredSample, Task, model_name_warnings
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.sandbox import SandboxLimits, harness_digest, isolation_line, isolation_report
from prefjudge.sandbox.zygote import zygote_default
from prefjudge.scoring.export import ExportSettings, ExportTarget, check_fits, export_scores
from prefjudge.scoring.formats import SampleFormatWarning
from prefjudge.scoring.profiles import get_profile
from prefjudge.scoring.rows import sample_row
from prefjudge.scoring.score import ScoreJob, has_tests, prepare_job, scored_batches
from prefjudge.scoring.sources import SourceError, UnknownSourceError
from prefjudge.scoring.task_sources import RepeatedTaskError, load_task_sources
from prefjudge.scoring.verify import ruff_version
from prefjudge.scoring.verify.process import VerifyProcess
from prefjudge.stats import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    import pandas as pd

STDIN = "-"
"""How messages and the summary name generations read from stdin."""

EARLY_VERIFIER_BYTES = 1_000_000
"""Inputs from this size (about 1,000 generations) are verified in a second process started
before the file is read (see :mod:`prefjudge.scoring.verify.process`)."""


@dataclass(frozen=True)
class EngineWork:
    """What an engine scores in one run (the argument of :meth:`EngineRun.batches`).

    Attributes:
        job: The validated generations and their keys.
        tasks: Tasks by id (empty: no unit tests).
        done: Keys the output already holds.
        limits: Each test run's sandbox limits.
        profile: Verification profile.
        zygote: Fork test runs from a zygote (None: the default).
        preload: Modules the zygotes import besides the tasks' own.
        on_progress: Called with the phase (``verify``, ``tests``) and units done.
        on_event: Called with a line about the engine (a node lost, a shard again).
    """

    job: ScoreJob
    tasks: Mapping[str, Task]
    done: set[str]
    limits: SandboxLimits
    profile: str
    zygote: bool | None
    preload: Sequence[str]
    on_progress: Callable[[str, int], None]
    on_event: Callable[[str], None]


class EngineRun(Protocol):
    """A scoring engine connected for one run (what :meth:`ScoringEngine.start` returns).

    Attributes:
        sandbox: How the unit tests are isolated, for the summary ("" without tests).
        sandbox_mode: The isolation mode bound in the output's journal ("" without tests).
    """

    sandbox: str
    sandbox_mode: str

    def batches(self, work: EngineWork) -> Iterable[list[ScoredSample]]:
        """Score the work's generations whose keys are not done, in finished batches.

        Args:
            work: What to score, and where progress and events go.

        Returns:
            Scored records, a batch at a time, as they finish.

        Raises:
            StageError: When the engine cannot go on (records already written are kept).
        """
        ...

    def summary(self) -> dict[str, object]:
        """Where the scoring ran, for the summary file's ``engine``."""
        ...

    def close(self) -> None:
        """Let the engine's resources go (disconnect)."""
        ...


class ScoringEngine(Protocol):
    """Where a run's records are scored when not on this machine.

    ``prefjudge.scale.score_engine.RayEngine`` (``--engine ray``) is one; scoring knows
    nothing of Ray (the engine sits above the stages).
    """

    def start(self, *, tests: bool, reporter: Reporter) -> EngineRun:
        """Connect for one run and report where the records will be scored.

        Args:
            tests: Whether the run has unit tests to run.
            reporter: Where the engine reports (its nodes, refused ones).

        Returns:
            The connected engine; the run closes it.

        Raises:
            StageError: When nothing can be scored there.
        """
        ...


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
    bootstrap: int = DEFAULT_RESAMPLES
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


def score_file(settings: ScoreSettings, reporter: Reporter) -> ScoreOutcome:
    """Score the generations into ``settings.output`` and write the per-model summary.

    Reports where the tasks came from, the profile, the sandbox (or the Ray nodes), invalid
    lines skipped, resuming, progress over instructions and unit tests, the per-model table
    (a result) and the files written.

    Args:
        settings: What to score, where, and how.
        reporter: Where notes, warnings, progress and tables go.

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
        return _score(settings, reporter, stack)
    finally:
        stack.close()


def _score(settings: ScoreSettings, reporter: Reporter, stack: ExitStack) -> ScoreOutcome:
    """:func:`score_file`, with ``stack`` closing the verifier and the Ray connection."""
    run = _Run(settings, reporter, stack)
    journal = run.journal()
    with open_journal(journal, reporter):
        if journal.revised:
            reporter.note(f"{settings.generations} has failed generations made again: their "
                          f"{journal.revised} record(s) are scored again")
        loading = _load_summary_meanwhile()
        rows, new, resumed = run.score_into(journal)
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

    def __init__(self, settings: ScoreSettings, reporter: Reporter, stack: ExitStack) -> None:
        self.settings, self.reporter, self.stack = settings, reporter, stack
        self.workers = settings.workers or os.cpu_count()
        self.inputs = self._read_inputs()
        self.tests_on = not settings.no_tests and bool(self.inputs.tasks)
        self.engine: EngineRun | None = None
        self.isolation = self.isolation_mode = ""
        self._start_engine()

    def _read_inputs(self) -> _Inputs:
        """Load the tasks, then read and check the generations (reporting what was wrong)."""
        settings, reporter = self.settings, self.reporter
        try:
            tasks, tasks_origin, task_paths, task_sources = load_tasks(settings)
            _check_exports(settings, tasks)
            tests = not settings.no_tests and bool(tasks)
            self.verifier = _early_verifier(settings, tests, self.workers)
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
        settings, job = self.settings, self.inputs.job
        limits = SandboxLimits(timeout_s=settings.test_timeout, memory_mb=settings.memory_mb)
        if self.engine is None:  # lines and rows straight from scoring: no record is built
            for scored in scored_batches(
                job, done=done, workers=self.workers, limits=limits,
                run_tests=not settings.no_tests, isolation=self.isolation,
                profile=settings.profile, separate_process=self.verifier,
                zygote=settings.zygote, preload=settings.preload, on_progress=advance,
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
        settings, reporter, inputs = self.settings, self.reporter, self.inputs
        from prefjudge.plots.score import save_summary_plot
        from prefjudge.scoring.metrics import model_summary, rows_frame

        summary = model_summary(rows_frame(rows), n_resamples=settings.bootstrap,
                                seed=settings.ci_seed)
        table = frame_table(
            summary_table(summary),
            title=f"prefjudge score — {Path(settings.source).name} — profile {settings.profile}",
        )
        reporter.table(table)
        for note in unrated_notes(summary, tests=self.tests_on, no_tests=settings.no_tests):
            reporter.note(note)
        prefix = settings.summary_prefix or summary_path(settings.output)
        csv, summary_json, plot = (Path(f"{prefix}{ext}") for ext in (".csv", ".json", ".png"))
        summary.assign(profile=settings.profile).to_csv(csv, index=False)
        write_json(summary_json, self._summary_json(summary))
        save_summary_plot(summary, plot)
        reporter.note(f"wrote {settings.output} ({len(rows)} records), {prefix}.csv/.json/.png")
        check_errors = int(summary["check_errors"].sum())
        test_errors = int(summary["func_error"].sum())
        if check_errors or test_errors:
            reporter.warn(
                "some checks or test runs ended in error: they are counted apart, "
                "not as failures — see the 'reason'/'detail' fields."
            )
        exported = [path for target in settings.exports for path in export_scores(
            ExportSettings(settings.output, target, inputs.tasks, inputs.paths,
                           generations=settings.source), reporter).files]
        return ScoreOutcome(
            output=settings.output, records=len(rows), scored=new, resumed=resumed,
            skipped=len(inputs.job.skipped), tests=self.tests_on, tasks=inputs.origin,
            sandbox=self.isolation, summary_csv=csv, summary_json=summary_json,
            summary_plot=plot, table=table, check_errors=check_errors,
            test_errors=test_errors, exported=tuple(exported),
        )

    def _summary_json(self, summary: pd.DataFrame) -> dict[str, object]:
        """The summary file's object: the run's settings and the per-model figures."""
        settings = self.settings
        return {
            "generations": settings.source,
            "tasks": self.inputs.origin,
            "seed": settings.ci_seed,
            "bootstrap": settings.bootstrap,
            "profile": settings.profile,
            "ruff_version": ruff_version(),
            "sandbox": self.isolation,
            "engine": self.engine.summary() if self.engine else {"name": "local"},
            "models": summary.to_dict(orient="records"),
        }


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


def _check_exports(settings: ScoreSettings, tasks: Mapping[str, Task]) -> None:
    """Refuse, before anything is scored, an export the run cannot write.

    Raises:
        ScoreUsageError: With ``no_tests`` (an export needs the tests' verdicts).
        ExportError: When a format fits none of the tasks.
    """
    if settings.exports and settings.no_tests:
        raise ScoreUsageError("--export needs the unit tests' verdicts: drop --no-tests",
                              param_hint="--export")
    for target in settings.exports:
        check_fits(target.format, tasks)


def load_tasks(settings: ScoreSettings) -> tuple[dict[str, Task], str, list[Path], list[dict]]:
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


def _early_verifier(
    settings: ScoreSettings, tests: bool, workers: int | None
) -> VerifyProcess | None:
    """A verification process, started now, for a large input scored without unit tests.

    Its start-up then overlaps reading and validating the input. Smaller inputs and stdin
    are left to :func:`~prefjudge.scoring.score.score_batches`, which starts one itself
    when the run has more than one chunk. The caller closes it when the run ends.
    """
    if tests or settings.stdin:
        return None
    try:
        if os.stat(settings.generations).st_size < EARLY_VERIFIER_BYTES:
            return None
    except OSError:  # reading it reports the problem
        return None
    return VerifyProcess(workers=workers, profile=settings.profile,
                         read_ahead=settings.generations)


def _load_summary_meanwhile() -> threading.Thread:
    """Import what the summary needs (pandas, matplotlib: a second of CPU) while scoring runs.

    Scoring mostly waits on Ruff, the verification process or unit tests; the summary and
    its plot are the last step, and without this their imports would come after
    everything else. Not a daemon thread: an import is never cut off at exit. A failed
    import is left to the summary, which imports again and reports it.
    """

    def load() -> None:
        with contextlib.suppress(Exception):
            import prefjudge.plots.score
            import prefjudge.scoring.metrics

            prefjudge.plots.pyplot()

    thread = threading.Thread(target=load, name="prefjudge-load-summary")
    thread.start()
    return thread


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Format the model summary for showing: values with their 95 % CIs.

    EvalPlus's base and plus pass@1 are shown only when some model has HumanEval+/MBPP+
    samples, and pass@10 and pass@100 only when some model has that many judged samples
    for every task (a model without them shows "—").

    Args:
        summary: :func:`prefjudge.scoring.metrics.model_summary`'s table.

    Returns:
        One row per model: n, IF (instruction and task level) and pass@1 with their
        intervals (then base and plus pass@1, pass@10, pass@100 where they apply), and the
        counts of check errors, timeouts and test errors.
    """
    import pandas as pd

    from prefjudge.scoring.metrics import PASS_KS

    def fmt(row: pd.Series, name: str) -> str:
        value = row[name]
        if pd.isna(value):
            return "—"
        return f"{value:.3f} [{row[f'{name}_lower']:.3f}, {row[f'{name}_upper']:.3f}]"

    optional = [("base_pass1", "base pass@1 [95% CI]"), ("plus_pass1", "plus pass@1 [95% CI]")]
    optional += [(f"pass{k}", f"pass@{k} [95% CI]") for k in PASS_KS if k > 1]
    shown = [(name, title) for name, title in optional
             if name in summary.columns and summary[name].notna().any()]
    rows = []
    for _, row in summary.iterrows():
        rows.append(
            {
                "model": row["model"],
                "n": int(row["n"]),
                "IF instr. [95% CI]": fmt(row, "if_instruction"),
                "IF task [95% CI]": fmt(row, "if_task"),
                "pass@1 [95% CI]": fmt(row, "pass1"),
                **{title: fmt(row, name) for name, title in shown},
                "check err": int(row["check_errors"]),
                "timeouts": int(row["func_timeout"]),
                "test err": int(row["func_error"]),
                **({"gen err": _count(row.get("gen_errors"))}
                   if "gen_errors" in summary.columns else {}),
            }
        )
    return pd.DataFrame(rows)


def _count(value: object) -> int:
    """A count of the summary as an int (0 where it is missing or NaN)."""
    import pandas as pd

    return 0 if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def unrated_notes(summary: pd.DataFrame, *, tests: bool, no_tests: bool = False) -> list[str]:
    """Say why the score table shows "—" for IF or pass@1 (one note per reason).

    A rate that cannot be computed is not a low one: each note names the figure, the
    models it concerns (all of them when none are named) and why, e.g.
    ``pass@1 —: no tests for these tasks: pass --tasks (the benchmark's task file)``.

    Args:
        summary: :func:`prefjudge.scoring.metrics.model_summary`'s table.
        tests: Whether the unit tests were run (there were tasks with tests, and no
            ``--no-tests``).
        no_tests: Whether ``--no-tests`` turned them off.

    Returns:
        The notes, in the order of the first model each concerns (empty when every figure
        shown has a value).
    """
    by_reason: dict[tuple[str, str], list[str]] = {}
    for _, row in summary.iterrows():
        for figure_reason in _unrated_reasons(row, tests=tests, no_tests=no_tests):
            by_reason.setdefault(figure_reason, []).append(str(row["model"]))
    notes = []
    for (figure, reason), named in by_reason.items():
        who = "" if len(named) == len(summary) else f" for {', '.join(named)}"
        notes.append(f"{figure} —{who}: {reason}")
    return notes


def _unrated_reasons(row: pd.Series, *, tests: bool, no_tests: bool) -> list[tuple[str, str]]:
    """``(figure, why)`` for each of IF and pass@1 that one model's row has no value for."""
    import pandas as pd

    n, gen_errors = _count(row.get("n")), _count(row.get("gen_errors"))
    if n == 0:
        failed = f": every generation failed ({gen_errors}, counted as 'gen err')" \
            if gen_errors else ""
        return [("IF and pass@1", f"no answers to rate{failed}")]
    reasons = []
    if pd.isna(row.get("if_instruction")):
        check_errors = _count(row.get("check_errors"))
        reasons.append(("IF", (
            f"no instruction check gave a verdict ({check_errors} ended in error, counted "
            "as 'check err')") if check_errors else
            "no sample had instructions to follow (IF rates the instructions a "
            "generation was asked to follow)"))
    if pd.isna(row.get("pass1")):
        reasons.append(("pass@1", _untested_reason(row, tests=tests, no_tests=no_tests)))
    return reasons


def _untested_reason(row: pd.Series, *, tests: bool, no_tests: bool) -> str:
    """Why a model's row has no pass@1: no tests run, none for its tasks, or only errors."""
    if no_tests:
        return "unit tests were not run (--no-tests)"
    if not tests:
        return "no tests for these tasks: pass --tasks (the benchmark's task file)"
    errors = _count(row.get("func_error"))
    if errors:
        return (f"no test run ended in a verdict ({errors} ended in error, counted as "
                "'test err', not as failures)")
    return "none of these tasks has tests in the task file(s) given with --tasks"


def frame_table(frame: pd.DataFrame, *, title: str = "", result: bool = True) -> TextTable:
    """A DataFrame as a plain-text table: floats with three decimals, numbers aligned right.

    Args:
        frame: Rows to show.
        title: Table title.
        result: Whether the table is a result (stdout) or a note on the run.

    Returns:
        The table, as ``prefjudge.cli.display.print_frame`` would print the frame.
    """
    from pandas.api.types import is_numeric_dtype

    columns = [str(column) for column in frame.columns]
    right = frozenset(str(column) for column in frame.columns if is_numeric_dtype(frame[column]))
    rows = [
        [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        for row in frame.itertuples(index=False)
    ]
    return TextTable(title, columns, rows, right=right, result=result)


__all__ = [
    "EARLY_VERIFIER_BYTES",
    "EngineRun",
    "EngineWork",
    "ScoreOutcome",
    "ScoreSettings",
    "ScoreUsageError",
    "ScoringEngine",
    "frame_table",
    "load_tasks",
    "score_file",
    "summary_table",
    "unrated_notes",
]
