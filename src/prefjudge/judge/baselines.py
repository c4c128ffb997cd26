"""The baselines CriterAlign is measured against, in the same code and accounting.

- monolithic: one verdict for the whole pair, asked in both orders; disagreement is a tie.
- pointwise: the same stage-1 criteria, each response scored 1–5 per criterion on its own;
  the higher total over the criteria both responses were scored on wins.
"""

from __future__ import annotations

from prefjudge.backends import Backend
from prefjudge.judge.common import (
    Job,
    JudgeMethod,
    JudgeSettings,
    Ledger,
    OnResult,
    criteria_text,
    failure,
    flip,
    order_replies,
    run_jobs,
)
from prefjudge.judge.criteralign import CriterAlign, PairState, verdict_record
from prefjudge.judge.methods import judge_method
from prefjudge.judge.prompts import fence
from prefjudge.judge.schemas import MonolithicReply, keyed_items, pointwise_schema
from prefjudge.records import CriterionVerdict, Pair, Verdict


@judge_method("monolithic")
class Monolithic(JudgeMethod):
    """One holistic verdict per order."""

    calls_per_pair = 2  # one verdict per order
    template_stages = ("monolithic",)

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk of pairs (two calls each)."""
        jobs = [
            job
            for i, pair in enumerate(pairs)
            for job in self.prompts.both_orders(
                i, pair, "monolithic", "monolithic", MonolithicReply
            )
        ]
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        verdicts = []
        for i, pair in enumerate(pairs):
            replies, error = order_replies(results, i, "monolithic")
            orders = {o: flip(r.verdict) if sw else r.verdict for o, sw, r in replies}
            reasons = {o: r.reason for o, _sw, r in replies}
            verdicts.append(
                verdict_record(
                    pair,
                    "monolithic",
                    self.settings,
                    self.ledger,
                    self.backend.model_id,
                    error=error,
                    orders=orders,
                    reasons=reasons,
                )
            )
        return verdicts


@judge_method("pointwise")
class Pointwise(JudgeMethod):
    """Score each response alone against the stage-1 criteria; compare totals."""

    calls_per_pair = 3  # the criteria, then each response scored alone
    template_stages = ("criteria", "pointwise")

    def __init__(self, backend: Backend, settings: JudgeSettings, ledger: Ledger):
        super().__init__(backend, settings, ledger)
        self.criteria_stage = CriterAlign(backend, settings, ledger)

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk of pairs (one criteria call and two scoring calls each)."""
        states = [PairState(pair) for pair in pairs]
        self.criteria_stage.generate_criteria(states, on_result)
        jobs = []
        for i, st in enumerate(states):
            if not st.alive:
                continue
            for side, swapped in (("A", False), ("B", True)):
                pair = st.pair
                response = pair.response_b if swapped else pair.response_a
                facts = pair.evidence_b if swapped else pair.evidence_a
                solo = pair.model_copy(
                    update={"response_a": response, "evidence_a": facts, "evidence_b": []}
                )
                request = self.prompts.request(
                    f"{pair.pair_id}:pointwise:{side}",
                    "pointwise",
                    pointwise_schema(tuple(c.id for c in st.criteria)),
                    pair=solo,
                    response=fence(response),
                    criteria=criteria_text(st.criteria),
                )
                jobs.append(Job(pair.pair_id, (i, side), request))
        results = run_jobs(self.backend, jobs, self.ledger, on_result)
        verdicts = []
        for i, st in enumerate(states):
            scores: dict[str, dict[str, int]] = {}
            reasons: dict[str, str] = {}
            if st.alive:
                for side in ("A", "B"):
                    result = results[(i, side)]
                    if not result.ok:
                        st.error = failure(f"pointwise ({side})", result)
                        break
                    items = keyed_items(result.parsed.scores)
                    scores[side] = {cid: item.score for cid, item in items}
                    reasons[side] = "; ".join(
                        f"{cid}: {item.reason}" for cid, item in items if item.reason
                    )[:2000]
            preferred = None
            criteria: list[CriterionVerdict] = []
            totals: dict[str, float] = {}
            if st.alive:  # keyed replies: every criterion has a score from both sides
                totals = {s: float(sum(scores[s].values())) for s in ("A", "B")}
                diff = totals["A"] - totals["B"]
                preferred = "A" if diff > 0 else "B" if diff < 0 else "tie"
                for c in st.criteria:
                    a, b = scores["A"][c.id], scores["B"][c.id]
                    side = "A" if a > b else "B" if b > a else "tie"
                    criteria.append(
                        CriterionVerdict(criterion=c, forward=side, swapped=side, outcome=side)
                    )
            verdicts.append(
                verdict_record(
                    st.pair,
                    "pointwise",
                    self.settings,
                    self.ledger,
                    self.backend.model_id,
                    error=st.error,
                    orders={},
                    preferred=preferred,
                    reasons=reasons,
                    criteria=criteria,
                    scores=totals,
                    warnings=st.warnings,
                )
            )
        return verdicts
