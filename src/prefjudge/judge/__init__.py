"""Stage 2: the pairwise judge (CriterAlign), its baselines, and the evidence judges.

:func:`judge_pairs` judges pairs in chunks with any method and yields verdicts as each
chunk finishes, so callers can journal them (``prefjudge judge`` resumes by ``pair_id``).
What a method needs (a model, the pairs' tests) and what its model calls cost is its
:func:`method_traits`, read from the method class's attributes. Each method registers
itself by name (:mod:`.methods`: ``@judge_method("name")``); every list of method names
(``--method``, ``--fallback``, the templates each renders) is read from that registry.
The built-in methods register their names and traits only (:mod:`.methods_builtin`): each
class (and what it needs: CriterAlign's schemas, the sandbox behind ``evidence``) is
imported when it judges. Importing this package imports the registry alone (standard
library): the classes and settings it publishes (``CriterAlign``, ``JudgeSettings`` ...)
are imported when first asked for, so ``--help`` reads the method names from here.

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
from typing import TYPE_CHECKING, Any

from prefjudge.judge import methods_builtin as _methods_builtin  # noqa: F401 - registers them
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
from prefjudge.lazy import lazy_getattr

if TYPE_CHECKING:
    from prefjudge.backends import Backend
    from prefjudge.features import TokenCounter
    from prefjudge.judge.baselines import Monolithic, Pointwise
    from prefjudge.judge.common import JudgeSettings, OnResult
    from prefjudge.judge.criteralign import CriterAlign
    from prefjudge.judge.evidence_methods import Evidence, Hybrid
    from prefjudge.records import Pair, Verdict

JUDGE_SAMPLING: dict[str, Any] = {"max_tokens": 2048, "seed": 0}
"""Sampling defaults of the judging stages (the user's settings override them); here, where
``--help`` reads them at no cost (:mod:`.settings` re-exports them)."""

_LAZY = {
    "CriterAlign": "prefjudge.judge.criteralign",
    "Monolithic": "prefjudge.judge.baselines",
    "Pointwise": "prefjudge.judge.baselines",
    "Evidence": "prefjudge.judge.evidence_methods",
    "Hybrid": "prefjudge.judge.evidence_methods",
    "JudgeSettings": "prefjudge.judge.common",
}
"""The names published here that are imported from their modules at first use."""


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = ["JUDGE_SAMPLING", "METHODS", "METHOD_NAMES", "MODEL_METHODS", "MODEL_METHOD_CLASSES",
           "CriterAlign", "Evidence", "Hybrid", "JudgeSettings", "MethodTraits", "Monolithic",
           "Pointwise", "judge_method", "judge_pairs", "method_traits", "register_lazy_method",
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
    from prefjudge.features import tokenizer_for
    from prefjudge.judge.common import Ledger

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
    from prefjudge.features import response_features

    return verdict.model_copy(update={
        "features_a": response_features(pair.response_a, counter),
        "features_b": response_features(pair.response_b, counter),
        "features_by": counter.name,
    })
