"""The ``judge`` use case: judge pairs into a verdict file (:func:`judge_file`).

:func:`judge_file` is what ``prefjudge judge`` does (and what ``prefjudge run`` calls for
its judge stages): read the pairs, bind the verdict journal, judge what is left, write the
agreement summary when the pairs carry human labels. :func:`prepare_judge_file` reads and
checks the inputs first, before any model is opened.

What the use cases share (the verdict journal, planning, judging with progress) is
:mod:`.journaled`; the ``pair`` use case is :mod:`.pair_run`. Both are re-exported here,
where their names were first published.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefjudge.backends import Backend
from prefjudge.io import InputError, summary_path, write_json
from prefjudge.judge.common import JudgeSettings
from prefjudge.judge.journaled import (
    EngineJudging,
    Judged,
    JudgingEngine,
    JudgingPlan,
    check_evidence_coverage,
    judge_plan,
    judge_to_file,
    model_for,
    plan_judging,
    run_judging,
    uses_evidence_facts,
    verdict_journal,
)
from prefjudge.judge.pair_run import PairSettings, PreparedPair, find_task, judge_pair, prepare_pair
from prefjudge.judge.pairs.inputs import read_pair_inputs
from prefjudge.judge.settings import (
    JudgeMethodName,
    JudgeOptionError,
    JudgeOptions,
    PairFormatName,
    evidence_binding,
    judge_settings,
    open_guidance,
)
from prefjudge.records import Pair, Verdict
from prefjudge.reporting import Reporter, StageError

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples of the agreement intervals: :data:`prefjudge.stats.DEFAULT_RESAMPLES`,
copied so that judging imports no numpy (``tests/judge/test_h2_startup.py`` holds the two
equal)."""

__all__ = [  # the use case's own names, and those of the modules split from this one
    "DEFAULT_RESAMPLES",
    "PERF_INPUTS",
    "AllPairsWaiting",
    "EngineJudging",
    "JudgeFileSettings",
    "JudgeOutcome",
    "Judged",
    "JudgingEngine",
    "JudgingPlan",
    "PairSettings",
    "PreparedJudging",
    "PreparedPair",
    "find_task",
    "judge_file",
    "judge_pair",
    "judge_plan",
    "judge_to_file",
    "model_for",
    "plan_judging",
    "prepare_judge_file",
    "prepare_pair",
    "run_judging",
    "uses_evidence_facts",
    "verdict_journal",
    "with_perf_inputs",
    "with_scores",
]


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
        perf_inputs: ``evidence``/``hybrid``: where the efficiency fact's inputs come from,
            ``scaled`` or ``model`` (a generator the judge model writes; ``--perf-inputs``).
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
    perf_inputs: str = "scaled"


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
        from prefjudge.judge.pairs.evidence import attach_evidence  # scored records: only here

        try:
            pairs, notes = attach_evidence(pairs, settings.scored_a, settings.scored_b)
        except InputError as exc:
            raise StageError(str(exc)) from exc
        for note in notes:
            reporter.note(f"note: {note}")
        options = replace(settings, evidence=True)
    if settings.limit:
        pairs = pairs[: settings.limit]
    judge = with_perf_inputs(with_scores(
        judge_settings(options, settings.method, open_guidance(settings.guidance)),
        settings.scores, settings.tests,
    ), settings.perf_inputs)
    if not pairs and read.waiting:
        raise AllPairsWaiting(
            f"{', '.join(settings.inputs)}: no pairs to judge: all {len(read.waiting)} wait on "
            "failed generations (make them again with --retry-errors)",
            len(read.waiting),
        )
    if not pairs:
        raise StageError(f"{', '.join(settings.inputs)}: no pairs to judge")
    check_evidence_coverage(pairs, judge, reporter, allow_undecided=settings.allow_undecided)
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
    # the facts' modules (the sandbox, the verifier): only when score files are given
    from prefjudge.judge.facts.from_scores import ScoreFacts
    from prefjudge.judge.facts.judge import EvidenceSettings

    if not isinstance(judge, EvidenceSettings):
        raise JudgeOptionError("--scores applies to --method evidence or hybrid", "--scores")
    try:
        return replace(judge, scores=ScoreFacts.load(scores, tests))
    except InputError as exc:
        raise StageError(str(exc)) from exc
    except OSError as exc:
        raise StageError(f"cannot read --scores: {exc}") from exc


PERF_INPUTS = ("scaled", "model")
"""Where the efficiency fact's performance-exercising inputs may come from."""


def with_perf_inputs(judge: JudgeSettings, perf_inputs: str) -> JudgeSettings:
    """``judge`` with the source of its efficiency inputs (:attr:`JudgeFileSettings.perf_inputs`).

    Raises:
        JudgeOptionError: An unknown source, or ``model`` for a method that finds no facts.
    """
    if perf_inputs not in PERF_INPUTS:
        raise JudgeOptionError(f"unknown --perf-inputs {perf_inputs!r}; choose from "
                               f"{', '.join(PERF_INPUTS)}", "--perf-inputs")
    if perf_inputs == "scaled":
        return judge
    from prefjudge.judge.facts.judge import EvidenceSettings

    if not isinstance(judge, EvidenceSettings):
        raise JudgeOptionError("--perf-inputs applies to --method evidence or hybrid",
                               "--perf-inputs")
    return replace(judge, perf_inputs=perf_inputs)


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

