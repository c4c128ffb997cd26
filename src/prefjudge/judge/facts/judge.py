"""The ``evidence`` and ``hybrid`` judging methods: facts first, the model only where needed.

``evidence`` weighs the kinds of evidence a pair's criterion names, in order
(``correctness,efficiency`` weighs correctness first): the first kind whose fact names a
side decides the pair (``decided_by = "evidence:<kind>"``). A kind that is ``insufficient``
for the pair (no tests for its task, no instructions) is passed over; a kind whose
analysis failed (``error``) stops the weighing, since a later kind cannot overrule what is
unknown, and the verdict is an error (never a tie). When every kind was weighed and none
separates the two, the verdict is a ``tie`` (some kind found them equal) or, when no kind
had facts at all, a tie with ``decided_by = "evidence:none"``, which ``rank`` does not
count as a battle.

The criterion of a pair is, in this order: ``--criterion`` (:attr:`JudgeSettings.criterion`),
the pair's own ``criterion`` (CodePrefBench: its split), else :data:`DEFAULT_ORDER`.

Instruction facts are checked under a verification profile (:attr:`EvidenceSettings.profile`,
``--profile``): ``strict`` unless told otherwise, so that a response cannot silence the check
it breaks (``# noqa``, ``# ruff: noqa``, ``# isort: skip_file``).

Facts the score stage found already are taken from its records
(:attr:`EvidenceSettings.scores`, ``--scores``; the rule is
:mod:`prefjudge.judge.facts.from_scores`), each fact naming its ``source``; the verdicts are
those judged without them.

``hybrid`` runs ``evidence`` and sends the pairs it leaves undecided (tie, no facts, or an
error) to the model-based method :attr:`JudgeSettings.fallback` (CriterAlign by default),
with every fact given to the judge as evidence; ``decided_by`` says which path decided
each verdict, and the evidence-decided verdicts cost no model call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from prefjudge.backends import Backend
from prefjudge.judge.common import JudgeMethod, JudgeSettings, Ledger, OnResult
from prefjudge.judge.facts.from_scores import ScoreFacts
from prefjudge.judge.facts.kinds import KIND_RUNNERS, EvidenceRun
from prefjudge.records import NO_EVIDENCE, SIDE_WINNERS, EvidenceKind, Fact, Pair, Verdict
from prefjudge.reporting import StageError
from prefjudge.scoring.profiles import JUDGE_PROFILE, get_profile

KINDS: tuple[EvidenceKind, ...] = ("correctness", "instructions", "efficiency", "security")
DEFAULT_ORDER: tuple[EvidenceKind, ...] = ("correctness", "instructions", "efficiency", "security")
"""What decides a pair that names no criterion: whether it works, then whether it follows
its instructions, then its cost, then its security findings."""

EVIDENCE_MODEL = "prefjudge-evidence"
"""``judge_model`` of verdicts no model took part in."""


@dataclass
class EvidenceSettings(JudgeSettings):
    """The settings of the methods that find facts (``evidence``, ``hybrid``).

    Attributes:
        profile: Verification profile of the instruction checks (``--profile``):
            ``strict`` (:data:`~prefjudge.scoring.profiles.JUDGE_PROFILE`) or ``reference``.
        scores: ``prefjudge score`` outputs whose records give sides' test outcomes and
            instruction checks (``--scores``; :mod:`prefjudge.judge.facts.from_scores`), or
            None: every fact is found here.
        perf_inputs: Where the efficiency fact's performance-exercising inputs come from
            (``--perf-inputs``): ``scaled`` (grown from the task's own inputs) or
            ``model`` (a generator the judge model writes, the scaled ones where it gives
            none; :mod:`prefjudge.judge.facts.perf_inputs.synthesized`).
    """

    profile: str = JUDGE_PROFILE
    scores: ScoreFacts | None = None
    perf_inputs: str = "scaled"


def evidence_profile(settings: JudgeSettings) -> str:
    """The verification profile facts are found under (strict for plain settings).

    Args:
        settings: The judge settings.

    Returns:
        A profile name.
    """
    return settings.profile if isinstance(settings, EvidenceSettings) else JUDGE_PROFILE


class CriterionError(ValueError):
    """A criterion names an unknown kind of evidence."""


def parse_criterion(text: str) -> tuple[EvidenceKind, ...]:
    """Parse ``correctness,efficiency`` into kinds, in order.

    Args:
        text: One kind, or several separated by commas (spaces allowed).

    Returns:
        The kinds, without repeats.

    Raises:
        CriterionError: On an empty text or an unknown kind.
    """
    kinds: list[EvidenceKind] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if part not in KINDS:
            raise CriterionError(
                f"unknown evidence kind {part!r} in criterion {text!r}; choose from "
                f"{', '.join(KINDS)} (several, in order, separated by commas)")
        if part not in kinds:
            kinds.append(part)  # type: ignore[arg-type]
    return tuple(kinds)


def pair_kinds(pair: Pair, settings: JudgeSettings) -> tuple[EvidenceKind, ...]:
    """The kinds that decide ``pair``, in order (see the module docstring)."""
    text = settings.criterion or pair.criterion
    return parse_criterion(text) if text else DEFAULT_ORDER


def weigh(facts: Sequence[Fact]) -> tuple[str | None, str, str | None]:
    """Combine facts weighed in order into ``(preferred, decided_by, error)``.

    Args:
        facts: The facts, in the order of the pair's criterion (weighing stopped at the
            first decisive one or the first error).

    Returns:
        ``preferred`` (``A``, ``B``, ``tie``, or None on error), ``decided_by``, and the
        error message when a kind's analysis failed.
    """
    for fact in facts:
        if fact.outcome in ("A", "B"):
            return fact.outcome, f"evidence:{fact.kind}", None
        if fact.outcome == "error":
            return None, f"evidence:{fact.kind}", f"{fact.kind} evidence: {fact.fact}"
    if any(fact.outcome == "tie" for fact in facts):
        return "tie", "evidence:" + "+".join(f.kind for f in facts if f.outcome == "tie"), None
    return "tie", NO_EVIDENCE, None


class EvidenceJudge(JudgeMethod):
    """Decide pairs from facts (no model call); see the module docstring."""

    def __init__(self, backend: Backend | None, settings: JudgeSettings, ledger: Ledger,
                 run: EvidenceRun | None = None):
        """A judge whose facts run under ``run`` (default: its own, over ``settings.tests``).

        A caller that gives ``run`` keeps it: a Ray worker's
        (:mod:`prefjudge.scale.judge_shard`), whose zygotes serve every shard it runs.
        """
        super().__init__(backend, settings, ledger)  # type: ignore[arg-type]
        if settings.criterion:
            parse_criterion(settings.criterion)  # fail before any work
        profile = get_profile(evidence_profile(settings)).name  # an unknown one fails here
        scores = settings.scores if isinstance(settings, EvidenceSettings) else None
        self.run = run if run is not None else EvidenceRun(settings.tests, profile=profile,
                                                           scores=scores)
        if getattr(settings, "perf_inputs", "scaled") == "model":
            if backend is None:
                raise StageError("--perf-inputs model needs a served judge model (--backend)")
            self.run.perf_client = backend

    def close(self) -> None:
        """Stop the sandbox zygotes kept across chunks."""
        self.run.close()

    def facts(self, pairs: Sequence[Pair],
              on_step: Callable[[], None] | None = None) -> list[list[Fact]]:
        """Weigh every pair's kinds in order, each kind for all pairs that still need it.

        Args:
            pairs: A chunk of pairs.
            on_step: Called after each pair's kind is weighed (progress).

        Returns:
            Per pair, the facts weighed, in order (stopping at the first decisive one or the
            first error).
        """
        plans = [list(pair_kinds(pair, self.settings)) for pair in pairs]
        facts: list[list[Fact]] = [[] for _ in pairs]
        open_ = set(range(len(pairs)))
        for step in range(max((len(p) for p in plans), default=0)):
            by_kind: dict[str, list[int]] = {}
            for index in sorted(open_):
                if step < len(plans[index]):
                    by_kind.setdefault(plans[index][step], []).append(index)
            for kind, indices in by_kind.items():
                found = KIND_RUNNERS[kind](self.run, [pairs[i] for i in indices])
                for index, fact in zip(indices, found, strict=True):
                    facts[index].append(fact)
                    if fact.outcome in ("A", "B", "error"):
                        open_.discard(index)
                    if on_step is not None:
                        on_step()
        return facts

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk of pairs from their facts alone."""
        return self.decide(pairs, self.facts(pairs), on_result)

    def decide(self, pairs: list[Pair], facts: Sequence[list[Fact]],
               on_result: OnResult | None = None) -> list[Verdict]:
        """The verdicts of a chunk whose facts were found already (here or on a Ray node).

        Args:
            pairs: A chunk of pairs.
            facts: Per pair, its facts from :meth:`facts`.
            on_result: Called per backend result (unused: no model is asked).

        Returns:
            One verdict per pair, in order.
        """
        del on_result
        return [self.verdict(pair, found) for pair, found in zip(pairs, facts, strict=True)]

    def verdict(self, pair: Pair, facts: list[Fact], method: str = "evidence") -> Verdict:
        """The evidence verdict of one pair."""
        preferred, decided_by, error = weigh(facts)
        winner = SIDE_WINNERS.get(preferred or "")
        reason = "; ".join(f"{f.kind}: {f.fact}" for f in facts)
        return Verdict(
            pair_id=pair.pair_id, task_id=pair.task_id, model_a=pair.model_a,
            model_b=pair.model_b, method=method,  # type: ignore[arg-type]
            status="error" if error else "ok", winner=winner,  # type: ignore[arg-type]
            preferred=preferred,  # type: ignore[arg-type]
            reasons={"evidence": reason}, label=pair.label, category=pair.category,
            error=error, judge_model=EVIDENCE_MODEL, facts=facts, decided_by=decided_by,
            evidence=True,
        )


def fact_lines(facts: Sequence[Fact], side: str) -> list[str]:
    """Facts as evidence lines for one side of the LLM judge's prompt."""
    lines = []
    for fact in facts:
        if fact.outcome == "insufficient":
            continue
        lines.append(f"{fact.kind}: {fact.fact}" + (
            " (this side is better here)" if fact.outcome == side else ""))
    return lines


class HybridJudge(EvidenceJudge):
    """Evidence first; the model-based fallback method for the pairs it leaves undecided.

    Attributes:
        fallback_methods: The model-based methods it may fall back on, by name; the
            registry (:data:`prefjudge.judge.METHODS`) fills it in, so this module never
            imports the registry that imports it.
    """

    fallback_methods: ClassVar[Mapping[str, type[JudgeMethod]]] = {}

    def __init__(self, backend: Backend, settings: JudgeSettings, ledger: Ledger):
        super().__init__(backend, settings, ledger)
        method = self.fallback_methods.get(settings.fallback)
        if method is None:
            raise ValueError(f"hybrid: the fallback must be a model-based method "
                             f"({', '.join(self.fallback_methods)}), not {settings.fallback!r}")
        fallback_settings = replace(settings, method=settings.fallback, evidence=True)
        self.fallback = method(backend, fallback_settings, ledger)

    def decide(self, pairs: list[Pair], facts: Sequence[list[Fact]],
               on_result: OnResult | None = None) -> list[Verdict]:
        """Judge a chunk: evidence verdicts where a fact decides, the model elsewhere."""
        all_facts = list(facts)
        verdicts: list[Verdict | None] = [None] * len(pairs)
        undecided: list[int] = []
        for index, (pair, found) in enumerate(zip(pairs, all_facts, strict=True)):
            preferred, _decided_by, _error = weigh(found)
            if preferred in ("A", "B"):
                verdicts[index] = self.verdict(pair, found, method="hybrid")
            else:
                undecided.append(index)
        if undecided:
            asked = [pairs[i].model_copy(update={
                "evidence_a": [*pairs[i].evidence_a, *fact_lines(all_facts[i], "A")],
                "evidence_b": [*pairs[i].evidence_b, *fact_lines(all_facts[i], "B")],
            }) for i in undecided]
            for index, judged in zip(undecided, self.fallback.judge(asked, on_result),
                                     strict=True):
                verdicts[index] = judged.model_copy(update={
                    "method": "hybrid", "facts": all_facts[index], "decided_by": "llm",
                    "warnings": [*judged.warnings,
                                 f"fallback: {self.settings.fallback} (evidence left it "
                                 f"{weigh(all_facts[index])[1]})"],
                })
        return [v for v in verdicts if v is not None]
