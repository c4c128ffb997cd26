"""Probe run: reports who and where the harness runs, to confirm the sandbox works."""

from __future__ import annotations

import json
import os


def run(payload: dict) -> dict[str, str]:
    """Return facts about the sandboxed process as a passing result."""
    facts = {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(), "pid": os.getpid()}
    return {"status": "pass", "detail": json.dumps(facts)}
