"""The digest of the code that decides test outcomes (harness and comparison)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


@functools.cache
def harness_digest() -> str:
    """A short digest of the code that decides test outcomes (harness and comparison).

    Recorded in a scoring journal's settings, so that resuming after prefjudge's verdict
    code changed refuses instead of mixing verdicts of two versions.
    """
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    files = [
        *sorted((here / "child").glob("*.py")),
        here / "compare.py",
        here / "stdio_outputs.py",
        here / "evalplus_oracles.py",
        here / "adapters.py",
    ]
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
