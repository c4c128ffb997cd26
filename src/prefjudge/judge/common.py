"""What every judging method shares: settings, prompt assembly, batched calls, cost ledger."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from prefjudge.backends import Backend, Request, Result, Sampling, chat
from prefjudge.judge.methods import CallsBound
from prefjudge.judge.methods import MethodTraits as MethodTraits  # its old home
from prefjudge.judge.prompts import fence, load_template
from prefjudge.judge.schemas import keyed_items
from prefjudge.records import Criterion, Pair, Side, Usage, Verdict

if TYPE_CHECKING:  # fields' types only: guidance's models load with --guidance
    from prefjudge.judge.guidance import Guidance
    from prefjudge.records import Task

OnResult = Callable[[Result], None]
ORDERS = (("forward", False), ("swapped", True))

# which guidance section each template reads
GUIDANCE_STAGE = {
    "criteria": "criteria",
    "refine": "criteria",
    "criterion_judge": "judging",
    "pointwise": "judging",
    "synthesis": "final",
    "monolithic": "final",
}


@dataclass
class JudgeSettings:
    """How to judge.

    Attributes:
        method: A registered method's name (:data:`prefjudge.judge.METHODS`).
        min_criteria: Fewest criteria to ask for (the paper: 16).
        max_criteria: Most criteria kept (the paper: 20); extra ones are dropped.
        refine: Split tied criteria into finer sub-criteria (stage 4).
        max_refine: Most tied criteria refined per pair.
        evidence: Give the judge the pairs' deterministic evidence.
        guidance: HPAG guidance to inject, or None.
        templates: A folder of prompt templates overriding ``rubrics/judge/``.
        sampling: Sampling for every judge call.
        criterion: For ``evidence`` and ``hybrid``: the evidence kinds that decide every
            pair, in order (``correctness,efficiency``), overriding the pairs' own
            ``criterion``; None uses the pair's, else the default order.
        tests: For ``evidence`` and ``hybrid``: tasks by id whose tests (and inputs) the
            correctness and efficiency evidence run.
        fallback: For ``hybrid``: the model-based method that judges the pairs the evidence
            leaves undecided.
        tokenizer: Whose tokenizer counts the responses' ``token_len`` style feature (a
            model name or folder with a ``tokenizer.json`` found offline); None: the
            fallback counter (:func:`prefjudge.features.tokenizer_for`).
    """

    method: str = "criteralign"
    min_criteria: int = 16
    max_criteria: int = 20
    refine: bool = True
    max_refine: int = 8
    evidence: bool = False
    guidance: Guidance | None = None
    templates: str | None = None
    sampling: Sampling = field(default_factory=lambda: Sampling(max_tokens=2048))
    criterion: str | None = None
    tests: Mapping[str, Task] = field(default_factory=dict)
    fallback: str = "criteralign"
    tokenizer: str | None = None

    def __post_init__(self) -> None:
        """Check the criteria bounds."""
        if not 1 <= self.min_criteria <= self.max_criteria:
            raise ValueError("need 1 <= min_criteria <= max_criteria")


def flip(side: Any) -> Any:
    """Map a verdict given with B shown first back to the pair's labels (A↔B)."""
    return {"A": "B", "B": "A"}.get(side, side)


def combine_orders(forward: Side | None, swapped: Side | None) -> Side | None:
    """The verdict of both orders: agreement stands, disagreement is a tie, missing is None."""
    if forward is None or swapped is None:
        return None
    return forward if forward == swapped else "tie"


def criteria_text(criteria: Sequence[Criterion]) -> str:
    """Return criteria as ``id: text`` lines."""
    return "\n".join(f"{c.id}: {c.text}" for c in criteria)


def evidence_text(pair: Pair, swapped: bool, enabled: bool) -> str:
    """Return the evidence section for one order (empty when disabled or absent)."""
    if not enabled or not (pair.evidence_a or pair.evidence_b):
        return ""
    first, second = (
        (pair.evidence_b, pair.evidence_a) if swapped else (pair.evidence_a, pair.evidence_b)
    )
    lines = ["", "## Facts established by running the code (you may cite them)"]
    for name, facts in (("Answer A", first), ("Answer B", second)):
        lines.append(f"{name}:")
        lines.extend(f"- {fact}" for fact in facts) if facts else lines.append("- (none)")
    return "\n".join(lines) + "\n"


class PromptBuilder:
    """Builds the requests of one method for pairs, with guidance and evidence in place."""

    def __init__(self, settings: JudgeSettings):
        self.settings = settings

    def guidance(self, stage: str, pair: Pair) -> str:
        """The ``{{guidance}}`` slot of ``stage`` for ``pair``."""
        guidance = self.settings.guidance
        if guidance is None:
            return ""
        return guidance.block(GUIDANCE_STAGE[stage], pair.category)

    def request(
        self,
        request_id: str,
        stage: str,
        schema: type[BaseModel],
        *,
        pair: Pair,
        swapped: bool = False,
        **values: str,
    ) -> Request:
        """Render ``stage``'s template for one pair in one order.

        Args:
            request_id: The request's id.
            stage: Template name.
            schema: The reply schema.
            pair: The pair.
            swapped: Show B first (as "Answer A").
            **values: Further placeholder values (criteria, verdicts, ...).

        Returns:
            The request.
        """
        first, second = (
            (pair.response_b, pair.response_a) if swapped else (pair.response_a, pair.response_b)
        )
        template = load_template(stage, self.settings.templates)
        fields = {
            "instruction": pair.instruction.strip(),
            "response_a": fence(first),
            "response_b": fence(second),
            "guidance": self.guidance(stage, pair),
            "evidence": evidence_text(pair, swapped, self.settings.evidence),
            **values,
        }
        used = {
            k: v for k, v in fields.items() if "{{" + k + "}}" in template.system + template.user
        }
        system, user = template.render(**used)
        return chat(
            request_id,
            ("system", system),
            user,
            schema_model=schema,
            sampling=self.settings.sampling,
        )

    def both_orders(
        self,
        index: int,
        pair: Pair,
        label: str,
        stage: str,
        schema: type[BaseModel],
        values: Callable[[bool], dict[str, str]] | None = None,
    ) -> list[Job]:
        """The two jobs of one step: A shown first (``forward``), then B (``swapped``).

        Args:
            index: The pair's position in its chunk (job keys are ``(index, order)``).
            pair: The pair.
            label: Step name in request ids (``<pair_id>:<label>:<order>``).
            stage: Template name.
            schema: Reply schema.
            values: Extra placeholder values for one order (argument: ``swapped``).

        Returns:
            Two jobs.
        """
        return [
            Job(
                pair.pair_id,
                (index, order),
                self.request(
                    f"{pair.pair_id}:{label}:{order}",
                    stage,
                    schema,
                    pair=pair,
                    swapped=swapped,
                    **(values(swapped) if values else {}),
                ),
            )
            for order, swapped in ORDERS
        ]


class JudgeMethod:
    """Base of the judging methods: a backend, settings, a cost ledger and a prompt builder.

    Each method says, as class attributes, what it needs and costs; read them through
    :func:`prefjudge.judge.method_traits`, which resolves a method that delegates its model
    calls to a fallback. A method registers itself by name
    (:func:`prefjudge.judge.methods.judge_method`).

    Attributes:
        needs_model: It asks a judge model.
        needs_tests: It runs the pairs' tests (evidence).
        uses_fallback: Its model calls are those of ``JudgeSettings.fallback``, made for the
            pairs it leaves undecided (``hybrid``).
        calls_per_pair: Model calls per judged pair (its own; a lower bound when
            ``calls_bound`` is ``≥``).
        calls_bound: How ``calls_per_pair`` bounds the real calls.
        template_stages: The prompt templates it renders (``rubrics/judge/<stage>.md``),
            checked before judging (:data:`prefjudge.judge.prompts.METHOD_STAGES`).
    """

    needs_model: ClassVar[bool] = True
    needs_tests: ClassVar[bool] = False
    uses_fallback: ClassVar[bool] = False
    calls_per_pair: ClassVar[int] = 0
    calls_bound: ClassVar[CallsBound] = ""
    template_stages: ClassVar[tuple[str, ...]] = ()

    def __init__(self, backend: Backend, settings: JudgeSettings, ledger: Ledger):
        self.backend = backend
        self.settings = settings
        self.ledger = ledger
        self.prompts = PromptBuilder(settings)

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk of pairs; one verdict per pair, in order."""
        raise NotImplementedError


@dataclass
class Ledger:
    """Per-pair cost accounting over backend results, in the backends' :class:`Usage` counters.

    A result carries no transport retries or invalid replies, so those two counters stay
    zero (and out of the written ``cost``).
    """

    costs: dict[str, Usage] = field(default_factory=dict)

    def add(self, pair_id: str, result: Result) -> None:
        """Count one result against a pair."""
        cost = self.costs.setdefault(pair_id, Usage())
        cost.requests += 1
        cost.model_calls += 0 if result.cached else result.attempts
        cost.cache_hits += 1 if result.cached else 0
        cost.prompt_tokens += result.prompt_tokens
        cost.completion_tokens += result.completion_tokens
        cost.errors += 0 if result.ok else 1

    def cost(self, pair_id: str) -> Usage:
        """The pair's cost so far (a copy)."""
        return self.costs.get(pair_id, Usage()).model_copy()


@dataclass
class Job:
    """One request and which pair and step it serves."""

    pair_id: str
    key: tuple[Any, ...]
    request: Request


def run_jobs(
    backend: Backend, jobs: list[Job], ledger: Ledger, on_result: OnResult | None = None
) -> dict[tuple[Any, ...], Result]:
    """Send a batch of jobs, count their cost per pair, return results by job key."""
    if not jobs:
        return {}
    results = backend.generate([job.request for job in jobs], on_result=on_result)
    out: dict[tuple[Any, ...], Result] = {}
    for job, result in zip(jobs, results, strict=True):
        ledger.add(job.pair_id, result)
        out[job.key] = result
    return out


def order_replies(
    results: dict[tuple[Any, ...], Result], index: int, label: str
) -> tuple[list[tuple[str, bool, Any]], str | None]:
    """The parsed replies of one step asked in both orders (jobs of :meth:`both_orders`).

    Args:
        results: Results by job key.
        index: The pair's position in its chunk.
        label: Step name for the failure message.

    Returns:
        ``([(order, swapped, reply), ...], error)``: on the first failed order, the replies
        before it and ``"<label> (<order>): <why>"``; otherwise both replies and None.
    """
    replies: list[tuple[str, bool, Any]] = []
    for order, swapped in ORDERS:
        result = results[(index, order)]
        if not result.ok:
            return replies, failure(f"{label} ({order})", result)
        replies.append((order, swapped, result.parsed))
    return replies, None


def keyed_verdicts(verdicts: BaseModel, swapped: bool) -> dict[str, tuple[Any, str]]:
    """``id → (verdict, reason)`` of a reply keyed by id, mapped back to the pair's A/B."""
    return {
        key: (flip(item.verdict) if swapped else item.verdict, item.reason)
        for key, item in keyed_items(verdicts)
    }


def failure(stage: str, result: Result) -> str:
    """Describe a failed request for a verdict's ``error``."""
    snippet = (result.text or "").strip().replace("\n", " ")[:160]
    tail = f"; reply began {snippet!r}" if snippet else ""
    return f"{stage}: {result.error_kind or 'error'}: {result.error}{tail}"
