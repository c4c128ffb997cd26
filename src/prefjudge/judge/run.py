"""Judging into a verdict file: the ``judge`` and ``pair`` use cases and what they share.

:func:`judge_file` is what ``prefjudge judge`` does (and what ``prefjudge run`` calls for
its judge stages): read the pairs, bind the verdict journal, judge what is left, write the
agreement summary when the pairs carry human labels. :func:`judge_pair` judges one pair
(``prefjudge pair``). Under them::

    journal = verdict_journal(out, settings, backend, stage="judge", inputs={"pairs": path})
    with journal:
        plan = plan_judging(pairs, journal, retry_errors=False)
        verdicts = judge_plan(plan, journal, settings, backend, chunk_size=32)

or, with a reporter's notes and progress bars, :func:`judge_to_file` and
:func:`run_judging`. None of them prints: notes, warnings and progress go to a
:class:`~prefjudge.reporting.Reporter`, and a failure a person must act on is a
:class:`~prefjudge.reporting.StageError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from prefjudge.backends import Backend, BackendError, NoModel, Result
from prefjudge.io import InputError, summary_path, write_json
from prefjudge.journal import Journal, JournalError, content_digest, model_settings, open_journal
from prefjudge.judge import JudgeSettings, judge_pairs, method_traits
from prefjudge.judge.facts.coverage import check_coverage
from prefjudge.judge.facts.from_scores import ScoreFacts
from prefjudge.judge.facts.judge import EvidenceSettings
from prefjudge.judge.pairs import attach_evidence, read_pair_inputs
from prefjudge.judge.prompts import TemplateError
from prefjudge.judge.settings import (
    JudgeMethodName,
    JudgeOptionError,
    JudgeOptions,
    PairFormatName,
    evidence_binding,
    judge_settings,
    open_guidance,
)
from prefjudge.paths import data_dir
from prefjudge.records import Pair, Task, Verdict
from prefjudge.reporting import Reporter, StageError
from prefjudge.stats import DEFAULT_RESAMPLES


class EngineJudging(Protocol):
    """A started judging engine: finds an evidence method's facts elsewhere (a Ray cluster)."""

    def judge_pairs(
        self,
        pairs: Sequence[Pair],
        backend: Backend,
        settings: JudgeSettings,
        *,
        chunk_size: int,
        on_result: Callable[[Result], None] | None = None,
    ) -> Iterator[Verdict]:
        """Judge pairs as :func:`prefjudge.judge.judge_pairs` does (in any order)."""
        ...

    def close(self) -> None:
        """Let the engine go."""
        ...


class JudgingEngine(Protocol):
    """Where an evidence method's facts are found (``--engine ray``; None: this machine).

    :class:`prefjudge.scale.judge_engine.RayJudgeEngine` is one. Verdicts equal a local
    run's, so the journal does not bind the engine: a run may switch engines and resume.
    """

    def start(self, *, tests: bool, reporter: Reporter) -> EngineJudging:
        """Start for one judging run (``tests``: whether the pairs' tests run)."""
        ...


def uses_evidence_facts(method: str, fallback: str = "criteralign") -> bool:
    """Whether ``method`` finds evidence facts (``evidence``, ``hybrid``): what an engine runs."""
    return method_traits(method, fallback).needs_tests


def verdict_journal(
    out: str | Path,
    settings: JudgeSettings,
    backend: Backend,
    *,
    stage: str,
    inputs: dict[str, Any],
    extra: dict[str, Any] | None = None,
    force_new: bool = False,
    regenerated: bool = False,
) -> Journal[Verdict]:
    """The journal of a verdict file, bound to the pairs, the method and the judge model.

    Args:
        out: Verdict JSONL.
        settings: Judge settings (method, criteria bounds, guidance, templates, sampling).
        backend: The judge model (its identity is bound).
        stage: ``judge`` or ``judge-eval``.
        inputs: Input files by role.
        extra: Other settings that change the verdicts (e.g. the pair file's format).
        force_new: Start the file again.
        regenerated: The two generation files (role ``pairs``) may have changed since, in
            failed generations made again only (``run`` checks that in its score stage
            first); pairs that held them were never judged, so every verdict stands.

    Returns:
        The journal (not open yet).
    """
    templates = content_digest(data_dir("rubrics") / "judge")  # a --templates folder overrides
    if settings.templates:  # some of them: both count
        templates += "+" + content_digest(settings.templates)
    bound = {
        "method": settings.method,
        "min_criteria": settings.min_criteria,
        "max_criteria": settings.max_criteria,
        "refine": settings.refine,
        "max_refine": settings.max_refine,
        "evidence": settings.evidence,
        "guidance": settings.guidance.label if settings.guidance else None,
        "templates": templates,
        **model_settings(backend, settings.sampling),
        **(extra or {}),
    }
    if settings.tokenizer:  # bound only when chosen: files written before it still resume
        bound["tokenizer"] = settings.tokenizer
    return Journal(
        out,
        Verdict,
        lambda v: v.pair_id,
        changing_inputs=("pairs",) if regenerated else (),
        stage=stage,
        inputs=inputs,
        settings=bound,
        force_new=force_new,
    )


@dataclass
class JudgingPlan:
    """What a judging run has to do.

    Attributes:
        pairs: Every pair of the run, in input order.
        done: Verdicts already in the journal, by pair id (kept as they are).
        todo: Pairs to judge now.
        retry: Ids of the pairs judged again because their earlier verdict was an error.
    """

    pairs: list[Pair]
    done: dict[str, Verdict]
    todo: list[Pair]
    retry: set[str] = field(default_factory=set)


def plan_judging(
    pairs: Sequence[Pair],
    journal: Journal[Verdict] | None,
    *,
    retry_errors: bool = False,
    waiting: Sequence[str] = (),
) -> JudgingPlan:
    """Decide what to judge: every pair without a verdict (and, on request, errored ones).

    Args:
        pairs: The pairs.
        journal: An open verdict journal, or None (nothing is done yet).
        retry_errors: Judge again the pairs whose verdict is an error; their records are
            removed from the journal now (atomically), so no duplicate is ever written.
        waiting: Ids of pairs a side of which is a failed model request: a verdict the
            journal holds for one (made by an older prefjudge) judged no answer, and is
            removed now.

    Returns:
        The plan.
    """
    retry: set[str] = set()
    if journal is not None and waiting:
        journal.discard(set(waiting) & journal.done.keys())
    if journal is not None and retry_errors:
        wanted = {p.pair_id for p in pairs}
        retry = {k for k, v in journal.done.items() if v.status == "error" and k in wanted}
        journal.discard(retry)
    done = dict(journal.done) if journal is not None else {}
    todo = [p for p in pairs if p.pair_id not in done]
    return JudgingPlan(list(pairs), done, todo, retry)


def judge_plan(
    plan: JudgingPlan,
    journal: Journal[Verdict] | None,
    settings: JudgeSettings,
    backend: Backend,
    *,
    chunk_size: int,
    on_result: Callable[[Result], None] | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    engine: EngineJudging | None = None,
) -> list[Verdict]:
    """Judge what the plan says, journaling each verdict as its chunk finishes.

    Pairs judged again (``plan.retry``) are judged inside ``backend.fresh_calls()``: the
    model is asked again instead of the cache answering.

    Args:
        plan: From :func:`plan_judging`.
        journal: The open verdict journal, or None to keep verdicts in memory only.
        settings: Judge settings.
        backend: The judge model.
        chunk_size: Pairs per batch.
        on_result: Called per backend result (progress).
        on_verdict: Called per verdict as it is written.
        engine: A started engine that finds the facts (None: here); its verdicts come as
            its shards finish and are journaled here, the only writer.

    Returns:
        One verdict per pair of the plan, in input order (earlier ones included).

    Raises:
        BackendError: When the backend cannot work at all (verdicts written so far stay).
    """
    judging = judge_pairs if engine is None else engine.judge_pairs
    fresh: dict[str, Verdict] = {}
    batches = [
        ([p for p in plan.todo if p.pair_id not in plan.retry], contextlib.nullcontext()),
        ([p for p in plan.todo if p.pair_id in plan.retry], backend.fresh_calls()),
    ]
    for batch, cache_mode in batches:
        if not batch:
            continue
        with cache_mode:
            for verdict in judging(
                batch, backend, settings, chunk_size=chunk_size, on_result=on_result
            ):
                if journal is not None:
                    journal.write(verdict)
                fresh[verdict.pair_id] = verdict
                if on_verdict is not None:
                    on_verdict(verdict)
    merged = {**plan.done, **fresh}
    return [merged[p.pair_id] for p in plan.pairs if p.pair_id in merged]


@dataclass(frozen=True)
class Judged:
    """What a judging run returns.

    Attributes:
        verdicts: One verdict per pair, in input order (earlier ones included).
        fresh: How many of them this run judged.
    """

    verdicts: list[Verdict]
    fresh: int


def run_judging(
    pairs: Sequence[Pair],
    journal: Journal[Verdict] | None,
    settings: JudgeSettings,
    backend: Backend,
    reporter: Reporter,
    *,
    chunk_size: int,
    retry_errors: bool = False,
    engine: JudgingEngine | None = None,
    waiting: Sequence[str] = (),
) -> Judged:
    """Judge pairs with progress: the resume note, pairs done and requests answered.

    Args:
        pairs: The pairs.
        journal: An open verdict journal, or None to keep verdicts in memory only.
        settings: Judge settings.
        backend: The judge model.
        reporter: Where the resume note and the two progress bars go.
        chunk_size: Pairs per batch.
        retry_errors: Judge again the pairs whose earlier verdict is an error, asking the
            model again (no cached reply is reused for them).
        engine: Where an evidence method's facts are found (None: here); started only
            when there are pairs to judge, and only for a method with evidence facts.
        waiting: Ids of pairs not judged because a side's model call failed
            (:func:`plan_judging`).

    Returns:
        One verdict per pair, in input order (earlier ones included), and how many were
        judged now.

    Raises:
        StageError: When the backend cannot work at all (verdicts written so far are kept),
            a prompt template cannot be used, or the engine cannot start or go on.
    """
    plan = plan_judging(pairs, journal, retry_errors=retry_errors, waiting=waiting)
    if plan.done or plan.retry:
        where = journal.path if journal is not None else ""
        again = f" ({len(plan.retry)} errored ones again)" if plan.retry else ""
        reporter.note(
            f"resuming: {len(pairs) - len(plan.todo)} verdicts already in {where}, "
            f"{len(plan.todo)} to judge{again}"
        )
    method = settings.method
    started = None
    if engine is not None and plan.todo and uses_evidence_facts(method, settings.fallback):
        started = engine.start(tests=bool(settings.tests), reporter=reporter)
    try:
        with (
            reporter.progress(f"{method}: pairs", len(plan.todo)) as pairs_done,
            reporter.progress(f"{method}: requests", None) as requests_done,
        ):
            verdicts = judge_plan(
                plan,
                journal,
                settings,
                backend,
                chunk_size=chunk_size,
                on_result=lambda _result: requests_done(1),
                on_verdict=lambda _verdict: pairs_done(1),
                engine=started,
            )
    except BackendError as exc:
        raise StageError(f"{exc} (verdicts written so far are kept)") from exc
    except TemplateError as exc:
        raise StageError(str(exc)) from exc
    finally:
        if started is not None:
            started.close()
    return Judged(verdicts, len(plan.todo))


def judge_to_file(
    pairs: Sequence[Pair],
    out: Path,
    settings: JudgeSettings,
    backend: Backend,
    reporter: Reporter,
    *,
    stage: str,
    inputs: dict[str, Any],
    extra: dict[str, Any] | None = None,
    force_new: bool = False,
    chunk_size: int,
    retry_errors: bool = False,
    engine: JudgingEngine | None = None,
    waiting: Sequence[str] = (),
    regenerated: bool = False,
) -> Judged:
    """Judge pairs into a verdict file through its journal (see :func:`verdict_journal`).

    Args:
        pairs: The pairs.
        out: The verdict JSONL (appended; a rerun resumes).
        settings: Judge settings.
        backend: The judge model (its identity is bound).
        reporter: Where notes and progress go.
        stage: ``judge`` or ``judge-eval``.
        inputs: Input files by role (hashed by the journal).
        extra: Other settings that change the verdicts (e.g. the pair file's format).
        force_new: Start the file again.
        chunk_size: Pairs per batch.
        retry_errors: Judge again the pairs whose verdict is an error.
        engine: Where an evidence method's facts are found (None: here; see
            :func:`run_judging`).
        waiting: Ids of pairs not judged because a side's model call failed.
        regenerated: Generation inputs may have changed in failed generations made again
            (see :func:`verdict_journal`).

    Returns:
        One verdict per pair, in input order (earlier ones included), and how many were
        judged now.

    Raises:
        StageError: When the journal cannot be opened or written, or the backend cannot
            work at all (verdicts written so far are kept).
    """
    journal = verdict_journal(
        out, settings, backend, stage=stage, inputs=inputs, extra=extra, force_new=force_new,
        regenerated=regenerated,
    )
    with open_journal(journal, reporter):
        try:
            return run_judging(
                pairs,
                journal,
                settings,
                backend,
                reporter,
                chunk_size=chunk_size,
                retry_errors=retry_errors,
                engine=engine,
                waiting=waiting,
            )
        except JournalError as exc:
            raise StageError(str(exc)) from exc


def model_for(method: str, fallback: str, backend: Backend | None) -> Backend:
    """The backend a method judges with: ``backend``, or :class:`NoModel` when it asks none.

    A method that asks no model (``evidence``) always judges with :class:`NoModel`, whose
    identity names no model, so its journal binds what decides (the evidence settings)
    whichever backend the caller holds.

    Args:
        method: The judging method.
        fallback: ``hybrid``'s fallback method.
        backend: The caller's open backend, or None.

    Returns:
        The backend to judge with.

    Raises:
        StageError: When the method asks a model and ``backend`` is None.
    """
    if not method_traits(method, fallback).needs_model:
        return NoModel()
    if backend is None:
        raise StageError(f"--method {method} asks a judge model, and none was opened")
    return backend


@dataclass(frozen=True, kw_only=True)
class JudgeFileSettings(JudgeOptions):
    """What ``prefjudge judge`` is asked to do (besides the judging options it inherits).

    Attributes:
        inputs: One pair source (file, dataset folder or hub dataset), or two generation
            files (joined on task id), as the command takes them.
        output: The verdict JSONL (appended; a rerun resumes).
        method: The judging method.
        pairs_format: Format of a pair file (``--pairs-format``).
        tasks: Task sources giving the instructions of two generation files (``--tasks``,
            repeatable: merged by task id, as ``prefjudge score`` merges them).
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.
        scored_a: ``prefjudge score`` output for side A (its evidence; implies
            ``evidence``), with ``scored_b``.
        scored_b: ``prefjudge score`` output for side B.
        limit: Only the first N pairs (None: all).
        skip_invalid: Skip unusable input rows (reported) instead of stopping.
        retry_errors: Judge again pairs whose verdict is an error, asking the model again.
        force_new: Start the verdict file again (the old one is kept as ``.bak``).
        bootstrap: Bootstrap resamples for the agreement intervals (labelled pairs).
        ci_seed: Seed of the bootstrap intervals.
        engine: Where ``evidence``/``hybrid`` find their facts (None: this machine;
            ``--engine ray``: a :class:`~prefjudge.scale.judge_engine.RayJudgeEngine`).
        regenerated: The two generation files may have changed since the verdict file was
            bound, in failed generations made again only (``run`` sets it: its score stage
            refuses any other change first).
        scores: ``evidence``/``hybrid``: ``prefjudge score`` outputs (any models; merged or
            one per model) whose records give the sides' test outcomes and instruction
            checks where they are the judge's own
            (:mod:`prefjudge.judge.facts.from_scores`); the rest is found here. Not bound
            by the verdict journal: the verdicts are those judged without them.
    """

    inputs: tuple[str, ...]
    output: Path
    method: JudgeMethodName = "criteralign"
    pairs_format: PairFormatName = "auto"
    tasks: tuple[str, ...] = ()
    split: str | None = None
    subset: str | None = None
    scored_a: Path | None = None
    scored_b: Path | None = None
    limit: int | None = None
    skip_invalid: bool = False
    retry_errors: bool = False
    force_new: bool = False
    bootstrap: int = DEFAULT_RESAMPLES
    ci_seed: int = 0
    engine: JudgingEngine | None = None
    regenerated: bool = False
    scores: tuple[Path, ...] = ()


class AllPairsWaiting(StageError):
    """Every pair of two generation files waits on a failed generation: nothing to judge yet.

    Attributes:
        waiting: How many pairs wait.
    """

    def __init__(self, message: str, waiting: int) -> None:
        super().__init__(message)
        self.waiting = waiting


@dataclass(frozen=True)
class PreparedJudging:
    """What :func:`prepare_judge_file` read and checked, for :func:`judge_file`.

    Attributes:
        pairs: The pairs to judge (evidence attached, ``limit`` applied).
        judge: The judge settings.
        inputs: Input files by role, for the journal.
        extra: Other settings bound by the journal (format, sources, evidence settings).
        waiting: Ids of the pairs not judged because a side's model call failed.
    """

    pairs: list[Pair]
    judge: JudgeSettings
    inputs: dict[str, Any]
    extra: dict[str, Any]
    waiting: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class JudgeOutcome:
    """What :func:`judge_file` did.

    Attributes:
        output: The verdict file.
        verdicts: Every verdict of the run's pairs, in input order (earlier ones included).
        judged: Verdicts made by this run (the others were already in the file).
        errors: Verdicts whose status is ``error``.
        agreement: :func:`~prefjudge.judge.evaluation.evaluate_verdicts` of the verdicts
            against the pairs' human labels, or None when no pair has one.
        summary: The agreement summary written (``<output>.summary.json``), or None.
        waiting: Pairs not judged because a side's model call failed.
    """

    output: Path
    verdicts: tuple[Verdict, ...]
    judged: int
    errors: int
    agreement: dict[str, Any] | None = None
    summary: Path | None = None
    waiting: int = 0


def prepare_judge_file(settings: JudgeFileSettings, reporter: Reporter) -> PreparedJudging:
    """Read the pairs and check the options of :func:`judge_file`, before any model is opened.

    :func:`judge_file` calls it itself; a command calls it first so that a wrong input
    fails before a model is loaded, and hands the result to :func:`judge_file`.

    Args:
        settings: What to judge.
        reporter: Where notes (pairs joined, rows skipped, evidence missing) go.

    Returns:
        The pairs and settings to judge with.

    Raises:
        JudgeOptionError: On options or arguments given wrongly (the error names them).
        StageError: On inputs that cannot be read, no pairs to judge, or pairs the
            evidence cannot decide (unless ``allow_undecided``).
    """
    if len(settings.inputs) > 2:
        raise JudgeOptionError("give one pair file, or two generation files")
    read = read_pair_inputs(
        settings.inputs,
        settings.tasks,
        settings.pairs_format,
        settings.skip_invalid,
        reporter,
        split=settings.split,
        subset=settings.subset,
    )
    pairs = read.pairs
    if bool(settings.scored_a) != bool(settings.scored_b):
        raise JudgeOptionError("--scored-a and --scored-b go together")
    options: JudgeOptions = settings
    if settings.scored_a and settings.scored_b:
        try:
            pairs, notes = attach_evidence(pairs, settings.scored_a, settings.scored_b)
        except InputError as exc:
            raise StageError(str(exc)) from exc
        for note in notes:
            reporter.note(f"note: {note}")
        options = replace(settings, evidence=True)
    if settings.limit:
        pairs = pairs[: settings.limit]
    judge = with_scores(
        judge_settings(options, settings.method, open_guidance(settings.guidance)),
        settings.scores, settings.tests,
    )
    if not pairs and read.waiting:
        raise AllPairsWaiting(
            f"{', '.join(settings.inputs)}: no pairs to judge: all {len(read.waiting)} wait on "
            "failed generations (make them again with --retry-errors)",
            len(read.waiting),
        )
    if not pairs:
        raise StageError(f"{', '.join(settings.inputs)}: no pairs to judge")
    check_coverage(pairs, judge, reporter, allow_undecided=settings.allow_undecided)
    return PreparedJudging(
        pairs=pairs,
        judge=judge,
        inputs={
            "pairs": read.files.get("pairs", []),
            "tasks": read.files.get("tasks", []),
            "scored_a": None if settings.scored_a is None else str(settings.scored_a),
            "scored_b": None if settings.scored_b is None else str(settings.scored_b),
        },
        extra={
            "format": settings.pairs_format,
            **read.sources,
            **evidence_binding(judge, settings.tests),
        },
        waiting=read.waiting,
    )


def with_scores(
    judge: JudgeSettings, scores: Sequence[Path], tests: Sequence[str]
) -> JudgeSettings:
    """``judge`` with the results of score files to reuse (:attr:`JudgeFileSettings.scores`).

    Args:
        judge: The judge settings.
        scores: ``prefjudge score`` outputs (none: ``judge`` as it is).
        tests: The ``--tests`` sources (a score's tasks must be among them).

    Returns:
        The settings, their :class:`~prefjudge.judge.facts.judge.EvidenceSettings`
        holding the score files' records.

    Raises:
        JudgeOptionError: For a method that finds no facts.
        StageError: When a score file cannot be read.
    """
    if not scores:
        return judge
    if not isinstance(judge, EvidenceSettings):
        raise JudgeOptionError("--scores applies to --method evidence or hybrid", "--scores")
    try:
        return replace(judge, scores=ScoreFacts.load(scores, tests))
    except InputError as exc:
        raise StageError(str(exc)) from exc
    except OSError as exc:
        raise StageError(f"cannot read --scores: {exc}") from exc


def judge_file(
    settings: JudgeFileSettings,
    backend: Backend | None,
    reporter: Reporter,
    *,
    prepared: PreparedJudging | None = None,
) -> JudgeOutcome:
    """Judge pairs into a verdict file: what ``prefjudge judge`` does.

    Reads the pairs (or joins two generation files), binds the verdict journal to the
    inputs, the method and the judge model, judges the pairs not yet in the file (with
    progress through ``reporter``) and, when the pairs carry human labels, writes the
    agreement summary beside the file (``<output>.summary.json``).

    Args:
        settings: What to judge, and how.
        backend: The open judge model (the caller closes it), or None for a method that
            asks none (``evidence``, which always judges with :class:`NoModel`).
        reporter: Where notes, warnings and progress go.
        prepared: What :func:`prepare_judge_file` returned for these settings, when the
            caller read the inputs first; None reads them now.

    Returns:
        The verdicts and what was written.

    Raises:
        JudgeOptionError: On options or arguments given wrongly (the error names them).
        StageError: On inputs that cannot be read, no pairs, a journal that refuses, a
            method that asks a model given none, or a backend that fails (verdicts written
            so far are kept).
    """
    if prepared is None:
        prepared = prepare_judge_file(settings, reporter)
    model = model_for(settings.method, settings.fallback, backend)
    judged = judge_to_file(
        prepared.pairs,
        settings.output,
        prepared.judge,
        model,
        reporter,
        stage="judge",
        inputs=prepared.inputs,
        extra=prepared.extra,
        force_new=settings.force_new,
        chunk_size=settings.chunk_size,
        retry_errors=settings.retry_errors,
        engine=settings.engine,
        waiting=prepared.waiting,
        regenerated=settings.regenerated,
    )
    verdicts = judged.verdicts
    agreement, summary = None, None
    if any(v.label for v in verdicts):
        # pandas, only for labelled pairs: a second of start-up a plain `judge` run skips
        from prefjudge.judge.evaluation import evaluate_verdicts

        agreement = evaluate_verdicts(
            verdicts, n_resamples=settings.bootstrap, seed=settings.ci_seed
        )
        summary = summary_path(settings.output, ".json")
        write_json(summary, agreement)
    return JudgeOutcome(
        output=settings.output,
        verdicts=tuple(verdicts),
        judged=judged.fresh,
        errors=sum(v.status == "error" for v in verdicts),
        agreement=agreement,
        summary=summary,
        waiting=len(prepared.waiting),
    )


@dataclass(frozen=True, kw_only=True)
class PairSettings(JudgeOptions):
    """What ``prefjudge pair`` is asked to judge (besides the judging options it inherits).

    Attributes:
        instruction: The instruction both responses answer (its text).
        response_a: Response A (its text).
        response_b: Response B (its text).
        method: The judging method.
        task_id: ``evidence``/``hybrid``: the task both responses answer (its tests come
            from ``tests``); None: the task of ``tests`` whose prompt the instruction is
            (:func:`find_task`), or ``pair`` without tests.
    """

    instruction: str
    response_a: str
    response_b: str
    method: JudgeMethodName = "criteralign"
    task_id: str | None = None


@dataclass(frozen=True)
class PreparedPair:
    """What :func:`prepare_pair` checked, for :func:`judge_pair`.

    Attributes:
        judge: The judge settings.
        pair: The pair to judge (its task id given, or found from its instruction).
    """

    judge: JudgeSettings
    pair: Pair


def prepare_pair(settings: PairSettings, reporter: Reporter) -> PreparedPair:
    """Check the options of :func:`judge_pair` before any model is opened.

    For a method that runs tests, the pair's task is ``task_id``, else the task of
    ``tests`` whose prompt the instruction is (:func:`find_task`; a note says which).

    Args:
        settings: The pair and how to judge it.
        reporter: Where notes and warnings go.

    Returns:
        The judge settings and the pair, for :func:`judge_pair`.

    Raises:
        JudgeOptionError: On options given wrongly (the error names them), a ``--task-id``
            that is not among the ``--tests`` tasks, or an instruction that names no one
            task of them (the error says to add ``--task-id``).
        StageError: On templates, guidance or tests that cannot be used, or a pair the
            evidence cannot decide (unless ``allow_undecided``).
    """
    judge = judge_settings(settings, settings.method, open_guidance(settings.guidance))
    task_id = settings.task_id
    if judge.tests:
        if task_id is None:
            task_id = find_task(settings.instruction, judge.tests)
            reporter.note(f"task: {task_id} (its prompt is the instruction; --task-id overrides)")
        elif task_id not in judge.tests:
            raise JudgeOptionError(
                f"task {task_id!r} is not among the {len(judge.tests)} tasks of --tests "
                f"(e.g. {_some_ids(judge.tests)})",
                "--task-id",
            )
    pair = Pair(
        pair_id="pair",
        task_id=task_id or "pair",
        instruction=settings.instruction,
        response_a=settings.response_a,
        response_b=settings.response_b,
    )
    check_coverage([pair], judge, reporter, allow_undecided=settings.allow_undecided)
    return PreparedPair(judge, pair)


def _some_ids(ids: Collection[str], n: int = 3) -> str:
    return ", ".join(list(ids)[:n]) + (", ..." if len(ids) > n else "")


def _words(text: str) -> str:
    return " ".join(text.split())


def find_task(instruction: str, tasks: Mapping[str, Task]) -> str:
    """The id of the task whose prompt ``instruction`` is (whitespace aside).

    A task matches when its prompt (or the prompt a completion continues, or the
    instruction-style prompt) equals the instruction, or, failing that, when exactly one
    task's prompt holds the instruction or is held by it (at least 40 characters of it).

    Args:
        instruction: The pair's instruction.
        tasks: The ``--tests`` tasks by id.

    Returns:
        The task id.

    Raises:
        JudgeOptionError: Naming ``--task-id`` when no task, or several, match.
    """
    text = _words(instruction)
    prompts = {
        task_id: {
            _words(p)
            for p in (
                task.prompt,
                *(
                    task.metadata.get(k)
                    for k in ("complete_prompt", "instruct_prompt", "raw_prompt")
                ),
            )
            if isinstance(p, str) and p.strip()
        }
        for task_id, task in tasks.items()
    }
    found = [t for t, texts in prompts.items() if text in texts]
    if not found and len(text) >= 40:
        found = [
            t
            for t, texts in prompts.items()
            if any(text in p or (len(p) >= 40 and p in text) for p in texts)
        ]
    if len(found) == 1:
        return found[0]
    if found:
        raise JudgeOptionError(
            f"the instruction is the prompt of {len(found)} tasks of --tests "
            f"({_some_ids(found)}): name one with --task-id",
            "--task-id",
        )
    raise JudgeOptionError(
        f"the instruction is the prompt of none of the {len(tasks)} tasks of --tests "
        f"(e.g. {_some_ids(tasks)}): name the task both responses answer with --task-id",
        "--task-id",
    )


def judge_pair(
    settings: PairSettings,
    backend: Backend | None,
    reporter: Reporter,
    *,
    prepared: PreparedPair | None = None,
) -> Verdict:
    """Judge one pair of responses: what ``prefjudge pair`` does (nothing is written).

    Args:
        settings: The pair and how to judge it (its ``chunk_size`` is not used).
        backend: The open judge model (the caller closes it), or None for a method that
            asks none (``evidence``, which always judges with :class:`NoModel`).
        reporter: Where notes and progress go.
        prepared: What :func:`prepare_pair` returned for these settings, when the caller
            checked them first; None checks them now.

    Returns:
        The verdict (an error verdict when judging failed; see its ``error``).

    Raises:
        JudgeOptionError: On options given wrongly (the error names them).
        StageError: On templates, guidance or tests that cannot be used, a pair the
            evidence cannot decide (unless ``allow_undecided``), a method that asks a
            model given none, or a backend that cannot work at all.
    """
    if prepared is None:
        prepared = prepare_pair(settings, reporter)
    model = model_for(settings.method, settings.fallback, backend)
    [verdict] = run_judging(
        [prepared.pair], None, prepared.judge, model, reporter, chunk_size=1
    ).verdicts
    return verdict
