"""Stage 2: the pairwise judge (CriterAlign), its baselines, and the evidence judges.

:func:`judge_pairs` judges pairs in chunks with any method and yields verdicts as each
chunk finishes, so callers can journal them (``prefjudge judge`` resumes by ``pair_id``).
What a method needs (a model, the pairs' tests) and what its model calls cost is its
:func:`method_traits`, read from the method class's attributes. Each method registers
itself by name (:mod:`.methods`: ``@judge_method("name")``); every list of method names
(``--method``, ``--fallback``, the templates each renders) is read from that registry.
``evidence`` and ``hybrid`` register their names and traits only: their classes
(:mod:`.evidence_methods`) are imported when one of them judges.

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
from typing import Any

from prefjudge.backends import Backend
from prefjudge.features import TokenCounter, response_features, tokenizer_for
from prefjudge.judge.baselines import Monolithic, Pointwise
from prefjudge.judge.common import JudgeSettings, Ledger, OnResult
from prefjudge.judge.criteralign import CriterAlign
from prefjudge.judge.methods import (
    METHOD_NAMES,
    METHODS,
    MODEL_METHOD_CLASSES,
    MODEL_METHODS,
    MethodTraits,
    judge_method,
    method_traits,
    register_lazy_method,
    register_method,
    unregister_method,
)
from prefjudge.records import Pair, Verdict

# evidence and hybrid: names and traits now, their classes (and with them the sandbox and
# the verifier) imported when METHODS is first asked for one (.evidence_methods)
register_lazy_method("evidence", "prefjudge.judge.evidence_methods:Evidence",
                     needs_model=False, needs_tests=True)
register_lazy_method("hybrid", "prefjudge.judge.evidence_methods:Hybrid",
                     needs_model=True, needs_tests=True, uses_fallback=True, calls_bound="≤")


def __getattr__(name: str) -> Any:
    """``Evidence`` and ``Hybrid``: the registered classes, imported at first use."""
    if name in ("Evidence", "Hybrid"):
        return METHODS[name.lower()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["METHODS", "METHOD_NAMES", "MODEL_METHODS", "MODEL_METHOD_CLASSES", "CriterAlign",
           "Evidence", "Hybrid", "JudgeSettings", "MethodTraits", "Monolithic", "Pointwise",
           "judge_method", "judge_pairs", "method_traits", "register_lazy_method",
           "register_method", "unregister_method"]


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
