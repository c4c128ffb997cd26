"""The journal's resume rule, read-only: what a stage's output holds, and which of it failed.

A stage resumes through its :class:`prefjudge.journal.Journal`: the records of its
output's complete lines are done and never made again, and with ``retry_errors`` the
failed ones (a generation whose model call failed, a verdict in error) are discarded and
made again. The plan, the run's progress and failures, the judge rounds and the
leaderboard count an output through here, without opening its journal (no lock, no
write), so they count what the stage itself will resume from.

Both functions belong with the journal and the records (``prefjudge.journal`` and
``prefjudge.records``, beside :func:`prefjudge.records.generation_failed`); they are here
until they are there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefjudge.io import read_existing
from prefjudge.records import Verdict


def journal_records(path: Path) -> list[dict[str, Any]]:
    """The records a stage's journal resumes from, read without opening it.

    Its complete non-blank lines, as :class:`prefjudge.journal.Journal` reads them when it
    opens (an incomplete last line is a record not made yet); a missing file holds none.

    Args:
        path: A stage's JSONL output.

    Returns:
        Its records, in file order.
    """
    return read_existing(path)


def verdict_failed(verdict: Verdict | Mapping[str, Any]) -> bool:
    """Whether a verdict is a failed judgment: status ``error`` (no battle, and no tie).

    What ``judge --retry-errors`` judges again, as :func:`prefjudge.records.generation_failed`
    is for generations.

    Args:
        verdict: A verdict, or its record as read from a file.

    Returns:
        True when judging the pair failed.
    """
    status = verdict.get("status") if isinstance(verdict, Mapping) else verdict.status
    return status == "error"


__all__ = ["journal_records", "verdict_failed"]
