"""Judging pairs through a verdict journal: plan what is left, judge it, resume.

What the ``judge``, ``pair`` and ``judge-eval`` use cases share (:mod:`.run`,
:mod:`.pair_run`, :mod:`.judge_eval`)::

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prefjudge.backends import Backend, BackendError, NoModel, Result
from prefjudge.journal import Journal, JournalError, content_digest, model_settings, open_journal
from prefjudge.judge import JudgeSettings, judge_pairs, method_traits
from prefjudge.judge.prompts import TemplateError
from prefjudge.paths import data_dir
from prefjudge.records import Pair, Verdict
from prefjudge.reporting import Reporter, StageError


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


def check_evidence_coverage(
    pairs: Sequence[Pair], settings: JudgeSettings, reporter: Reporter, *, allow_undecided: bool
) -> None:
    """:func:`~prefjudge.judge.facts.coverage.check_coverage`, for the methods it checks.

    Those that weigh evidence (their traits' ``needs_tests``); the facts' modules (the
    sandbox, the verifier) are imported only for them, so judging with a model-only method
    does not pay for them.

    Args:
        pairs: The pairs to judge.
        settings: The judge settings.
        reporter: Where the warnings go.
        allow_undecided: Go on when the evidence cannot decide (``--allow-undecided``).

    Raises:
        StageError: When the evidence cannot decide the pairs (see ``check_coverage``).
    """
    if not method_traits(settings.method, settings.fallback).needs_tests:
        return
    from prefjudge.judge.facts.coverage import check_coverage

    check_coverage(pairs, settings, reporter, allow_undecided=allow_undecided)


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

