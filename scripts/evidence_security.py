"""Measure the security evidence rules on CodePrefBench's security split (207 pairs).

For every candidate rule: accuracy with ties and errors counted half (the benchmark counts
ties half; an ``error`` is the judge abstaining, so it is counted like a tie here and, as a
worst case, as wrong in its own column), the number of ties and errors, and the accuracy on
the pairs the rule decided. Then a split-half check: the best rule is picked on one half of
the pairs and reported on the other.

Usage:
    .venv/bin/python scripts/evidence_security.py [PATH] [--seed N]

PATH defaults to ../shared/data/preferences/codeprefbench/security-alignment.jsonl.gz.
The code is only parsed by the analysers (bandit, Ruff), never run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.judge.facts.security import (
    BANDIT_PIN,
    RANK_WEIGHTS,
    SecurityReport,
    bandit_version,
    compare_reports,
    security_findings_batch,
)
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Pair
from prefjudge.scoring.verify.extract import last_python_block
from prefjudge.scoring.verify.ruff_engine import RuffConfig, ruff_version, run_ruff

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared/data/preferences/codeprefbench/security-alignment.jsonl.gz"
CHOSEN = "bandit sev×conf 1/3/9 + partial"

# Ruff's S rules re-implement bandit's tests under the same numbers (S602 = B602). For the
# "Ruff S weighted" candidate each rule gets the severity and confidence bandit's own test
# reports (bandit 1.9.4 plugin and blacklist sources; the highest when it depends on the
# call). Ruff says "seems safe" for the low-severity variants of S602/S605.
_RUFF_HIGH = {"S201", "S202", "S304", "S305", "S312", "S323", "S324", "S401", "S402",
              "S411", "S412", "S413", "S415", "S501", "S502", "S507", "S602", "S605",
              "S609", "S612", "S701"}
_RUFF_LOW = {"S101", "S105", "S106", "S107", "S110", "S112", "S311", "S403", "S404", "S405",
             "S406", "S407", "S408", "S409", "S410", "S504", "S603", "S606", "S607"}
_RUFF_CONFIDENCE = {"S104": "MEDIUM", "S105": "MEDIUM", "S106": "MEDIUM", "S107": "MEDIUM",
                    "S108": "MEDIUM", "S113": "LOW", "S201": "MEDIUM", "S503": "MEDIUM",
                    "S504": "MEDIUM", "S507": "MEDIUM", "S601": "MEDIUM", "S604": "LOW",
                    "S606": "MEDIUM", "S608": "MEDIUM", "S609": "MEDIUM", "S610": "MEDIUM",
                    "S611": "MEDIUM"}


def ruff_weight(code: str, message: str) -> int:
    """Weight of one Ruff S finding: bandit's severity × confidence of the same test."""
    severity = "HIGH" if code in _RUFF_HIGH else "LOW" if code in _RUFF_LOW else "MEDIUM"
    if code in ("S602", "S605") and "seems safe" in message:
        severity = "LOW"
    confidence = _RUFF_CONFIDENCE.get(code, "HIGH")
    return RANK_WEIGHTS[severity] * RANK_WEIGHTS[confidence]


@dataclass
class RuffResult:
    """Ruff's S findings on one code: ``(code, message)`` pairs, and how many syntax errors
    it reported (Ruff still lints what its error-tolerant parser recovered)."""

    findings: list[tuple[str, str]]
    syntax_errors: int = 0


def ruff_s(codes: Sequence[str]) -> list[RuffResult]:
    """Ruff's S rules (stable, no preview) on every code, in one run."""
    config = RuffConfig.build(["S"], False, {})
    with tempfile.TemporaryDirectory(prefix="evidence-security-") as workdir:
        names = []
        for index, code in enumerate(codes):
            name = f"r{index:05d}.py"
            Path(workdir, name).write_text(code, encoding="utf-8")
            names.append(name)
        report = run_ruff(config, names, workdir=Path(workdir))
    results = [RuffResult([]) for _ in codes]
    for item in report:
        index = int(Path(item["filename"]).stem[1:])
        code = item.get("code")
        if code and code.startswith("S"):
            results[index].findings.append((code, item.get("message", "")))
        else:
            results[index].syntax_errors += 1
    return results


# A rule maps (pair index) to a predicted side: "A", "B", "tie" or "error".
Rule = Callable[[int], str]


def by_score(score_a: float | None, score_b: float | None) -> str:
    """Lower score is safer; None (no analysis) is an error."""
    if score_a is None or score_b is None:
        return "error"
    if score_a == score_b:
        return "tie"
    return "A" if score_a < score_b else "B"


def bandit_score(report: SecurityReport, weigh: Callable[[Any], float], *,
                 strict: bool = True) -> float | None:
    """A bandit report's score; None when it is an error (or partial, when strict)."""
    if report.status == "error" or (strict and report.status == "partial"):
        return None
    return sum(weigh(f) for f in report.findings)


def rules(reports: Sequence[SecurityReport], ruff: Sequence[RuffResult]) -> dict[str, Rule]:
    """The candidate rules, by name (each has no free parameter beyond what is named)."""
    def a(i: int) -> int:
        return 2 * i

    def b(i: int) -> int:
        return 2 * i + 1

    def ruff_count(i: int) -> str:
        return by_score(len(ruff[a(i)].findings), len(ruff[b(i)].findings))

    def ruff_count_with_syntax(i: int) -> str:
        return by_score(*(len(ruff[j].findings) + ruff[j].syntax_errors for j in (a(i), b(i))))

    def ruff_weighted(i: int) -> str:
        return by_score(*(sum(ruff_weight(c, m) for c, m in ruff[j].findings)
                          for j in (a(i), b(i))))

    def bandit_rule(weigh: Callable[[Any], float]) -> Rule:
        return lambda i: by_score(bandit_score(reports[a(i)], weigh),
                                  bandit_score(reports[b(i)], weigh))

    def rank(name: str, scale: dict[str, int]) -> int:
        return scale.get(name, 0)

    linear = {"LOW": 1, "MEDIUM": 2, "HIGH": 3}
    sev_conf = bandit_rule(lambda f: f.weight)

    def combined(i: int) -> str:
        decided = sev_conf(i)
        return ruff_weighted(i) if decided == "error" else decided

    return {
        "Ruff S count + syntax errors (baseline)": ruff_count_with_syntax,
        "Ruff S count": ruff_count,
        "Ruff S weighted (bandit's ratings)": ruff_weighted,
        "bandit count": bandit_rule(lambda f: 1),
        "bandit severity 1/3/9": bandit_rule(lambda f: rank(f.severity, RANK_WEIGHTS)),
        "bandit sev×conf 1/2/3": bandit_rule(
            lambda f: rank(f.severity, linear) * rank(f.confidence, linear)),
        "bandit sev×conf 1/3/9": sev_conf,
        "bandit sev×conf, else Ruff weighted": combined,
        CHOSEN: lambda i: compare_reports(reports[a(i)], reports[b(i)]).outcome,
    }


@dataclass
class Score:
    """How one rule did on some pairs."""

    correct: int = 0
    wrong: int = 0
    ties: int = 0
    errors: int = 0

    @property
    def n(self) -> int:
        return self.correct + self.wrong + self.ties + self.errors

    @property
    def accuracy(self) -> float:
        """Ties and errors counted half."""
        return (self.correct + 0.5 * (self.ties + self.errors)) / max(self.n, 1)

    @property
    def accuracy_errors_wrong(self) -> float:
        return (self.correct + 0.5 * self.ties) / max(self.n, 1)

    @property
    def decided(self) -> float:
        return self.correct / max(self.correct + self.wrong, 1)


def score(rule: Rule, pairs: Sequence[Pair], indices: Sequence[int]) -> Score:
    """Score a rule on the pairs at ``indices``."""
    result = Score()
    for i in indices:
        side = rule(i)
        if side == "tie":
            result.ties += 1
        elif side == "error":
            result.errors += 1
        elif side == pairs[i].label:
            result.correct += 1
        else:
            result.wrong += 1
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--seed", type=int, default=0, help="seed of the split-half check")
    args = parser.parse_args(argv)
    if not args.path.is_file():
        print(f"no such file: {args.path}", file=sys.stderr)
        return 2
    pairs, _ = load_codeprefbench(args.path)
    codes = [code for p in pairs for code in (p.response_a, p.response_b)]
    version = bandit_version()
    if version != BANDIT_PIN:
        print(f"warning: bandit {version} installed, prefjudge pins {BANDIT_PIN}",
              file=sys.stderr)
    started = time.perf_counter()
    reports = security_findings_batch(codes)
    bandit_s = time.perf_counter() - started
    started = time.perf_counter()
    ruff = ruff_s([last_python_block(code) for code in codes])
    ruff_s_time = time.perf_counter() - started
    statuses = {s: sum(r.status == s for r in reports) for s in ("ok", "partial", "error")}
    print(f"{len(pairs)} pairs ({args.path.name}); bandit {version}, ruff {ruff_version()}, "
          f"Python {sys.version_info[0]}.{sys.version_info[1]}")
    print(f"bandit: {len(codes)} responses in {bandit_s:.1f} s "
          f"({len(codes) / bandit_s:.0f}/s, batched); reports {statuses}")
    print(f"ruff:   {len(codes)} responses in {ruff_s_time:.2f} s; "
          f"{sum(r.syntax_errors > 0 for r in ruff)} with syntax errors\n")

    candidates = rules(reports, ruff)
    everything = range(len(pairs))
    header = f"{'rule':40} {'acc':>6} {'acc*':>6} {'ties':>5} {'errors':>6} {'decided-acc':>16}"
    print(header)
    print("-" * len(header))
    for name, rule in candidates.items():
        s = score(rule, pairs, everything)
        mark = "  <- chosen" if name == CHOSEN else ""
        print(f"{name:40} {100 * s.accuracy:5.1f}% {100 * s.accuracy_errors_wrong:5.1f}% "
              f"{s.ties:5d} {s.errors:6d} {100 * s.decided:6.1f}% ({s.correct:3d}/"
              f"{s.correct + s.wrong:3d}){mark}")
    print("\nThe baseline counts every Ruff diagnostic of an S run, syntax errors included.")
    print("acc: ties and errors counted half; acc*: errors counted wrong; decided-acc: on "
          "the pairs the rule named a side.")
    print("Free parameters: none are fitted. The weights are bandit's own LOW/MEDIUM/HIGH "
          "ratings on a fixed 1/3/9 scale; 'partial' adds a rule with no parameter.")

    order = list(everything)
    random.Random(args.seed).shuffle(order)
    halves = (order[: len(order) // 2], order[len(order) // 2 :])
    print(f"\nSplit-half check (seed {args.seed}): pick the best rule on one half, report it on "
          "the other")
    for pick, report in (halves, halves[::-1]):
        best = max(candidates, key=lambda name: score(candidates[name], pairs, pick).accuracy)
        held = score(candidates[best], pairs, report)
        print(f"  picked {best!r} on {len(pick)} pairs "
              f"({100 * score(candidates[best], pairs, pick).accuracy:.1f}%), "
              f"held-out {len(report)} pairs: {100 * held.accuracy:.1f}%")
    print(f"\nChosen: {CHOSEN} (prefjudge.judge.facts.security).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
