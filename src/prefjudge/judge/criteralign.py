"""CriterAlign (arXiv 2605.19665): criteria, swap-consistent verdicts, refinement, synthesis.

Stage 1 writes criteria, stages 2–3 judge them in both orders and keep the verdicts that
survive the swap, stage 4 splits tied criteria, stage 5 synthesises a verdict in both orders.

Every stage runs as one backend batch over a chunk of pairs, so a served model sees many
requests at once; a pair whose stage fails gets an ``error`` verdict naming the stage and
never reaches the later stages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prefjudge.judge.common import (
    Job,
    JudgeMethod,
    JudgeSettings,
    Ledger,
    OnResult,
    combine_orders,
    criteria_text,
    failure,
    flip,
    keyed_verdicts,
    order_replies,
    run_jobs,
)
from prefjudge.judge.methods import judge_method
from prefjudge.judge.schemas import (
    criteria_schema,
    criterion_judge_schema,
    final_schema,
    keyed_items,
    refine_schema,
)
from prefjudge.records import SIDE_WINNERS, Criterion, CriterionVerdict, Pair, Verdict


@dataclass
class PairState:
    """One pair's progress through the stages."""

    pair: Pair
    criteria: list[Criterion] = field(default_factory=list)
    verdicts: list[CriterionVerdict] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    refined: int = 0
    orders: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    decisive: list[str] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        """Whether no stage has failed for this pair."""
        return self.error is None


def normalize_criteria(texts: list[str], limit: int, prefix: str = "c") -> list[Criterion]:
    """Strip, drop empty and duplicate criteria, keep at most ``limit``, number them."""
    seen: set[str] = set()
    kept: list[str] = []
    for text in texts:
        clean = re.sub(r"\s+", " ", text).strip().lstrip("-*0123456789.) ").strip()
        key = clean.lower().rstrip(".")
        if clean and key not in seen:
            seen.add(key)
            kept.append(clean)
    return [Criterion(id=f"{prefix}{i}", text=t) for i, t in enumerate(kept[:limit], start=1)]


def verdicts_text(verdicts: list[CriterionVerdict], swapped: bool) -> str:
    """Surviving criterion verdicts as lines, in the labels of one order."""
    lines = []
    for cv in verdicts:
        if cv.outcome in (None, "insufficient"):
            continue
        shown = flip(cv.outcome) if swapped else cv.outcome
        winner = "tie" if shown == "tie" else f"Answer {shown} better"
        reason = cv.reason_swapped if swapped else cv.reason_forward
        lines.append(f"{cv.criterion.id}: {cv.criterion.text} -> {winner}. {reason}".strip())
    return "\n".join(lines) if lines else "(no criterion verdict survived the order swap)"


@judge_method("criteralign")
class CriterAlign(JudgeMethod):
    """The CriterAlign pipeline over chunks of pairs."""

    calls_per_pair = 5  # criteria, two judgings, two syntheses
    calls_bound = "≥"  # tie refinement adds calls
    template_stages = ("criteria", "criterion_judge", "refine", "synthesis")

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk of pairs through all five stages.

        Args:
            pairs: The pairs (unique ``pair_id``).
            on_result: Called per backend result (progress).

        Returns:
            One verdict per pair, in order.
        """
        states = [PairState(pair) for pair in pairs]
        self.generate_criteria(states, on_result)
        self.judge_criteria(states, [s.criteria for s in states], on_result, stage="judging")
        if self.settings.refine:
            self.refine_ties(states, on_result)
        self.synthesise(states, on_result)
        return [self.verdict(state) for state in states]

    # -- stage 1 ---------------------------------------------------------------------------

    def generate_criteria(self, states: list[PairState], on_result: OnResult | None) -> None:
        """Stage 1: criteria per pair (one call, forward order)."""
        s = self.settings
        jobs = [
            Job(
                st.pair.pair_id,
                (i,),
                self.prompts.request(
                    f"{st.pair.pair_id}:criteria",
                    "criteria",
                    criteria_schema(s.min_criteria, s.max_criteria),
                    pair=st.pair,
                    n_min=str(s.min_criteria),
                    n_max=str(s.max_criteria),
                ),
            )
            for i, st in enumerate(states)
        ]
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        for i, st in enumerate(states):
            result = results[(i,)]
            if not result.ok:
                st.error = failure("criteria", result)
                continue
            st.criteria = normalize_criteria(result.parsed.criteria, s.max_criteria)
            if not st.criteria:
                st.error = "criteria: the model returned no usable criterion"
            elif len(st.criteria) < s.min_criteria:
                st.warnings.append(
                    f"criteria: {len(st.criteria)} distinct criteria, fewer than the "
                    f"{s.min_criteria} asked for (duplicates removed)"
                )

    # -- stages 2 and 3 --------------------------------------------------------------------

    def judge_criteria(
        self,
        states: list[PairState],
        criteria: list[list[Criterion]],
        on_result: OnResult | None,
        *,
        stage: str,
    ) -> None:
        """Stages 2–3: judge criteria in both orders and keep swap-consistent verdicts."""
        jobs = []
        for i, (st, crits) in enumerate(zip(states, criteria, strict=True)):
            if st.alive and crits:
                schema = criterion_judge_schema(tuple(c.id for c in crits))
                text = criteria_text(crits)
                jobs += self.prompts.both_orders(
                    i, st.pair, stage, "criterion_judge", schema, lambda _s, t=text: {"criteria": t}
                )
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        for i, (st, crits) in enumerate(zip(states, criteria, strict=True)):
            if not st.alive or not crits:
                continue
            replies, message = order_replies(results, i, stage)
            if message:
                if stage == "judging":
                    st.error = message
                else:
                    st.warnings.append(message)
                continue
            # keyed replies: the schema makes every criterion id present in both orders
            by_order = {order: keyed_verdicts(reply.verdicts, sw) for order, sw, reply in replies}
            for crit in crits:
                (fwd, fwd_reason), (swp, swp_reason) = (
                    by_order["forward"][crit.id],
                    by_order["swapped"][crit.id],
                )
                st.verdicts.append(
                    CriterionVerdict(
                        criterion=crit,
                        forward=fwd,
                        swapped=swp,
                        outcome=fwd if fwd == swp else None,
                        reason_forward=fwd_reason,
                        reason_swapped=swp_reason,
                    )
                )

    # -- stage 4 ---------------------------------------------------------------------------

    def refine_ties(self, states: list[PairState], on_result: OnResult | None) -> None:
        """Stage 4: split tied criteria into at most two sub-criteria each and judge those."""
        tied = [
            [cv.criterion for cv in st.verdicts if cv.outcome == "tie"][: self.settings.max_refine]
            if st.alive
            else []
            for st in states
        ]
        jobs = [
            Job(
                st.pair.pair_id,
                (i,),
                self.prompts.request(
                    f"{st.pair.pair_id}:refine",
                    "refine",
                    refine_schema(tuple(c.id for c in tied[i])),
                    pair=st.pair,
                    criteria=criteria_text(tied[i]),
                ),
            )
            for i, st in enumerate(states)
            if tied[i]
        ]
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        subs: list[list[Criterion]] = [[] for _ in states]
        for i, st in enumerate(states):
            if not tied[i]:
                continue
            result = results[(i,)]
            if not result.ok:
                st.warnings.append(failure("refine", result) + " (verdict stands without it)")
                continue
            for parent, sub_criteria in keyed_items(result.parsed.splits):
                kept = normalize_criteria(sub_criteria, 2, prefix=f"{parent}.")
                subs[i].extend(c.model_copy(update={"parent": parent}) for c in kept)
                st.refined += 1 if kept else 0
        self.judge_criteria(states, subs, on_result, stage="refined judging")

    # -- stage 5 ---------------------------------------------------------------------------

    def synthesise(self, states: list[PairState], on_result: OnResult | None) -> None:
        """Stage 5: final verdict in both orders; disagreement is a tie."""
        jobs = []
        for i, st in enumerate(states):
            if st.alive:
                schema = final_schema(tuple(cv.criterion.id for cv in st.verdicts))
                jobs += self.prompts.both_orders(
                    i,
                    st.pair,
                    "synthesis",
                    "synthesis",
                    schema,
                    lambda swapped, v=st.verdicts: {
                        "criterion_verdicts": verdicts_text(v, swapped)
                    },
                )
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        for i, st in enumerate(states):
            if not st.alive:
                continue
            replies, st.error = order_replies(results, i, "synthesis")
            if st.error:
                continue
            for order, swapped, reply in replies:
                st.orders[order] = flip(reply.verdict) if swapped else reply.verdict
                st.reasons[order] = reply.reason
                # the schema admits only this pair's criterion ids
                st.decisive += [cid for cid in reply.decisive if cid not in st.decisive]

    def verdict(self, st: PairState) -> Verdict:
        """Build the verdict record of one pair."""
        judged = [cv for cv in st.verdicts if cv.forward is not None and cv.swapped is not None]
        flipped = sum(1 for cv in judged if cv.forward != cv.swapped)
        return verdict_record(
            st.pair,
            "criteralign",
            self.settings,
            self.ledger,
            self.backend.model_id,
            error=st.error,
            orders=st.orders,
            reasons=st.reasons,
            criteria=st.verdicts,
            decisive=st.decisive,
            inconsistency_rate=flipped / len(judged) if judged else None,
            refined=st.refined,
            warnings=st.warnings,
        )


def verdict_record(
    pair: Pair,
    method: str,
    settings: JudgeSettings,
    ledger: Ledger,
    judge_model: str,
    *,
    error: str | None,
    orders: dict[str, str | None],
    preferred: str | None = None,
    **fields: object,
) -> Verdict:
    """Assemble a :class:`Verdict`: both orders combined, winner as a battle outcome.

    Methods that ask in both orders pass ``orders``; a single-order method (pointwise)
    passes no orders and its ``preferred`` side.
    """
    consistent = None
    if error is not None:
        preferred = None
    elif "forward" in orders and "swapped" in orders:
        preferred = combine_orders(orders["forward"], orders["swapped"])  # type: ignore[arg-type]
        consistent = orders["forward"] == orders["swapped"]
    winner = SIDE_WINNERS.get(preferred or "")
    return Verdict(
        pair_id=pair.pair_id,
        task_id=pair.task_id,
        model_a=pair.model_a,
        model_b=pair.model_b,
        method=method,  # type: ignore[arg-type]
        status="error" if error else "ok",
        winner=winner,  # type: ignore[arg-type]
        preferred=preferred,  # type: ignore[arg-type]
        orders=orders,  # type: ignore[arg-type]
        position_consistent=consistent,
        label=pair.label,
        category=pair.category,
        error=error,
        judge_model=judge_model,
        guidance=settings.guidance.label if settings.guidance else None,
        evidence=settings.evidence and bool(pair.evidence_a or pair.evidence_b),
        cost=ledger.cost(pair.pair_id),
        **fields,  # type: ignore[arg-type]
    )
