"""User-aware comparison: two models' responses judged per dimension for one user.

All dimensions are judged in one call per order (A first, then B first); a dimension's
outcome is the verdict both orders agree on, and a disagreement is a tie (position bias
cannot pick a winner). The judge sees the persona's output preferences, or a generic
developer for generic judging. A failed call makes the comparison an ``error`` with its
reason — never a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prefjudge.backends import Backend, Sampling, chat
from prefjudge.features import response_features, tokenizer_for
from prefjudge.judge.common import (
    ORDERS,
    Job,
    Ledger,
    OnResult,
    combine_orders,
    keyed_verdicts,
    order_replies,
    run_jobs,
)
from prefjudge.judge.prompts import fence, load_template
from prefjudge.judge.schemas import dimension_schema
from prefjudge.persona.profile import Dimension, output_profile_text
from prefjudge.records import DimensionVerdict, Persona, PersonaComparison

REASON_MAX = 400


@dataclass(frozen=True)
class ComparisonItem:
    """Two responses to one task.

    Attributes:
        task_id: The task.
        instruction: The prompt both models answered.
        response_a: Model A's response.
        response_b: Model B's response.
        model_a: Model A's name.
        model_b: Model B's name.
        condition: ``original`` or ``persona``.
    """

    task_id: str
    instruction: str
    response_a: str
    response_b: str
    model_a: str
    model_b: str
    condition: Literal["original", "persona"]


def _jobs(items: Sequence[ComparisonItem], persona: Persona | None,
          dimensions: Sequence[Dimension], sampling: Sampling) -> list[Job]:
    """One request per item and order: the pair shown in that order, judged per dimension."""
    ids = tuple(d.id for d in dimensions)
    schema = dimension_schema(ids)
    listing = "\n".join(f"{d.id}: {d.name} — {d.description}" for d in dimensions)
    user = output_profile_text(persona)
    template = load_template("compare")
    tag = persona.name if persona else "generic"
    jobs = []
    for i, item in enumerate(items):
        for order, swapped in ORDERS:
            first, second = (
                (item.response_b, item.response_a)
                if swapped
                else (item.response_a, item.response_b)
            )
            system, text = template.render(
                user=user,
                instruction=item.instruction.strip(),
                response_a=fence(first),
                response_b=fence(second),
                dimensions=listing,
            )
            request = chat(
                f"{item.task_id}:{item.condition}:{tag}:compare:{order}",
                ("system", system),
                text,
                schema_model=schema,
                sampling=sampling,
            )
            jobs.append(Job(f"{item.condition}:{item.task_id}", (i, order), request))
    return jobs


def _dimension_verdicts(replies: list[tuple[str, bool, Any]],
                        ids: Sequence[str]) -> list[DimensionVerdict]:
    """Both orders' keyed replies combined per dimension (every dimension is in both)."""
    fwd, swp = (keyed_verdicts(reply.verdicts, sw) for _o, sw, reply in replies)
    return [
        DimensionVerdict(
            dimension=dim,
            forward=fwd[dim][0],
            swapped=swp[dim][0],
            outcome=combine_orders(fwd[dim][0], swp[dim][0]),
            reason_forward=fwd[dim][1],
            reason_swapped=swp[dim][1],
        )
        for dim in ids
    ]


def compare(
    items: Sequence[ComparisonItem],
    persona: Persona | None,
    dimensions: Sequence[Dimension],
    backend: Backend,
    sampling: Sampling,
    on_result: OnResult | None = None,
) -> list[PersonaComparison]:
    """Judge every item on every dimension, both orders, for one user.

    Args:
        items: The response pairs.
        persona: Whose output preferences the judge applies; None for a generic user.
        dimensions: The dimensions.
        backend: The judge model.
        sampling: Sampling parameters.
        on_result: Called per backend result (progress).

    Returns:
        One comparison per item, in order.
    """
    ids = tuple(d.id for d in dimensions)
    jobs = _jobs(items, persona, dimensions, sampling)
    ledger = Ledger()
    results = run_jobs(backend, jobs, ledger, on_result)
    counter = tokenizer_for(None)  # one counter for every response: counts compare
    out = []
    for i, item in enumerate(items):
        replies, error = order_replies(results, i, "compare")
        verdicts = _dimension_verdicts(replies, ids) if error is None else []
        out.append(
            PersonaComparison(
                task_id=item.task_id,
                condition=item.condition,
                persona=persona.name if persona else None,
                model_a=item.model_a,
                model_b=item.model_b,
                status="error" if error else "ok",
                dimensions=verdicts,
                error=error,
                judge_model=backend.model_id,
                cost=ledger.cost(f"{item.condition}:{item.task_id}"),
                features_a=response_features(item.response_a, counter),
                features_b=response_features(item.response_b, counter),
                features_by=counter.name,
            )
        )
    return out
