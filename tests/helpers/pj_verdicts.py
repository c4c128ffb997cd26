"""Evidence verdict files as ``prefjudge judge --method evidence`` writes them.

For the tests of what counts as a battle (issue 29): decided verdicts among three models,
many verdicts decided by no evidence (``decided_by: evidence:none``, winner ``tie``) and a
failed one. Each verdict is made by the evidence judge's own code
(:meth:`EvidenceJudge.verdict` from facts, :func:`prefjudge.judge.with_features` for the
style features) and written through the verdict journal (``Journal[Verdict]`` keyed by
``pair_id``, as :func:`prefjudge.judge.run` opens it), so the files hold what ``judge``
writes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from prefjudge.features import tokenizer_for
from prefjudge.journal import Journal
from prefjudge.judge import with_features
from prefjudge.judge.common import JudgeSettings, Ledger
from prefjudge.judge.facts.judge import EvidenceJudge
from prefjudge.records import NO_EVIDENCE, Fact, Pair, Verdict

MODELS = ("alpha", "beta", "gamma")
STRENGTH = {"alpha": 1.4, "beta": 0.5, "gamma": 0.0}
"""Log-strengths the decided verdicts are drawn from (alpha best)."""
TIE_SHARE = 0.1
DECIDED_TASKS = 40
"""Decided verdicts are on ``task/0`` … ``task/39``; the others also on tasks of their own."""

_FACTS = {
    "A": Fact(kind="correctness", outcome="A", fact="A passes its tests; B does not"),
    "B": Fact(kind="correctness", outcome="B", fact="B passes its tests; A does not"),
    "tie": Fact(kind="correctness", outcome="tie", fact="both pass their tests"),
    "none": Fact(kind="correctness", outcome="insufficient", fact="no tests for this task"),
    "error": Fact(kind="correctness", outcome="error", fact="the test harness failed"),
}


@dataclass
class VerdictSet:
    """Verdicts of one made-up evidence judging run, by what they are.

    Attributes:
        decided: Verdicts decided by a fact (``A``, ``B`` or a tie): battles.
        no_evidence: Verdicts decided by no evidence: not battles.
        errors: Failed verdicts: not battles.
    """

    decided: list[Verdict]
    no_evidence: list[Verdict]
    errors: list[Verdict]

    def everything(self) -> list[Verdict]:
        """Errors first, then decided and no-evidence verdicts interleaved, as a judge writes."""
        mixed: list[Verdict] = []
        ratio = max(1, round(len(self.no_evidence) / max(1, len(self.decided))))
        rest = iter(self.no_evidence)
        for verdict in self.decided:
            mixed.append(verdict)
            mixed.extend(v for _, v in zip(range(ratio), rest, strict=False))
        return [*self.errors, *mixed, *rest]

    def counted(self) -> list[Verdict]:
        """The same file with the no-evidence verdicts removed (errors first, as above)."""
        return [*self.errors, *self.decided]


def _response(rng: random.Random) -> str:
    """A response whose style features vary (length, headers, lists, bold)."""
    lines = ["## Answer"] * rng.randint(0, 2) + ["- a step"] * rng.randint(0, 4)
    lines.append("**Note:** " * rng.randint(0, 2) + "word " * rng.randint(5, 80))
    lines.append("```python\ndef f(x):\n    return x\n```")
    return "\n".join(lines) + "\n"


def _pair(index: int, a: str, b: str, task: str, rng: random.Random) -> Pair:
    return Pair(pair_id=f"p{index:04d}", task_id=task, instruction="write f",
                response_a=_response(rng), response_b=_response(rng), model_a=a, model_b=b,
                category="cat-even" if index % 2 else "cat-odd")


def _outcome(a: str, b: str, rng: random.Random) -> str:
    if rng.random() < TIE_SHARE:
        return "tie"
    p_a = 1.0 / (1.0 + pow(2.718281828459045, STRENGTH[b] - STRENGTH[a]))
    return "A" if rng.random() < p_a else "B"


def evidence_verdicts(decided: int = 300, no_evidence: int = 600, errors: int = 1,
                      seed: int = 7) -> VerdictSet:
    """Make the verdicts (deterministic for a seed).

    Args:
        decided: Verdicts a fact decides, spread over the three model pairs, both orders.
        no_evidence: Verdicts decided by no evidence (ties that are no battle).
        errors: Failed verdicts.
        seed: Seed of the outcomes and responses.

    Returns:
        The verdicts, by kind.
    """
    rng = random.Random(seed)
    judge = EvidenceJudge(None, JudgeSettings(method="evidence"), Ledger())
    counter = tokenizer_for(None)
    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1:]]
    made: dict[str, list[Verdict]] = {"decided": [], "none": [], "error": []}
    plan = [("decided", decided), ("none", no_evidence), ("error", errors)]
    index = 0
    for kind, count in plan:
        for _ in range(count):
            a, b = pairs[index % len(pairs)]
            if index % 2:
                a, b = b, a
            task = f"task/{index % DECIDED_TASKS}" if kind == "decided" else (
                f"task/{index % (DECIDED_TASKS + 20)}")
            pair = _pair(index, a, b, task, rng)
            side = _outcome(a, b, rng) if kind == "decided" else kind
            verdict = with_features(judge.verdict(pair, [_FACTS[side]]), pair, counter)
            made[kind].append(verdict)
            index += 1
    assert all(v.decided_by == NO_EVIDENCE and v.winner == "tie" for v in made["none"])
    assert all(v.status == "error" and v.winner is None for v in made["error"])
    return VerdictSet(made["decided"], made["none"], made["error"])


def write_verdicts(path: Path, verdicts: list[Verdict]) -> Path:
    """Write verdicts through the verdict journal, as ``prefjudge judge`` does.

    Args:
        path: The verdict file (a new one; its journal binding is written beside it).
        verdicts: The verdicts, in order.

    Returns:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with Journal(path, Verdict, lambda v: v.pair_id, stage="judge") as journal:
        journal.write_many(verdicts)
    return path
