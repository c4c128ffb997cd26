"""What a ``persona rewrite`` run produced: counts, rewrite modes and rejection reasons.

Nothing here prints or writes files: :func:`prefjudge.persona.run.rewrite_file` writes
:meth:`RewriteSummary.as_dict` beside its output, and the command prints the summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from prefjudge.persona.rewrite import RejectedRewrite, TaskRewrite
from prefjudge.records import Task

REASON_KINDS = (
    "not equivalent",
    "degenerate",
    "too short",
    "entry point",
    "reference solution",
    "check failed",
    "rewrite failed",
    "compose failed",
)
"""Kinds of rejection, matched in this order against a reason's text."""


def reason_kind(reason: str) -> str:
    """The kind of a rejection reason (one of :data:`REASON_KINDS`, else ``other``)."""
    for key in REASON_KINDS:
        if key in reason:
            return key
    return "other"


@dataclass
class RewriteSummary:
    """The outcome of rewriting a task file in a persona's voice.

    Attributes:
        persona: The persona's name.
        tasks_file: The task file rewritten.
        tasks: Tasks asked for.
        accepted: Rewrites accepted (in the output, this run and earlier ones).
        rejected: Tasks rejected after every attempt.
        accepted_after_retry: Accepted in this run after more than one attempt.
        modes: ``full`` / ``prefix`` → accepted rewrites made that way.
        rejection_reasons: Kind of the last reason → rejected tasks.
        reference_check: ``sandbox``, or ``off`` when reference solutions were not run.
    """

    persona: str
    tasks_file: str
    tasks: int
    accepted: int
    rejected: int
    accepted_after_retry: int
    modes: dict[str, int] = field(default_factory=dict)
    rejection_reasons: dict[str, int] = field(default_factory=dict)
    reference_check: str = "sandbox"

    def as_dict(self) -> dict[str, Any]:
        """The summary as written to OUTPUT's ``.summary.json``."""
        return asdict(self)


def summarize_rewrites(
    *,
    persona: str,
    tasks_file: str,
    tasks: int,
    accepted: Sequence[Task],
    rejected: Sequence[RejectedRewrite],
    outcomes: Iterable[TaskRewrite],
    reference_check: bool,
) -> RewriteSummary:
    """Count what a rewrite run left in its outputs.

    Args:
        persona: The persona's name.
        tasks_file: The task file rewritten.
        tasks: Tasks asked for.
        accepted: Every accepted rewrite in the output.
        rejected: Every rejected task in the ``.rejected.jsonl`` file.
        outcomes: The outcomes of this run (for retries).
        reference_check: Whether reference solutions were run in the sandbox.

    Returns:
        The summary.
    """
    reasons = Counter(reason_kind(r) for row in rejected for r in row.reasons[-1:])
    modes = Counter(str(t.metadata["persona"]["mode"]) for t in accepted)
    retried = sum(1 for o in outcomes if o.accepted and o.attempts > 1)
    return RewriteSummary(
        persona=persona,
        tasks_file=tasks_file,
        tasks=tasks,
        accepted=len(accepted),
        rejected=len(rejected),
        accepted_after_retry=retried,
        modes=dict(modes),
        rejection_reasons=dict(reasons),
        reference_check="sandbox" if reference_check else "off",
    )
