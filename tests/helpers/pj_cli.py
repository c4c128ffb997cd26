"""Helpers for tests that run prefjudge commands: subprocess runs, output text, JSONL rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = ROOT / "datasets" / "sample"


def flat(text: str) -> str:
    """A command's messages with rich's line wrapping undone (for ``in`` checks)."""
    return " ".join(text.split())


def rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per non-blank line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cli_argv(*args: str) -> list[str]:
    """The argv of ``prefjudge ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "prefjudge", *args]


def run_cli(*args: str, ok: bool = True, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """Run a prefjudge command in its own process (vLLM's engine must not share ours).

    Args:
        *args: The command line after ``prefjudge``.
        ok: Assert that it exits 0 (showing the end of its output when it does not).
        timeout: Seconds it may take.

    Returns:
        The finished process; ``.stdout + .stderr`` is everything it printed.
    """
    done = subprocess.run(cli_argv(*args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if ok:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_cli_text(*args: str, timeout: float = 1500) -> str:
    """Run a prefjudge command that must succeed; return everything it printed."""
    done = run_cli(*args, timeout=timeout)
    return done.stdout + done.stderr
