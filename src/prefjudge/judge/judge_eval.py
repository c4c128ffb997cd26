"""The ``judge-eval`` use case: judges measured against human labels, method by method.

:func:`evaluate_judges` reads labelled pairs (one source or several splits), keeps the
held-out ones when guidance is given, judges them with each method into its own resumable
verdict file (``verdicts-<method>[-<guidance>].jsonl``) and writes the comparison:
``summary.json`` (agreement with intervals, bias, per split, paired differences),
``summary.csv`` and ``summary.png``. It prints nothing: the command shows the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from prefjudge.backends import Backend, NoModel
from prefjudge.features import tokenizer_for
from prefjudge.io import write_json
from prefjudge.judge import JudgeSettings, method_traits
from prefjudge.judge.bias import bias_diagnostics
from prefjudge.judge.evaluation import compare_methods, evaluate_by_split, evaluate_verdicts
from prefjudge.judge.facts.coverage import check_coverage
from prefjudge.judge.guidance import Guidance
from prefjudge.judge.heldout import (
    GuidanceLeakageError,
    evaluation_summary,
    held_out_pairs,
    paired_differences,
)
from prefjudge.judge.pairs import PairInputs
from prefjudge.judge.run import JudgingEngine, judge_to_file
from prefjudge.judge.settings import (
    JudgeMethodName,
    JudgeOptions,
    PairFormatName,
    evidence_binding,
    judge_settings,
    open_guidance,
)
from prefjudge.judge.splits import (
    first_of_each_split,
    human_reference,
    read_labelled_splits,
    split_criteria,
)
from prefjudge.plots.judge import plot_methods
from prefjudge.records import Pair, Verdict
from prefjudge.reporting import Reporter, StageError
from prefjudge.stats import DEFAULT_RESAMPLES

DEFAULT_METHODS: tuple[JudgeMethodName, ...] = ("monolithic", "pointwise", "criteralign")
"""The methods evaluated when none is named: the three model-based ones."""


@dataclass(frozen=True, kw_only=True)
class JudgeEvalSettings(JudgeOptions):
    """What ``prefjudge judge-eval`` is asked to do (besides the judging options it inherits).

    Attributes:
        sources: Labelled pair sources (files, dataset folders or hub datasets); several
            are evaluated together and reported per split.
        output: The folder for the per-method verdicts, the summary and the plot.
        methods: The methods to evaluate, in order (the first is the baseline of the
            paired differences).
        pairs_format: Format of the pair files (``--pairs-format``).
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.
        held_out: With guidance: evaluate only the pairs not used to build it.
        limit: Only the first N labelled pairs of each source (None: all).
        bootstrap: Bootstrap resamples for the intervals.
        ci_seed: Seed of the bootstrap intervals.
        skip_invalid: Skip unusable input rows (reported) instead of stopping.
        retry_errors: Judge again pairs whose verdict is an error, asking the model again.
        force_new: Start every verdict file again (the old ones are kept as ``.bak``).
        engine: Where ``evidence``/``hybrid`` find their facts (None: this machine;
            ``--engine ray``: a :class:`~prefjudge.scale.judge_engine.RayJudgeEngine`);
            the other methods judge here, on the driver (their work is model calls).
    """

    sources: tuple[str, ...]
    output: Path
    methods: tuple[JudgeMethodName, ...] = DEFAULT_METHODS
    pairs_format: PairFormatName = "auto"
    split: str | None = None
    subset: str | None = None
    held_out: bool = False
    limit: int | None = None
    bootstrap: int = DEFAULT_RESAMPLES
    ci_seed: int = 0
    skip_invalid: bool = False
    retry_errors: bool = False
    force_new: bool = False
    engine: JudgingEngine | None = None


@dataclass(frozen=True)
class PreparedEvaluation:
    """What :func:`prepare_judge_eval` read and checked, for :func:`evaluate_judges`.

    Attributes:
        read: Every labelled source's pairs (all of them, held-out or not), files and
            source identities.
        split_of: Pair id → split name.
        pairs: The labelled pairs to judge (held out and limited).
        guidance: The loaded guidance, or None.
        judges: Method → its judge settings.
    """

    read: PairInputs
    split_of: dict[str, str]
    pairs: list[Pair]
    guidance: Guidance | None
    judges: dict[str, JudgeSettings]


@dataclass(frozen=True)
class JudgeEvalOutcome:
    """What :func:`evaluate_judges` found and wrote.

    Attributes:
        pairs: Labelled pairs evaluated on.
        judge_model: The judge model's id (``prefjudge-evidence`` when none was asked).
        methods: The methods, in order.
        verdicts: Method → its verdicts, in pair order.
        results: Method → :func:`~prefjudge.judge.evaluation.evaluate_verdicts` result,
            with its ``bias`` (:func:`~prefjudge.judge.bias.bias_diagnostics`).
        by_split: Method → split → agreement, when there are several splits or a method
            runs tests; else empty.
        criteria: Split → the criterion its pairs name (``-`` for none).
        paired: The paired differences of each method from the first
            (:func:`~prefjudge.judge.heldout.paired_differences`).
        frame: The comparison table (:func:`~prefjudge.judge.evaluation.compare_methods`).
        summary_json: ``summary.json`` written.
        summary_csv: ``summary.csv`` written.
        summary_png: ``summary.png`` written.
    """

    pairs: int
    judge_model: str
    methods: tuple[str, ...]
    verdicts: dict[str, list[Verdict]]
    results: dict[str, dict[str, Any]]
    by_split: dict[str, dict[str, dict[str, Any]]]
    criteria: dict[str, str]
    paired: dict[str, dict[str, Any]]
    frame: pd.DataFrame
    summary_json: Path
    summary_csv: Path
    summary_png: Path


def prepare_judge_eval(settings: JudgeEvalSettings, reporter: Reporter) -> PreparedEvaluation:
    """Read the labelled pairs and check every method's options, before a model is opened.

    :func:`evaluate_judges` calls it itself; a command calls it first so that a wrong
    input fails before a model is loaded, and hands the result to :func:`evaluate_judges`.

    Args:
        settings: What to evaluate.
        reporter: Where notes (rows skipped, pairs held out) go.

    Returns:
        The pairs and each method's judge settings.

    Raises:
        JudgeOptionError: On options or arguments given wrongly (the error names them).
        StageError: On sources that cannot be read, no labelled pair, guidance that cannot
            be used or that was built from the pairs evaluated on, or pairs a method's
            evidence cannot decide (unless ``allow_undecided``).
    """
    read, split_of = read_labelled_splits(
        settings.sources,
        settings.pairs_format,
        settings.skip_invalid,
        reporter,
        split=settings.split,
        subset=settings.subset,
    )
    pairs = [p for p in read.pairs if p.label is not None]
    if not pairs:
        raise StageError(f"{', '.join(settings.sources)}: no pair has a human label")
    guidance = open_guidance(settings.guidance)
    try:
        kept = held_out_pairs(pairs, guidance, held_out=settings.held_out)
    except GuidanceLeakageError as exc:
        raise StageError(str(exc)) from None
    pairs = kept.pairs
    if kept.dropped:
        reporter.note(
            f"held out: {len(pairs)} pairs ({kept.dropped} used to build the guidance are left out)"
        )
    if settings.limit:
        pairs = first_of_each_split(pairs, split_of, settings.limit)
    judges = {method: _judge_settings(settings, method, guidance) for method in settings.methods}
    for judge in judges.values():
        check_coverage(pairs, judge, reporter, allow_undecided=settings.allow_undecided)
    return PreparedEvaluation(read, split_of, pairs, guidance, judges)


def _judge_settings(
    settings: JudgeEvalSettings, method: str, guidance: Guidance | None
) -> JudgeSettings:
    """One method's judge settings; ``--tests`` and ``--criterion`` go to those that use them.

    When another method evaluated beside it runs tests, a method that runs none ignores
    them (they are given for that one); else they are refused for it as for ``judge``.
    """
    others = any(method_traits(m, settings.fallback).needs_tests for m in settings.methods)
    if others and not method_traits(method, settings.fallback).needs_tests:
        settings = replace(settings, tests=(), criterion=None)
    return judge_settings(settings, method, guidance)


def _judge_model(methods: tuple[str, ...], traits: dict[str, Any],
                 backend: Backend | None) -> Backend:
    """The model the methods judge with: ``backend``, or :class:`NoModel` when none asks one.

    Raises:
        StageError: When a method asks a model and none was opened.
    """
    needs_model = any(t.needs_model for t in traits.values())
    if needs_model and backend is None:
        asking = ", ".join(m for m in methods if traits[m].needs_model)
        raise StageError(f"--method {asking} asks a judge model, and none was opened")
    return backend if needs_model and backend is not None else NoModel()


def _judge_method(settings: JudgeEvalSettings, prepared: PreparedEvaluation, method: str,
                  model: Backend, reporter: Reporter, path: Path) -> list[Verdict]:
    """One method's verdicts on every pair, journaled in ``path`` (a rerun resumes)."""
    judge = prepared.judges[method]
    read = prepared.read
    return judge_to_file(
        prepared.pairs,
        path,
        judge,
        model,
        reporter,
        stage="judge-eval",
        inputs={"pairs": read.files.get("pairs", [])},
        extra={
            "format": settings.pairs_format,
            **read.sources,
            **evidence_binding(judge, settings.tests),
        },
        force_new=settings.force_new,
        chunk_size=settings.chunk_size,
        retry_errors=settings.retry_errors,
        engine=settings.engine,
    ).verdicts


def _score_method(settings: JudgeEvalSettings, prepared: PreparedEvaluation, method: str,
                  verdicts: list[Verdict], per_split: bool
                  ) -> tuple[dict[str, Any], dict[str, dict[str, Any]] | None]:
    """One method's agreement with the labels (with its ``bias``), and per split if asked."""
    result = evaluate_verdicts(verdicts, n_resamples=settings.bootstrap, seed=settings.ci_seed)
    result["bias"] = bias_diagnostics(
        verdicts,
        prepared.pairs,
        counter=tokenizer_for(prepared.judges[method].tokenizer),
        n_resamples=settings.bootstrap,
        seed=settings.ci_seed,
    )
    if not per_split:
        return result, None
    return result, evaluate_by_split(
        verdicts, prepared.split_of, n_resamples=settings.bootstrap, seed=settings.ci_seed
    )


def _write_summary(out: Path, summary: dict[str, Any],
                   frame: pd.DataFrame) -> tuple[Path, Path, Path]:
    """Write ``summary.json``, ``summary.csv`` and ``summary.png``; their paths."""
    files = out / "summary.json", out / "summary.csv", out / "summary.png"
    write_json(files[0], summary)
    frame.to_csv(files[1])
    plot_methods(frame, files[2])
    return files


def evaluate_judges(
    settings: JudgeEvalSettings,
    backend: Backend | None,
    reporter: Reporter,
    *,
    prepared: PreparedEvaluation | None = None,
) -> JudgeEvalOutcome:
    """Measure judges against human labels, side by side per method: ``prefjudge judge-eval``.

    Each method's verdicts are journaled in ``output`` (a rerun resumes); the summary
    (``summary.json``, ``summary.csv``, ``summary.png``) is written at the end.

    Args:
        settings: What to evaluate, and how.
        backend: The open judge model (the caller closes it), shared by every method, or
            None when no method asks one (then they judge with :class:`NoModel`).
        reporter: Where notes and progress go.
        prepared: What :func:`prepare_judge_eval` returned for these settings, when the
            caller read the inputs first; None reads them now.

    Returns:
        The results and the files written.

    Raises:
        JudgeOptionError: On options or arguments given wrongly (the error names them).
        StageError: On inputs that cannot be read, no labelled pair, leaked guidance, a
            journal that refuses, a method that asks a model given none, or a backend
            that fails (verdicts written so far are kept).
    """
    if prepared is None:
        prepared = prepare_judge_eval(settings, reporter)
    methods = tuple(settings.methods)
    traits = {m: method_traits(m, settings.fallback) for m in methods}
    model = _judge_model(methods, traits, backend)
    pairs, split_of, read = prepared.pairs, prepared.split_of, prepared.read
    out = settings.output
    out.mkdir(parents=True, exist_ok=True)
    per_split = len(set(split_of.values())) > 1 or any(t.needs_tests for t in traits.values())
    suffix = f"-{prepared.guidance.name}" if prepared.guidance else ""
    verdicts_by_method: dict[str, list[Verdict]] = {}
    results: dict[str, dict[str, Any]] = {}
    by_split: dict[str, dict[str, dict[str, Any]]] = {}
    for method in methods:
        verdicts = _judge_method(settings, prepared, method, model, reporter,
                                 out / f"verdicts-{method}{suffix}.jsonl")
        verdicts_by_method[method] = verdicts
        results[method], split_result = _score_method(settings, prepared, method, verdicts,
                                                      per_split)
        if split_result is not None:
            by_split[method] = split_result
    frame = compare_methods(results)
    paired = paired_differences(
        verdicts_by_method, methods, n_resamples=settings.bootstrap, seed=settings.ci_seed
    )
    summary = evaluation_summary(
        pairs_file=", ".join(settings.sources),
        pairs=len(pairs),
        judge_model=model.model_id,
        guidance=prepared.guidance,
        results=results,
        paired=paired,
    )
    if by_split:
        summary["by_split"] = by_split
        summary["human_reference"] = human_reference()
    files = _write_summary(out, summary, frame)
    return JudgeEvalOutcome(
        pairs=len(pairs),
        judge_model=model.model_id,
        methods=methods,
        verdicts=verdicts_by_method,
        results=results,
        by_split=by_split,
        criteria=split_criteria(read.pairs, split_of),
        paired=paired,
        frame=frame,
        summary_json=files[0],
        summary_csv=files[1],
        summary_png=files[2],
    )
