"""Stage 2: the pairwise judge (CriterAlign) and its baselines.

:func:`judge_pairs` judges pairs in chunks with any method and yields verdicts as each
chunk finishes, so callers can journal them (``prefjudge judge`` resumes by ``pair_id``).

* :mod:`.criteralign`, :mod:`.baselines` — the methods; :mod:`.common` their shared
  settings, prompt assembly and cost ledger; :mod:`.prompts` and :mod:`.schemas` the
  templates (``rubrics/judge/``) and per-pair reply schemas;
* :mod:`.pairs` — pair files (CodePrefBench, Copilot Arena, BigCodeReward, prefjudge),
  pairs joined from two generation files, evidence from scored records;
* :mod:`.guidance` loads HPAG guidance, :mod:`.hpag` builds it from human labels;
* :mod:`.run` — judging into a journaled verdict file; :mod:`.evaluation` and
  :mod:`.heldout` — agreement with human labels, the held-out policy, the summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prefjudge.backends import Backend
from prefjudge.judge.baselines import Monolithic, Pointwise
from prefjudge.judge.common import JudgeSettings, Ledger, OnResult
from prefjudge.judge.criteralign import CriterAlign
from prefjudge.records import Pair, Verdict

METHODS = {"criteralign": CriterAlign, "monolithic": Monolithic, "pointwise": Pointwise}

__all__ = ["METHODS", "JudgeSettings", "judge_pairs"]


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
        One verdict per pair, in input order, each chunk as soon as it is done.

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
    for start in range(0, len(pairs), chunk_size):
        yield from method.judge(list(pairs[start : start + chunk_size]), on_result)
