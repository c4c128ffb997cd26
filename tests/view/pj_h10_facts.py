"""A results folder of evidence verdicts with facts of every kind, for the viewer's facts tests.

One verdict is judged for real: ``prefjudge score`` runs the sample task's tests on two
answers in the sandbox and ``prefjudge judge --method evidence --scores`` decides it on
correctness. The others are made by the evidence judge's own code
(:meth:`EvidenceJudge.verdict`, which weighs the facts and sets ``decided_by``) from facts
made as the judge makes them: the efficiency facts measured on scaled inputs carry the curve
of :mod:`prefjudge.judge.facts.perf_inputs.curve` (its points, growth and text, through
:meth:`EfficiencyDecision.to_fact`), so their ``detail`` has the real fields. They are
written through the verdict journal (as ``judge`` writes), and ``prefjudge view`` builds
the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pj_cli import SAMPLE_DIR, invoke, rows
from pj_verdicts import write_verdicts

from prefjudge.judge.common import JudgeSettings, Ledger
from prefjudge.judge.facts.efficiency import EfficiencyDecision
from prefjudge.judge.facts.judge import EvidenceJudge
from prefjudge.judge.facts.perf_inputs.curve import ScalePoint, combine, curve_text, growth
from prefjudge.records import Fact, Pair, Verdict

TASKS = SAMPLE_DIR / "tasks.jsonl"
CODES = {
    "m1": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
          "    return t == t[::-1]\n",
    "m2": "def is_palindrome(s):\n    return False\n",
}
HOSTILE_FACT = ("A's output </td></tr></table><script>window.PWNED=7;document.documentElement."
                "setAttribute('data-pwned','7')</script><img src=x onerror=\"window.PWNED=8;"
                "document.documentElement.setAttribute('data-pwned','8')\"> differs")
HOSTILE_SOURCE = 'A: scores <img src=x onerror="window.PWNED=9">.jsonl; B: judged here'
FACTORS = (16, 64, 256)
SECONDS_A = (1.9e-3, 1.9e-3 * 16, 1.9e-3 * 256)  # quadratic: 16 times dearer per 4 times the input
SECONDS_B = (8e-4, 3.2e-3, 1.28e-2)  # linear


@dataclass
class FactsBuilt:
    """The folder, its page and the verdicts written (as read back from their files)."""

    root: Path
    page: Path
    verdicts: dict[str, dict[str, Any]]


def scale_points(seconds_a: tuple[float, ...], seconds_b: tuple[float, ...],
                 factors: tuple[int, ...] = FACTORS) -> list[ScalePoint]:
    """One measured point per scale, with that scale's own decision (the dearer side loses)."""
    points = []
    for factor, a, b in zip(factors, seconds_a, seconds_b, strict=True):
        ratio = max(a, b) / min(a, b)
        outcome = "tie" if ratio < 1.2 else "A" if a < b else "B"
        points.append(ScalePoint(factor, outcome, {"A": a, "B": b}, ratio, 0.004, 25,
                                 f"x{factor}: the cheaper side is {outcome}"))
    return points


def curve_fact(points: list[ScalePoint], seed: str = "plus #61") -> Fact:
    """The efficiency fact of a pair measured on scaled inputs, as the judge writes it."""
    outcome, why = combine(points)
    top = points[-1]
    stats = {"net_s": {side: top.per_call_s[side] * top.rounds for side in "AB"},
             "ratio": top.ratio, "p_value": top.p_value,
             "scales": [point.to_dict() for point in points],
             "growth": {side: growth(points, side) for side in "AB"},
             "perf_inputs": {"seed": seed, "strategy": "doubling",
                             "factors": [point.factor for point in points]}}
    text = f"{curve_text(points)} (doubling of {seed}). At the x{top.factor} input: {top.fact}"
    if outcome != top.outcome or outcome == "tie":
        text += f"; {why}"
    names = tuple(f"x{point.factor} of {seed}" for point in points)
    samples = {side: [top.per_call_s[side] * top.rounds] * 3 for side in "AB"}
    decision = EfficiencyDecision(outcome, text, inputs=names, rounds=top.rounds,  # type: ignore[arg-type]
                                  samples=samples, stats=stats)
    return decision.to_fact()


def made_verdicts() -> list[Verdict]:
    """Verdicts whose facts cover every kind, every outcome, one curve and hostile text."""
    judge = EvidenceJudge(None, JudgeSettings(method="evidence"), Ledger())

    def pair(pair_id: str) -> Pair:
        return Pair(pair_id=pair_id, task_id="sample/is_palindrome", instruction="write it",
                    response_a="def f(): pass\n", response_b="def f(): return 1\n",
                    model_a="m1", model_b="m2")

    curve = curve_fact(scale_points(SECONDS_A, SECONDS_B))
    one_scale = curve_fact(scale_points((2e-3,), (2.1e-3,), (16,)))
    hostile_curve = curve_fact(scale_points(SECONDS_B, SECONDS_A))
    detail = json.loads(json.dumps(hostile_curve.detail))
    detail["scales"][0].update(fact=HOSTILE_FACT, per_call_s={"A": 8e-4, "B": None})
    hostile_curve = hostile_curve.model_copy(update={"fact": HOSTILE_FACT, "detail": detail})
    return [
        judge.verdict(pair("curve"), [
            Fact(kind="correctness", outcome="tie", fact="both pass their tests",
                 source="A: scores m1.jsonl; B: scores m2.jsonl"),
            Fact(kind="instructions", outcome="tie", fact="both follow the 2 instructions"),
            curve]),
        judge.verdict(pair("one-scale"), [one_scale]),
        judge.verdict(pair("failed"), [
            Fact(kind="security", outcome="insufficient", fact="no code to scan on side B"),
            Fact(kind="correctness", outcome="error", fact="the test harness failed")]),
        judge.verdict(pair("hostile"), [
            Fact(kind="correctness", outcome="tie", fact=HOSTILE_FACT, source=HOSTILE_SOURCE),
            hostile_curve]),
    ]


def _judged_for_real(root: Path, work: Path) -> Path:
    """Score two answers to the sample's is_palindrome and judge them on correctness."""
    scores = []
    for model, code in CODES.items():
        generations = work / f"{model}.jsonl"
        generations.write_text(json.dumps({
            "id": "sample/is_palindrome::single::k0::s0", "task_id": "sample/is_palindrome",
            "model": model, "response": f"```python\n{code}```\n", "instructions": [],
            "protocol": "single", "k": 0, "sample": 0}) + "\n", encoding="utf-8")
        scores.append(work / f"scores-{model}.jsonl")
        invoke("score", generations, "--tasks", TASKS, "-o", scores[-1], ok=True)
    out = root / "real" / "verdicts.jsonl"
    invoke("judge", work / "m1.jsonl", work / "m2.jsonl", "--tasks", TASKS, "--tests", TASKS,
           "--method", "evidence", "--criterion", "correctness", "--scores", scores[0],
           "--scores", scores[1], "-o", out, ok=True)
    return out


def build_facts_results(root: Path, work: Path) -> FactsBuilt:
    """Fill ``root`` with the verdicts and build its page with ``prefjudge view``."""
    real = _judged_for_real(root, work)
    made = write_verdicts(root / "evidence" / "verdicts.jsonl", made_verdicts())
    verdicts = {row["pair_id"]: row for path in (real, made) for row in rows(path)}
    invoke("view", root, ok=True)
    return FactsBuilt(root=root, page=root / "view.html", verdicts=verdicts)
