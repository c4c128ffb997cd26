"""Helpers for tests that run prefjudge commands: in process (click), as subprocesses, rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = ROOT / "datasets" / "sample"
WIDE = {"COLUMNS": "200"}
"""The ``env`` of :func:`invoke` for a wide terminal (help and tables not wrapped early)."""


def flat(text: str) -> str:
    """A command's messages with rich's line wrapping undone (for ``in`` checks)."""
    return " ".join(text.split())


def rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per non-blank line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def invoke(
    *args: object,
    input: str | None = None,
    ok: bool | None = None,
    env: Mapping[str, str] | None = None,
    catch_exceptions: bool = False,
) -> Result:
    """Run ``prefjudge ARGS`` in this process through click's test runner.

    Args:
        *args: The command line after ``prefjudge`` (paths and numbers are made strings).
        input: Text given to the command on its standard input.
        ok: True asserts that it exits 0, False that it fails; None checks nothing.
            The assertion shows what it printed and the exception it ended with.
        env: Environment variables to set while it runs (:data:`WIDE` for wide help and
            tables).
        catch_exceptions: Keep an exception other than an exit in ``Result.exception``
            instead of letting it propagate. Off by default: a command that crashes fails
            the test with its traceback (a clean failure is an exit, which is always kept).

    Returns:
        click's result: ``exit_code``, ``output`` (stdout and stderr), ``exception``.
    """
    from prefjudge.cli import main  # here: the subprocess helpers need no click command

    result = CliRunner(env=env).invoke(main, [str(a) for a in args], input=input,
                                       catch_exceptions=catch_exceptions)
    if ok is not None:
        shown = f"{result.output}\n{result.exception!r}"
        assert (result.exit_code == 0) == ok, f"exit code {result.exit_code}: {shown}"
    return result


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
