"""Judging into a verdict file: its journal binding, what is left to judge, the judging itself.

The commands (``judge``, ``judge-eval``, ``pair``) only add progress bars and printing::

    journal = verdict_journal(out, settings, backend, stage="judge", inputs={"pairs": path})
    with journal:
        plan = plan_judging(pairs, journal, retry_errors=False)
        verdicts = judge_plan(plan, journal, settings, backend, chunk_size=32)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.backends import Backend, Result
from prefjudge.journal import Journal, content_digest, model_settings
from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.paths import data_dir
from prefjudge.records import Pair, Verdict


def verdict_journal(
    out: str | Path,
    settings: JudgeSettings,
    backend: Backend,
    *,
    stage: str,
    inputs: dict[str, Any],
    extra: dict[str, Any] | None = None,
    force_new: bool = False,
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
    pairs: Sequence[Pair], journal: Journal[Verdict] | None, *, retry_errors: bool = False
) -> JudgingPlan:
    """Decide what to judge: every pair without a verdict (and, on request, errored ones).

    Args:
        pairs: The pairs.
        journal: An open verdict journal, or None (nothing is done yet).
        retry_errors: Judge again the pairs whose verdict is an error; their records are
            removed from the journal now (atomically), so no duplicate is ever written.

    Returns:
        The plan.
    """
    retry: set[str] = set()
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

    Returns:
        One verdict per pair of the plan, in input order (earlier ones included).

    Raises:
        BackendError: When the backend cannot work at all (verdicts written so far stay).
    """
    fresh: dict[str, Verdict] = {}
    batches = [
        ([p for p in plan.todo if p.pair_id not in plan.retry], contextlib.nullcontext()),
        ([p for p in plan.todo if p.pair_id in plan.retry], backend.fresh_calls()),
    ]
    for batch, cache_mode in batches:
        if not batch:
            continue
        with cache_mode:
            for verdict in judge_pairs(
                batch, backend, settings, chunk_size=chunk_size, on_result=on_result
            ):
                if journal is not None:
                    journal.write(verdict)
                fresh[verdict.pair_id] = verdict
                if on_verdict is not None:
                    on_verdict(verdict)
    merged = {**plan.done, **fresh}
    return [merged[p.pair_id] for p in plan.pairs if p.pair_id in merged]
