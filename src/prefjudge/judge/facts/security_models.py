"""The security evidence's records: a finding, one response's report, a pair's decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ANALYSER = "bandit"
RANK_WEIGHTS: dict[str, int] = {"UNDEFINED": 0, "LOW": 1, "MEDIUM": 3, "HIGH": 9}
"""Weight of a bandit severity or confidence rank; a finding weighs their product."""

ReportStatus = Literal["ok", "partial", "error"]
Outcome = Literal["A", "B", "tie", "error"]


class SecurityFinding(BaseModel):
    """One finding: bandit's, or of the pass over calls bandit cannot resolve.

    Attributes:
        rule: Bandit test id (``B602``), or ``PJ001``-``PJ004`` (:func:`unresolved_findings`).
        name: Test name (``subprocess_popen_with_shell_equals_true``).
        severity: ``LOW``, ``MEDIUM`` or ``HIGH``.
        confidence: ``LOW``, ``MEDIUM`` or ``HIGH``.
        line: 1-based line in the analysed code (the extracted code, not the response).
        message: What was found.
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
        findings: Bandit's findings and :func:`unresolved_findings`, by line.
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


def _describe(findings: Sequence[SecurityFinding], limit: int = 3) -> str:
    heaviest = sorted(findings, key=lambda f: (-f.weight, f.line))
    text = "; ".join(f.describe() for f in heaviest[:limit])
    more = len(heaviest) - limit
    return f"{text}; and {more} more" if more > 0 else text
