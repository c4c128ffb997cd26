"""Security evidence: bandit's findings in both responses, weighted by severity and confidence.

Each response's code (the last fenced Python block, else the whole response; see
:func:`~prefjudge.scoring.verify.extract.last_python_block`) is written to a temporary file
and analysed by bandit (:data:`BANDIT_PIN`), run as a subprocess of the same Python
(``python -m bandit``) over many files at once; the code is parsed, never executed. Bandit
runs with its default tests, ``--ignore-nosec`` (a response cannot silence a finding with a
``# nosec`` comment) and no configuration file.

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
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.records import Fact, Pair
from prefjudge.scoring.verify.extract import last_python_block

BANDIT_PIN = "1.9.4"
"""The bandit version prefjudge is pinned to (pyproject); reports record the one used."""

ANALYSER = "bandit"
RANK_WEIGHTS: dict[str, int] = {"UNDEFINED": 0, "LOW": 1, "MEDIUM": 3, "HIGH": 9}
"""Weight of a bandit severity or confidence rank; a finding weighs their product."""

CHUNK_FILES = 250
"""Files per bandit process (one start costs ~0.4 s; 400 files take ~1.5 s)."""

RUN_TIMEOUT_S = 300.0
ReportStatus = Literal["ok", "partial", "error"]
Outcome = Literal["A", "B", "tie", "error"]


class SecurityFinding(BaseModel):
    """One bandit finding.

    Attributes:
        rule: Bandit test id (``B602``).
        name: Bandit test name (``subprocess_popen_with_shell_equals_true``).
        severity: ``LOW``, ``MEDIUM`` or ``HIGH``.
        confidence: ``LOW``, ``MEDIUM`` or ``HIGH``.
        line: 1-based line in the analysed code (the extracted code, not the response).
        message: Bandit's message.
        cwe: CWE id bandit gives, if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    name: str
    severity: str
    confidence: str
    line: int
    message: str
    cwe: int | None = None

    @property
    def weight(self) -> int:
        """``severity × confidence`` on the 1/3/9 scale of :data:`RANK_WEIGHTS`."""
        return RANK_WEIGHTS.get(self.severity, 0) * RANK_WEIGHTS.get(self.confidence, 0)

    def describe(self) -> str:
        """``B602 at line 12 (high severity, high confidence: subprocess call ...)``."""
        message = self.message.rstrip(".")
        return (f"{self.rule} at line {self.line} ({self.severity.lower()} severity, "
                f"{self.confidence.lower()} confidence: {message})")


class SecurityReport(BaseModel):
    """Bandit's analysis of one response's code.

    Attributes:
        analyser: ``bandit``.
        version: The bandit version that ran (``unavailable`` when it is not installed).
        status: ``ok`` (the whole code was analysed), ``partial`` (only the first
            ``lines_analysed`` lines parse; the rest is unknown) or ``error`` (nothing
            could be analysed; ``reason`` says why).
        reason: Why the report is partial or an error (empty when ok).
        findings: Bandit's findings, by line.
        risk: Sum of the findings' weights; None on error (never zero by default).
        lines: Lines of code extracted from the response.
        lines_analysed: Lines analysed (all of them when ok).
        unanalysed_digest: SHA-256 of the unanalysed text with surrounding whitespace
            removed (partial reports only): two partial reports with the same digest left
            the same text unanalysed.
    """

    model_config = ConfigDict(extra="forbid")

    analyser: str = ANALYSER
    version: str
    status: ReportStatus
    reason: str = ""
    findings: list[SecurityFinding] = Field(default_factory=list)
    risk: int | None = None
    lines: int = 0
    lines_analysed: int = 0
    unanalysed_digest: str = ""

    def risk_below(self, other: SecurityReport) -> bool:
        """Whether this report is complete and its risk below ``other``'s lower bound.

        Args:
            other: A report, possibly partial (its risk is then a lower bound).

        Returns:
            True when this side is provably the safer one.
        """
        return self.status == "ok" and (self.risk or 0) < (other.risk or 0)

    def summary(self, limit: int = 3) -> str:
        """The heaviest findings in words (``none`` when there are none)."""
        return _describe(self.findings, limit) or "none"


class SecurityDecision(BaseModel):
    """Which of two responses is safer, and why.

    Attributes:
        outcome: ``A`` or ``B`` (the safer side), ``tie`` (equal risk) or ``error`` (a
            side could not be analysed far enough to decide).
        fact: The reason in words.
        report_a: Response A's report.
        report_b: Response B's report.
    """

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    fact: str
    report_a: SecurityReport
    report_b: SecurityReport


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
        code: A response (fenced Markdown or plain code).

    Returns:
        Its report (``error`` with a reason when bandit fails or nothing parses).
    """
    return security_findings_batch([code])[0]


def security_findings_batch(
    codes: Sequence[str], *, chunk_size: int = CHUNK_FILES, timeout: float = RUN_TIMEOUT_S
) -> list[SecurityReport]:
    """Analyse many responses, one bandit process per ``chunk_size`` files.

    Args:
        codes: Responses (fenced Markdown or plain code).
        chunk_size: Files per bandit run.
        timeout: Seconds before a bandit run is abandoned (its files become errors).

    Returns:
        One report per response, in order.
    """
    version = bandit_version()
    if version is None:
        why = f"bandit is not installed (pip install bandit=={BANDIT_PIN})"
        return [SecurityReport(version="unavailable", status="error", reason=why)
                for _ in codes]
    extracted = [last_python_block(code) for code in codes]
    prepared = [_prepare(code) for code in extracted]
    reports: list[SecurityReport | None] = [None] * len(codes)
    todo = []
    for index, item in enumerate(prepared):
        if isinstance(item, str):
            reports[index] = SecurityReport(version=version, status="error", reason=item,
                                            lines=len(extracted[index].splitlines()))
        else:
            todo.append(index)
    for start in range(0, len(todo), max(chunk_size, 1)):
        chunk = todo[start : start + max(chunk_size, 1)]
        items = [item for i in chunk if isinstance(item := prepared[i], _Prepared)]
        found = _run_bandit(items, version, timeout)
        for index, report in zip(chunk, found, strict=True):
            reports[index] = report
    return [r for r in reports if r is not None]


@dataclass(frozen=True)
class _Prepared:
    """The part of one code text bandit gets, and what was left out.

    Attributes:
        text: The first ``analysed`` lines of the code (all ``lines`` when it parses).
        lines: Lines of the code.
        analysed: Lines given to bandit.
        reason: Why the rest was left out (empty when nothing was).
        rest: The text left out.
    """

    text: str
    lines: int
    analysed: int
    reason: str
    rest: str


def _prepare(code: str) -> _Prepared | str:
    """The longest prefix of whole lines that parses, or why nothing does (a str)."""
    lines = code.splitlines(keepends=True)
    problem = _parse_problem(code)
    if problem is None:
        return _Prepared(code, len(lines), len(lines), "", "")
    if problem[0] is None:  # not a syntax error (null bytes, nesting too deep)
        return problem[1]
    first = problem[1]
    keep = min(len(lines) - 1, problem[0] - 1)
    while keep > 0:
        found = _parse_problem("".join(lines[:keep]))
        if found is None:
            rest = "".join(lines[keep:])
            reason = (f"only lines 1-{keep} of {len(lines)} parse; the rest does not "
                      f"({first})")
            return _Prepared("".join(lines[:keep]), len(lines), keep, reason, rest)
        if found[0] is None:
            return found[1]
        keep = min(keep - 1, found[0] - 1)
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"the code does not parse as Python {python} ({first})"


def _parse_problem(text: str) -> tuple[int | None, str] | None:
    """None when ``text`` parses; else ``(line of the syntax error or None, message)``."""
    try:
        with warnings.catch_warnings():  # invalid escapes in the response are not our problem
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as exc:
        return max(exc.lineno or 1, 1), f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"the code cannot be parsed: {type(exc).__name__}: {exc}"
    return None


def _run_bandit(items: Sequence[_Prepared], version: str, timeout: float) -> list[SecurityReport]:
    """Run bandit once over ``items``; a failed run makes every item an error."""
    with tempfile.TemporaryDirectory(prefix="prefjudge-bandit-") as workdir:
        names = []
        unwritable: dict[int, str] = {}
        for index, item in enumerate(items):
            name = f"r{index:05d}.py"
            try:
                Path(workdir, name).write_text(item.text, encoding="utf-8")
            except (UnicodeEncodeError, OSError) as exc:
                unwritable[index] = f"the code could not be written for bandit: {exc}"
                continue
            names.append(name)
        try:
            output = _bandit_json(names, Path(workdir), timeout) if names else {}
        except BanditRunError as exc:
            return [SecurityReport(version=version, status="error", reason=str(exc),
                                   lines=item.lines) for item in items]
    return [
        SecurityReport(version=version, status="error", reason=unwritable[index])
        if index in unwritable
        else _report(item, f"r{index:05d}.py", output, version)
        for index, item in enumerate(items)
    ]


class BanditRunError(RuntimeError):
    """Bandit could not be run or did not finish cleanly; the message says why."""


def _bandit_json(names: Sequence[str], workdir: Path, timeout: float) -> dict[str, Any]:
    """Bandit's JSON report over files in ``workdir``."""
    report = workdir / ".bandit-report.json"
    command = [sys.executable, "-m", "bandit", "--format", "json", "--quiet", "--ignore-nosec",
               "--exit-zero", "--number", "1", "--output", str(report), "--", *names]
    try:
        done = subprocess.run(command, cwd=workdir, capture_output=True, timeout=timeout,
                              check=False, env=_bandit_env())
    except subprocess.TimeoutExpired as exc:
        raise BanditRunError(f"bandit timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise BanditRunError(f"bandit could not be started: {exc}") from exc
    stderr = done.stderr.decode("utf-8", "replace").replace(os.fspath(workdir), "<tmp>")
    if done.returncode != 0:
        last = stderr.strip().splitlines()[-1:] or ["no error message"]
        raise BanditRunError(f"bandit exited with status {done.returncode}: {last[0][:300]}")
    try:
        parsed = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BanditRunError(f"bandit wrote no valid JSON report ({exc})") from exc
    if not isinstance(parsed, dict) or not isinstance(parsed.get("results"), list):
        raise BanditRunError("bandit's JSON report has no results list")
    return parsed


def _bandit_env() -> dict[str, str]:
    """The environment without PYTHON* variables that could change what bandit imports."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH")}


def _report(item: _Prepared, name: str, output: dict[str, Any], version: str) -> SecurityReport:
    """One file's report from bandit's JSON output."""
    errors = [e for e in output.get("errors", []) if Path(str(e.get("filename"))).name == name]
    if errors:
        reason = "; ".join(str(e.get("reason", "unknown error")) for e in errors)
        return SecurityReport(version=version, status="error", reason=f"bandit: {reason}",
                              lines=item.lines)
    metrics = output.get("metrics", {})
    if not any(Path(str(key)).name == name for key in metrics):
        return SecurityReport(version=version, status="error", lines=item.lines,
                              reason="bandit did not report on this file")
    findings = sorted(
        (_finding(r) for r in output["results"] if Path(str(r.get("filename"))).name == name),
        key=lambda f: (f.line, f.rule))
    partial = item.analysed < item.lines
    return SecurityReport(
        version=version, status="partial" if partial else "ok", reason=item.reason,
        findings=findings, risk=sum(f.weight for f in findings), lines=item.lines,
        lines_analysed=item.analysed,
        unanalysed_digest=_digest(item.rest) if partial else "")


def _finding(result: dict[str, Any]) -> SecurityFinding:
    cwe = result.get("issue_cwe") or {}
    return SecurityFinding(
        rule=str(result.get("test_id", "")), name=str(result.get("test_name", "")),
        severity=str(result.get("issue_severity", "UNDEFINED")),
        confidence=str(result.get("issue_confidence", "UNDEFINED")),
        line=int(result.get("line_number", 0)), message=str(result.get("issue_text", "")),
        cwe=cwe.get("id") if isinstance(cwe, dict) else None)


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


# -- comparing two responses ---------------------------------------------------------------------


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


def compare_security_batch(pairs: Sequence[tuple[str, str]]) -> list[SecurityDecision]:
    """:func:`compare_security` for many pairs, bandit batched over all their responses.

    Args:
        pairs: ``(response A, response B)`` per pair.

    Returns:
        One decision per pair, in order.
    """
    reports = security_findings_batch([code for pair in pairs for code in pair])
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


def _describe(findings: Sequence[SecurityFinding], limit: int = 3) -> str:
    heaviest = sorted(findings, key=lambda f: (-f.weight, f.line))
    text = "; ".join(f.describe() for f in heaviest[:limit])
    more = len(heaviest) - limit
    return f"{text}; and {more} more" if more > 0 else text


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

    Args:
        pairs: The pairs.

    Returns:
        One ``security`` fact per pair, in order; ``detail`` holds both risks, statuses
        and findings (``rule line severity/confidence``) and the bandit version.
    """
    decisions = compare_security_batch([(p.response_a, p.response_b) for p in pairs])
    return [security_fact(decision) for decision in decisions]


def security_fact(decision: SecurityDecision) -> Fact:
    """A :class:`~prefjudge.records.Fact` of kind ``security`` from a decision."""
    a, b = decision.report_a, decision.report_b
    detail = {
        "analyser": f"{a.analyser} {a.version}",
        "status_a": a.status, "status_b": b.status, "risk_a": a.risk, "risk_b": b.risk,
        "findings_a": [_short(f) for f in a.findings],
        "findings_b": [_short(f) for f in b.findings],
    }
    return Fact(kind="security", outcome=decision.outcome, fact=decision.fact, detail=detail)


def _short(finding: SecurityFinding) -> str:
    return f"{finding.rule} line {finding.line} {finding.severity}/{finding.confidence}"

