"""Evaluating judges against human labels honestly: the leakage policy and the summary.

A guidance folder records which labelled pairs built it. Evaluating a judge that uses
that guidance on those same pairs would be leakage: :func:`held_out_pairs` refuses it
unless the caller asks for the held-out pairs only, and then leaves the used pairs out.
:func:`paired_differences` and :func:`evaluation_summary` build what ``judge-eval``
reports and writes. Nothing here prints or writes files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefjudge.judge.evaluation import paired_difference
from prefjudge.judge.guidance import Guidance
from prefjudge.records import Pair, Verdict


class GuidanceLeakageError(ValueError):
    """Labelled pairs to evaluate on were used to build the guidance in use."""


@dataclass
class HeldOut:
    """The pairs to evaluate on.

    Attributes:
        pairs: The pairs left to evaluate on.
        dropped: How many pairs were left out because they built the guidance.
    """

    pairs: list[Pair]
    dropped: int = 0


def held_out_pairs(
    pairs: Sequence[Pair], guidance: Guidance | None, *, held_out: bool
) -> HeldOut:
    """Apply the leakage policy: never evaluate on the pairs that built the guidance.

    Args:
        pairs: Labelled pairs.
        guidance: The guidance the judge uses, or None.
        held_out: Leave out the pairs that built the guidance instead of refusing.

    Returns:
        The pairs to evaluate on, and how many were left out.

    Raises:
        GuidanceLeakageError: When some pairs built the guidance and ``held_out`` is False
            (the message names a few and the way out).
    """
    if guidance is None:
        return HeldOut(list(pairs))
    used = guidance.overlap(list(pairs))
    if used and not held_out:
        ids = ", ".join(p.pair_id for p in used[:5])
        raise GuidanceLeakageError(
            f"{len(used)} of these pairs were used to build the guidance in {guidance.folder} "
            f"(e.g. {ids}); evaluating on them would be leakage. Pass --held-out to "
            "evaluate only the held-out pairs."
        )
    drop = {p.pair_id for p in used}
    return HeldOut([p for p in pairs if p.pair_id not in drop], len(drop))


def paired_differences(
    verdicts_by_method: Mapping[str, list[Verdict]],
    methods: Sequence[str],
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """Accuracy difference of each method against the first, on the pairs both judged.

    Args:
        verdicts_by_method: Method → verdicts.
        methods: Methods in order; the first is the reference.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        ``"<method> - <first>"`` → the result of
        :func:`~prefjudge.judge.evaluation.paired_difference`.
    """
    first = methods[0]
    return {
        f"{method} - {first}": paired_difference(
            verdicts_by_method[method], verdicts_by_method[first], n_resamples=n_resamples,
            seed=seed,
        )
        for method in methods[1:]
    }


def evaluation_summary(
    *,
    pairs_file: str,
    pairs: int,
    judge_model: str,
    guidance: Guidance | None,
    results: Mapping[str, dict[str, Any]],
    paired: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """The ``summary.json`` of ``judge-eval``.

    Args:
        pairs_file: The labelled pairs file.
        pairs: Pairs evaluated on.
        judge_model: The judge's model identity.
        guidance: The guidance used, or None.
        results: Method → :func:`~prefjudge.judge.evaluation.evaluate_verdicts` result.
        paired: See :func:`paired_differences`.

    Returns:
        The summary.
    """
    return {
        "pairs_file": pairs_file,
        "pairs": pairs,
        "judge_model": judge_model,
        "guidance": guidance.label if guidance else None,
        "methods": dict(results),
        "paired_differences": dict(paired),
    }
