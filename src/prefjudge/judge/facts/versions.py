"""Versions of the code whose output decides evidence verdicts (bound by verdict journals)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from prefjudge.sandbox import harness_digest
from prefjudge.scoring.verify import ruff_version


def facts_digest() -> str:
    """A short digest of the evidence judge's own rules (this package's source)."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def decider_versions() -> dict[str, str]:
    """What an evidence verdict depends on besides its inputs.

    Returns:
        The sandbox harness digest (tests and cost measurement), the Ruff version
        (instruction checks), the security analyser's version and the digest of the
        evidence rules.
    """
    from prefjudge.judge.facts.security import ANALYSER, bandit_version

    return {
        "harness": harness_digest(),
        "ruff": ruff_version(),
        "security": f"{ANALYSER} {bandit_version()}",
        "rules": facts_digest(),
    }
