"""Stage 2: the pairwise judge (CriterAlign), its baselines, and the evidence judges.

:func:`judge_pairs` judges pairs in chunks with any method and yields verdicts as each
chunk finishes, so callers can journal them (``prefjudge judge`` resumes by ``pair_id``).

* :mod:`.criteralign`, :mod:`.baselines` — the model-based methods; :mod:`.common` their
  shared settings, prompt assembly and cost ledger; :mod:`.facts` — the ``evidence`` and
  ``hybrid`` methods (tests, cost, static analysis and instruction checks decide);
  :mod:`.prompts` and :mod:`.schemas` the templates (``rubrics/judge/``) and per-pair
  reply schemas;
* :mod:`.pairs` — pair files (CodePrefBench, Copilot Arena, BigCodeReward, prefjudge),
  pairs joined from two generation files, evidence from scored records;
* :mod:`.guidance` loads HPAG guidance, :mod:`.hpag` builds it from human labels;
* :mod:`.run` — judging into a journaled verdict file; :mod:`.evaluation` and
  :mod:`.heldout` — agreement with human labels, the held-out policy, the summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prefjudge.backends import Backend
from prefjudge.features import TokenCounter, response_features, tokenizer_for
from prefjudge.judge.baselines import Monolithic, Pointwise
from prefjudge.judge.common import JudgeSettings, Ledger, OnResult
from prefjudge.judge.criteralign import CriterAlign
from prefjudge.judge.facts.judge import EvidenceJudge, HybridJudge
from prefjudge.records import Pair, Verdict

METHODS = {"criteralign": CriterAlign, "monolithic": Monolithic, "pointwise": Pointwise,
           "evidence": EvidenceJudge, "hybrid": HybridJudge}
MODEL_METHODS = ("criteralign", "monolithic", "pointwise")
"""The methods that ask a judge model (``evidence`` asks none; ``hybrid`` asks one only for
the pairs the evidence leaves undecided)."""

__all__ = ["METHODS", "MODEL_METHODS", "JudgeSettings", "judge_pairs"]


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
    ids = [p.pair_id for p in pairs]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"duplicate pair ids: {dupes}")
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
