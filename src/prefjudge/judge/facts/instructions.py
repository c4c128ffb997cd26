"""Instruction-following evidence: the VeriCode checks of the pair's instructions.

Both responses are checked against the instructions they were asked to follow (pairs
joined from generations of augmented tasks carry them) with the same verifiers as
``prefjudge score``, under the judge's verification profile (``--profile``; by default
``strict``, :data:`~prefjudge.scoring.profiles.JUDGE_PROFILE`: ``# noqa`` comments and
isort action comments silence nothing). The code-level instructions read the code the
tests run (:func:`~prefjudge.judge.facts.correctness.response_code`), never another block
of the response; response-level ones (doc_4, doc_6) read the whole response. The response
that follows more of them is better; equal counts are a tie. A check that could not run
(status ``error``) on either side leaves that instruction out of the count, and the fact
says so; when every instruction is left out the fact is an ``error``. A pair without
instructions is ``insufficient``.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefjudge.judge.facts.correctness import Reused, response_code
from prefjudge.judge.facts.provenance import fact_source
from prefjudge.records import CheckResult, Fact, Pair
from prefjudge.scoring.profiles import JUDGE_PROFILE
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.engine import Item


def instruction_fact(checks_a: Sequence[CheckResult], checks_b: Sequence[CheckResult]) -> Fact:
    """Compare two responses' results on the same instructions (in the same order).

    Args:
        checks_a: Response A's check results.
        checks_b: Response B's check results, one per instruction of ``checks_a``.

    Returns:
        The instructions fact.
    """
    counted = [(a, b) for a, b in zip(checks_a, checks_b, strict=True)
               if a.status != "error" and b.status != "error"]
    left_out = [a.id for a, b in zip(checks_a, checks_b, strict=True)
                if a.status == "error" or b.status == "error"]
    detail = {
        "a": {c.id: c.status for c in checks_a}, "b": {c.id: c.status for c in checks_b},
        "left_out": left_out,
    }
    if not counted:
        return Fact(kind="instructions", outcome="error", detail=detail,
                    fact=f"no instruction check could be run on both sides ({', '.join(left_out)})")
    followed_a = sum(a.status == "pass" for a, _ in counted)
    followed_b = sum(b.status == "pass" for _, b in counted)
    note = f" ({len(left_out)} check(s) could not run: {', '.join(left_out)})" if left_out else ""
    if followed_a == followed_b:
        return Fact(kind="instructions", outcome="tie", detail=detail,
                    fact=f"both follow {followed_a} of {len(counted)} instructions{note}")
    winner = "A" if followed_a > followed_b else "B"
    missed = [(a.id if winner == "B" else b.id) for a, b in counted
              if (a.status if winner == "B" else b.status) == "fail"
              and (b.status if winner == "B" else a.status) == "pass"]
    return Fact(kind="instructions", outcome=winner, detail=detail,
                fact=f"A follows {followed_a} and B {followed_b} of {len(counted)} instructions"
                f"{note}; {'A' if winner == 'B' else 'B'} misses {', '.join(missed) or 'more'}")


def instruction_facts(pairs: Sequence[Pair], profile: str = JUDGE_PROFILE, *,
                      reused: Reused | None = None) -> list[Fact]:
    """Check both responses of every pair against its instructions (Ruff batched).

    Args:
        pairs: The pairs; those without ``instructions`` get an ``insufficient`` fact.
        profile: The verification profile (``strict`` or ``reference``).
        reused: A side's check results found beforehand under ``profile`` (a score
            record's: see :mod:`prefjudge.judge.facts.from_scores`); that side is not
            checked again, and the fact names its source.

    Returns:
        One fact per pair, in order.
    """
    items: list[Item] = []
    sides: dict[int, list[list[CheckResult] | int]] = {}  # per pair: results, or an item
    sources: dict[int, list[str]] = {}
    for index, pair in enumerate(pairs):
        if not pair.instructions:
            continue
        sides[index], sources[index] = [], []
        for side, text, is_code in (("A", pair.response_a, pair.response_a_is_code),
                                    ("B", pair.response_b, pair.response_b_is_code)):
            known = None if reused is None else reused(pair, side)  # type: ignore[arg-type]
            sources[index].append("" if known is None else known.source)
            if known is not None:
                sides[index].append(known.value)
            else:
                sides[index].append(len(items))
                items.append((text, pair.instructions, is_code,
                              response_code(pair, side)))  # type: ignore[arg-type]
    results = verify_batch(items, profile=profile) if items else []
    facts = []
    for index, _pair in enumerate(pairs):
        if index not in sides:
            facts.append(Fact(kind="instructions", outcome="insufficient",
                              fact="the pair carries no instructions to check"))
            continue
        checks_a, checks_b = (results[r] if isinstance(r, int) else r for r in sides[index])
        fact = instruction_fact(checks_a, checks_b)
        source = fact_source(*sources[index])
        facts.append(fact.model_copy(update={"source": source}) if source else fact)
    return facts
