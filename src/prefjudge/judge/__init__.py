"""Stage 2: the pairwise judge (CriterAlign), its baselines, and the evidence judges.

:func:`judge_pairs` judges pairs in chunks with any method and yields verdicts as each
chunk finishes, so callers can journal them (``prefjudge judge`` resumes by ``pair_id``).
What a method needs (a model, the pairs' tests) and what its model calls cost is its
:func:`method_traits`, read from the method class's attributes.

* :mod:`.criteralign`, :mod:`.baselines` — the model-based methods; :mod:`.common` their
  shared settings, prompt assembly and cost ledger; :mod:`.facts` — the ``evidence`` and
  ``hybrid`` methods (tests, cost, static analysis and instruction checks decide);
  :mod:`.prompts` and :mod:`.schemas` the templates (``rubrics/judge/``) and per-pair
  reply schemas;
* :mod:`.pairs` — pair files (CodePrefBench, Copilot Arena, BigCodeReward, prefjudge),
  pairs joined from two generation files, evidence from scored records;
* :mod:`.guidance` loads HPAG guidance, :mod:`.hpag` builds it from human labels;
* :mod:`.settings` — the judging stages' options and their checks; :mod:`.run` — the
  ``judge`` and ``pair`` use cases, judging into a journaled verdict file;
  :mod:`.judge_eval` — the ``judge-eval`` use case over labelled :mod:`.splits`;
  :mod:`.evaluation` and :mod:`.heldout` — agreement with human labels, the held-out
  policy, the summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prefjudge.backends import Backend
from prefjudge.features import TokenCounter, response_features, tokenizer_for
from prefjudge.judge.baselines import Monolithic, Pointwise
from prefjudge.judge.common import (
    CallsBound,
    JudgeMethod,
    JudgeSettings,
    Ledger,
    MethodTraits,
    OnResult,
)
from prefjudge.judge.criteralign import CriterAlign
from prefjudge.judge.facts.judge import EvidenceJudge, HybridJudge
from prefjudge.records import Pair, Verdict


class Evidence(EvidenceJudge):
    """``evidence``: facts decide every pair; no model is asked (:class:`EvidenceJudge`).

    Its traits are declared here rather than in :mod:`.facts`, whose source digest every
    evidence verdict journal binds (``deciders.rules``): a file judged before stays
    resumable.
    """

    needs_model = False
    needs_tests = True


class Hybrid(HybridJudge):
    """``hybrid``: facts first, the fallback method's model for the rest (:class:`HybridJudge`).

    Its model calls are the fallback's, made only for the pairs the evidence leaves
    undecided (at most as many as the fallback alone would make, pair for pair).
    """

    needs_model = True
    needs_tests = True
    uses_fallback = True
    calls_bound = "≤"


METHODS: dict[str, type[JudgeMethod]] = {
    "criteralign": CriterAlign, "monolithic": Monolithic, "pointwise": Pointwise,
    "evidence": Evidence, "hybrid": Hybrid,
}
MODEL_METHODS = tuple(name for name, cls in METHODS.items()
                      if cls.needs_model and not cls.needs_tests and not cls.uses_fallback)
"""The methods that only ask a judge model (``evidence`` asks none; ``hybrid`` asks one only
for the pairs the evidence leaves undecided): what ``hybrid`` may fall back on."""
Hybrid.fallback_methods = {name: METHODS[name] for name in MODEL_METHODS}

__all__ = ["METHODS", "MODEL_METHODS", "JudgeSettings", "MethodTraits", "judge_pairs",
           "method_traits"]


def _combined(own: CallsBound, inner: CallsBound) -> CallsBound:
    """How calls are bounded when a method's own bound applies to a fallback's."""
    if not inner or inner == own:
        return own
    return inner if not own else "about"


def method_traits(method: str, fallback: str = "criteralign") -> MethodTraits:
    """What a judging method needs (a model, tests) and what its model calls cost.

    Read from the method's class attributes (:class:`~prefjudge.judge.common.JudgeMethod`);
    a method whose model calls are its fallback's (``hybrid``) takes the fallback's calls
    per pair, bounded from above by its own (fewer pairs reach the model) and so only
    ``about`` right when the fallback's own count is a lower bound (CriterAlign).

    Args:
        method: A name of :data:`METHODS`.
        fallback: The model-based method ``hybrid`` falls back on (ignored by the others).

    Returns:
        The traits.

    Raises:
        ValueError: On an unknown method, or a fallback that is not a model-based method.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
    cls = METHODS[method]
    if cls.uses_fallback:
        if fallback not in MODEL_METHODS:
            raise ValueError(f"{method}: the fallback must be a model-based method "
                             f"({', '.join(MODEL_METHODS)}), not {fallback!r}")
        inner = method_traits(fallback)
        return MethodTraits(
            needs_model=True,
            needs_tests=cls.needs_tests,
            model_method=inner.model_method,
            calls_per_pair=inner.calls_per_pair,
            calls_bound=_combined(cls.calls_bound, inner.calls_bound),
        )
    return MethodTraits(
        needs_model=cls.needs_model,
        needs_tests=cls.needs_tests,
        model_method=method if cls.needs_model else None,
        calls_per_pair=cls.calls_per_pair,
        calls_bound=cls.calls_bound,
    )


def judge_pairs(
    pairs: Sequence[Pair],
    backend: Backend,
    settings: JudgeSettings,
    *,
    chunk_size: int = 32,
    on_result: OnResult | None = None,
) -> Iterator[Verdict]:
    """Judge pairs with ``settings.method``, a chunk at a time.

    Args:
        pairs: Pairs with unique ``pair_id``.
        backend: The judge model.
        settings: Method, criteria bounds, guidance, evidence, sampling.
        chunk_size: Pairs per chunk; every stage is one backend batch per chunk.
        on_result: Called per backend result (progress bars).

    Yields:
        One verdict per pair, in input order, each chunk as soon as it is done, with both
        responses' style features (``features_a``/``features_b``, counted with
        ``settings.tokenizer``'s tokenizer, else the documented fallback).

    Raises:
        ValueError: On an unknown method or duplicate pair ids.
    """
    if settings.method not in METHODS:
        raise ValueError(f"unknown method {settings.method!r}; choose from {sorted(METHODS)}")
    check_unique_ids(pairs)
    ledger = Ledger()
    method = METHODS[settings.method](backend, settings, ledger)
    counter = tokenizer_for(settings.tokenizer)
    try:
        for start in range(0, len(pairs), chunk_size):
            chunk = list(pairs[start : start + chunk_size])
            for pair, verdict in zip(chunk, method.judge(chunk, on_result), strict=True):
                yield with_features(verdict, pair, counter)
    finally:
        close = getattr(method, "close", None)
        if close is not None:
            close()


def check_unique_ids(pairs: Sequence[Pair]) -> None:
    """Refuse pairs whose ids repeat (verdicts are keyed by pair id).

    Raises:
        ValueError: Naming up to five repeated ids.
    """
    ids = [p.pair_id for p in pairs]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"duplicate pair ids: {dupes}")


def with_features(verdict: Verdict, pair: Pair, counter: TokenCounter) -> Verdict:
    """The verdict with both responses' style features (for ``rank --control``).

    Args:
        verdict: A verdict of ``pair``.
        pair: The pair (its responses are measured).
        counter: Counts ``token_len``; one counter for a whole file, so that counts compare.

    Returns:
        A copy with ``features_a``, ``features_b`` and ``features_by`` set.
    """
    return verdict.model_copy(update={
        "features_a": response_features(pair.response_a, counter),
        "features_b": response_features(pair.response_b, counter),
        "features_by": counter.name,
    })
