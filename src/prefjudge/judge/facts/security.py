"""Security evidence: bandit's findings in both responses, weighted by severity and confidence.

Each response's code is the code its tests run: for a pair,
:func:`~prefjudge.judge.facts.correctness.response_code` (the function the correctness and
efficiency facts run code from); for a response given alone,
:func:`~prefjudge.scoring.verify.extract.code_of` as that function calls it (a response
that is code as a whole, a sample file's ``solution``, as it is). A usage example after
the tested block is never what is analysed. The code is written to a temporary file and
analysed by bandit (:data:`BANDIT_PIN`), run as a subprocess of the same Python
(``python -m bandit``) over many files at once; the code is parsed, never executed. Bandit
runs with its default tests, ``--ignore-nosec`` (a response cannot silence a finding with a
``# nosec`` comment) and no configuration file.

Beside bandit's findings stand those of :func:`unresolved_findings` (rules ``PJ001`` to
``PJ004``, :data:`UNRESOLVED_PASS`): a call bandit cannot resolve (a dynamic import of
``os``, ``getattr(subprocess, ...)``, ``sys.modules['pickle']``, a module passed on under
another name) has no bandit finding, so hiding a call that way would lower a response's
risk; each such way counts against the response, as heavy as the worst call on that module.

A finding weighs ``severity × confidence`` with ``LOW, MEDIUM, HIGH = 1, 3, 9`` for both
(:data:`RANK_WEIGHTS`; a fixed scale, nothing fitted to data), and a response's ``risk`` is
the sum over its findings. The response with the lower risk is the safer one; equal risks
are a tie. On CodePrefBench's security split this decides every pair bandit can parse on
both sides correctly except five ties (``scripts/evidence_security.py`` measures it,
beside Ruff's ``S`` rules and plain counts).

Code that does not parse is never counted as clean. When a prefix of whole lines parses
(generations cut off mid-statement are common), that prefix is analysed and the report is
``partial``: its risk is a lower bound. A partial report decides a pair only when that
cannot be wrong about what was analysed: the other side is fully analysed and has a lower
risk than the partial side's lower bound, or both are partial and the text left
unanalysed is the same on both sides (so the difference lies in what was analysed).
Otherwise, and when nothing parses or bandit itself fails, the outcome is ``error``.

A response's report does not depend on the other responses analysed with it. Bandit's time
is not linear in the code's size: a dict or list of N string literals on N lines costs it
N² steps (4,000 lines take seconds, 28,000 lines over five minutes). So its work on each
file is estimated before it runs (:func:`bandit_work`, linear in the code), and code over
:data:`MAX_WORK` (2-3 s of bandit's CPU) is an ``error`` that names the bound, without
running bandit. The rest is batched into runs of at most :data:`CHUNK_FILES` files and
:data:`CHUNK_WORK`. A run that fails or times out anyway (a shape the estimate misses) is
split into :data:`SPLIT_PARTS` parts that are rerun, down to single files: only a file that
fails alone is an ``error`` (a timeout one with the reason ``bandit timed out after 60 s``,
never a clean report), and every other file gets the report it gets alone. A file that
makes runs time out costs at most three timeouts (its run of up to 250 files, its part of
up to 16, itself) and one more trivial run that tells a broken bandit (then every file is
an ``error``) from a broken file.
"""

from __future__ import annotations

import sys  # noqa: F401 - re-exported: tests patch security.sys.executable
from collections import Counter
from collections.abc import Sequence
from importlib import metadata

from prefjudge.judge.facts.correctness import response_code
from prefjudge.judge.facts.security_bandit import (  # re-exported: tests reach these here
    SPLIT_PARTS,
    BanditRunError,
    _chunks,
    _prepare,
    _Prepared,
    _Runner,
)
from prefjudge.judge.facts.security_models import (
    ANALYSER,
    RANK_WEIGHTS,
    Outcome,
    ReportStatus,
    SecurityDecision,
    SecurityFinding,
    SecurityReport,
    _describe,
)
from prefjudge.judge.facts.security_unresolved import (
    DANGEROUS_MODULES,
    IMPORT_FUNCTIONS,
    UNKNOWN_MODULE,
    UNRESOLVED_PASS,
    unresolved_findings,
)
from prefjudge.judge.facts.security_work import (
    WORK_PER_CONCATENATION,
    WORK_PER_FSTRING_PART,
    WORK_PER_NODE,
    WORK_TUPLE_DIVISOR,
    bandit_work,
)
from prefjudge.records import Fact, Pair
from prefjudge.scoring.verify.extract import code_of

__all__ = [
    "ANALYSER", "BANDIT_PIN", "CHUNK_FILES", "CHUNK_WORK", "DANGEROUS_MODULES",
    "IMPORT_FUNCTIONS", "MAX_WORK", "RANK_WEIGHTS", "RUN_TIMEOUT_S", "SPLIT_PARTS",
    "UNKNOWN_MODULE", "UNRESOLVED_PASS", "WORK_PER_CONCATENATION", "WORK_PER_FSTRING_PART",
    "WORK_PER_NODE", "WORK_TUPLE_DIVISOR", "BanditRunError", "Outcome", "ReportStatus",
    "SecurityDecision", "SecurityFinding", "SecurityReport", "bandit_version", "bandit_work",
    "code_of", "compare_reports", "compare_security", "compare_security_batch",
    "security_fact", "security_facts", "security_findings", "security_findings_batch",
    "unresolved_findings",
]

BANDIT_PIN = "1.9.4"
"""The bandit version prefjudge is pinned to (pyproject); reports record the one used."""

CHUNK_FILES = 250
"""Files per bandit process (one start costs ~0.4 s; 400 files take ~1.5 s)."""

MAX_WORK = 100_000_000
"""Per-file bound on :func:`bandit_work`: 1.6-2.4 s of bandit's CPU at the bound, measured."""

CHUNK_WORK = 250_000_000
"""Bound on the summed :func:`bandit_work` of one bandit run (about 5 s of CPU)."""

RUN_TIMEOUT_S = 60.0
"""Seconds a bandit run may take; a file errs for it only when it ran out of time alone."""

# -- analysing code ------------------------------------------------------------------------------


def bandit_version() -> str | None:
    """The installed bandit's version, or None when bandit is not installed."""
    try:
        return metadata.version("bandit")
    except metadata.PackageNotFoundError:
        return None


def security_findings(code: str) -> SecurityReport:
    """Analyse one response's code with bandit.

    Args:
        code: A response (fenced Markdown, read as :func:`code_of` reads it; or plain code).

    Returns:
        Its report (``error`` with a reason when bandit fails or nothing parses).
    """
    return security_findings_batch([code])[0]


def security_findings_batch(
    codes: Sequence[str],
    *,
    whole: Sequence[bool] = (),
    chunk_size: int = CHUNK_FILES,
    timeout: float = RUN_TIMEOUT_S,
    max_work: int = MAX_WORK,
    chunk_work: int = CHUNK_WORK,
) -> list[SecurityReport]:
    """Analyse many responses, batched into few bandit processes.

    A response's report does not depend on the others in the batch: code whose estimated
    bandit work (:func:`bandit_work`) exceeds ``max_work`` is an ``error`` without running
    bandit; the rest is grouped into runs of at most ``chunk_size`` files and ``chunk_work``;
    a run that fails is split and rerun (:meth:`_Runner.analyse`), so that only code that
    fails alone is an ``error``.

    Args:
        codes: Responses (fenced Markdown, read as :func:`code_of` reads it, or code).
        whole: Per response, whether it is code as a whole (a sample file's ``solution``:
            analysed as it is, a fenced docstring example included); missing: False.
        chunk_size: Files per bandit run.
        timeout: Seconds before a bandit run is abandoned; a file is an error for a timeout
            only when it ran out of time alone.
        max_work: The per-file bound on :func:`bandit_work`.
        chunk_work: The bound on the summed :func:`bandit_work` of one run (a file over it
            runs alone).

    Returns:
        One report per response, in order.
    """
    version = bandit_version()
    if version is None:
        why = f"bandit is not installed (pip install bandit=={BANDIT_PIN})"
        return [SecurityReport(version="unavailable", status="error", reason=why)
                for _ in codes]
    extracted = [code_of(code, is_code=index < len(whole) and whole[index])
                 for index, code in enumerate(codes)]
    prepared = [_prepare(code) for code in extracted]
    reports: dict[int, SecurityReport] = {}
    todo: list[tuple[int, _Prepared]] = []
    for index, item in enumerate(prepared):
        if isinstance(item, _Prepared) and item.work <= max_work:
            todo.append((index, item))
            continue
        problem = item if isinstance(item, str) else _over_bound(item, max_work)
        reports[index] = SecurityReport(version=version, status="error", reason=problem,
                                        lines=len(extracted[index].splitlines()))
    runner = _Runner(version, timeout)
    for chunk in _chunks(todo, max(chunk_size, 1), chunk_work):
        found = runner.analyse([item for _, item in chunk])
        reports.update((index, report) for (index, _), report in zip(chunk, found, strict=True))
    return [reports[index] for index in range(len(codes))]


def _over_bound(item: _Prepared, max_work: int) -> str:
    """Why ``item`` is not given to bandit: its estimated work is over the bound."""
    return (f"not analysed: the code is too large for bandit in bounded time (estimated work "
            f"{item.work:,} over the per-file bound of {max_work:,}; bandit's time grows with "
            f"the string literals of a statement times its lines)")





def compare_security(code_a: str, code_b: str) -> SecurityDecision:
    """Decide which of two responses is safer (one bandit run for both).

    Args:
        code_a: Response A (fenced Markdown or plain code).
        code_b: Response B.

    Returns:
        The decision, with both reports.
    """
    report_a, report_b = security_findings_batch([code_a, code_b])
    return compare_reports(report_a, report_b)


def compare_security_batch(pairs: Sequence[tuple[str, str]],
                           whole: Sequence[bool] = ()) -> list[SecurityDecision]:
    """:func:`compare_security` for many pairs, bandit batched over all their responses.

    Args:
        pairs: ``(response A, response B)`` per pair.
        whole: Per response (A then B of each pair), whether it is code as a whole
            (:func:`security_findings_batch`).

    Returns:
        One decision per pair, in order.
    """
    reports = security_findings_batch([code for pair in pairs for code in pair], whole=whole)
    return [compare_reports(reports[2 * i], reports[2 * i + 1]) for i in range(len(pairs))]


def compare_reports(report_a: SecurityReport, report_b: SecurityReport) -> SecurityDecision:
    """Decide from two reports (see the module docstring for partial reports).

    Args:
        report_a: Response A's report.
        report_b: Response B's report.

    Returns:
        The decision.
    """
    reports = {"A": report_a, "B": report_b}
    failed = [side for side, r in reports.items() if r.status == "error"]
    if failed:
        why = "; ".join(f"{side}: {reports[side].reason}" for side in failed)
        return _decision("error", f"{' and '.join(failed)} could not be analysed ({why})",
                         report_a, report_b)
    risk_a, risk_b = report_a.risk or 0, report_b.risk or 0
    partial = [side for side, r in reports.items() if r.status == "partial"]
    if len(partial) == 2 and report_a.unanalysed_digest != report_b.unanalysed_digest:
        return _decision(
            "error", f"neither response parses to the end (A: {report_a.reason}; B: "
            f"{report_b.reason}) and the unparsed parts differ", report_a, report_b)
    if len(partial) == 1:
        side = partial[0]
        other = "B" if side == "A" else "A"
        if not reports[other].risk_below(reports[side]):
            return _decision(
                "error", f"{side} is only partly analysed ({reports[side].reason}); its "
                f"findings so far (risk {reports[side].risk}) do not exceed {other}'s "
                f"(risk {reports[other].risk})", report_a, report_b)
    note = _partial_note(partial, reports)
    if risk_a == risk_b:
        tally_a, tally_b = _tally(report_a.findings), _tally(report_b.findings)
        if not report_a.findings and not report_b.findings:
            fact = f"neither has a bandit finding{note}"
        elif tally_a == tally_b:
            fact = f"both have the same bandit findings, {tally_a} (risk {risk_a}){note}"
        else:
            fact = f"both have bandit risk {risk_a} (A: {tally_a}; B: {tally_b}){note}"
        return _decision("tie", fact, report_a, report_b)
    winner, loser = ("A", "B") if risk_a < risk_b else ("B", "A")
    extra = _excess(reports[loser].findings, reports[winner].findings)
    own = _excess(reports[winner].findings, reports[loser].findings)
    fact = (f"{loser} has {_count(extra)} {winner} lacks: {_describe(extra, 2)}; "
            f"{winner} has {_tally(own) or 'none'} that {loser} lacks "
            f"(bandit risk {loser} {reports[loser].risk} vs {winner} {reports[winner].risk})"
            f"{note}")
    return _decision(winner, fact, report_a, report_b)


def _partial_note(partial: Sequence[str], reports: dict[str, SecurityReport]) -> str:
    if not partial:
        return ""
    parts = [f"{side} analysed to line {reports[side].lines_analysed} of "
             f"{reports[side].lines}" for side in partial]
    same = "; the unparsed rest is the same in both" if len(partial) == 2 else ""
    return f" [{', '.join(parts)}{same}]"


def _excess(
    findings: Sequence[SecurityFinding], others: Sequence[SecurityFinding]
) -> list[SecurityFinding]:
    """Findings of ``findings`` beyond those ``others`` has (by rule, severity, confidence)."""
    left = Counter((f.rule, f.severity, f.confidence) for f in others)
    extra = []
    for finding in findings:
        key = (finding.rule, finding.severity, finding.confidence)
        if left[key]:
            left[key] -= 1
        else:
            extra.append(finding)
    return extra


def _tally(findings: Sequence[SecurityFinding]) -> str:
    """``2× B608 (medium/medium), 1× B101 (low/high)``, heaviest first."""
    counts = Counter((f.weight, f.rule, f.severity, f.confidence) for f in findings)
    return ", ".join(f"{n}× {rule} ({sev.lower()}/{conf.lower()})" for (_, rule, sev, conf), n
                     in sorted(counts.items(), key=lambda item: (-item[0][0], item[0][1])))


def _count(findings: Sequence[SecurityFinding]) -> str:
    return "1 finding" if len(findings) == 1 else f"{len(findings)} findings"


def _decision(outcome: Outcome, fact: str, a: SecurityReport, b: SecurityReport
              ) -> SecurityDecision:
    return SecurityDecision(outcome=outcome, fact=fact, report_a=a, report_b=b)


# -- facts for the evidence judge ----------------------------------------------------------------


def security_facts(pairs: Sequence[Pair]) -> list[Fact]:
    """The security fact of every pair, bandit batched over all responses.

    Each side's code is the code its tests run
    (:func:`~prefjudge.judge.facts.correctness.response_code`, the one function the
    correctness and efficiency facts read it with).

    Args:
        pairs: The pairs.

    Returns:
        One ``security`` fact per pair, in order; ``detail`` holds both risks, statuses
        and findings (``rule line severity/confidence``), the bandit version and the
        unresolved-call pass (``unresolved``).
    """
    decisions = compare_security_batch(
        [(response_code(p, "A"), response_code(p, "B")) for p in pairs],
        whole=[True] * (2 * len(pairs)))
    return [security_fact(decision) for decision in decisions]


def security_fact(decision: SecurityDecision) -> Fact:
    """A :class:`~prefjudge.records.Fact` of kind ``security`` from a decision."""
    a, b = decision.report_a, decision.report_b
    detail = {
        "analyser": f"{a.analyser} {a.version}", "unresolved": UNRESOLVED_PASS,
        "status_a": a.status, "status_b": b.status, "risk_a": a.risk, "risk_b": b.risk,
        "findings_a": [_short(f) for f in a.findings],
        "findings_b": [_short(f) for f in b.findings],
    }
    return Fact(kind="security", outcome=decision.outcome, fact=decision.fact, detail=detail)


def _short(finding: SecurityFinding) -> str:
    return f"{finding.rule} line {finding.line} {finding.severity}/{finding.confidence}"

