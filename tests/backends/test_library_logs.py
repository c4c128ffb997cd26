"""stdout carries results only: the model libraries' logs go to stderr, quiet unless ``-v``.

vLLM logs to stdout at INFO by default (a long engine configuration at every start), which
made ``--format json`` and ``-o -`` unreadable with the embedded backend.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pj_cli import run_cli

LIBRARY_LOG = re.compile(r"\b(INFO|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d")
"""A vLLM log line (``INFO 12-01 23:25:22 [llm.py:343] ...``)."""


@pytest.mark.vllm
def test_models_check_prints_json_and_verbose_logs_go_to_stderr(embedded_checkpoint) -> None:
    done = run_cli("-v", "models", "check", "--backend", "embedded", "--format", "json",
                   timeout=900)
    findings = json.loads(done.stdout)  # nothing but the findings on stdout
    assert findings["answers"] is True and findings["backend"] == "embedded"
    assert LIBRARY_LOG.search(done.stderr), done.stderr[-2000:]  # -v: shown, on stderr


@pytest.mark.vllm
def test_a_pair_verdict_on_stdout_is_json_and_the_logs_are_quiet(
        embedded_checkpoint, tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def add(x, y):\n    return x + y\n")
    b.write_text("def add(x, y):\n    return sum([x, y])\n")
    done = run_cli("pair", str(a), str(b), "--instruction", "Write add(x, y). ",
                   "--method", "monolithic", "--backend", "embedded", "--max-tokens", "64",
                   "-o", "-", timeout=900)
    verdict = json.loads(done.stdout)
    assert verdict["method"] == "monolithic" and verdict["pair_id"]
    assert not LIBRARY_LOG.search(done.stdout + done.stderr)  # warnings only by default
