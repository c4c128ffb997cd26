"""Instruction verifiers: code extraction, the batched Ruff engine, AST/regex checks.

Public entry points: :func:`verify_batch` (batched, what scoring uses), :func:`verify_naive`
(one Ruff process per check, the reference the benchmark compares against),
:func:`extract_code` and :func:`ruff_version`.
"""

from prefjudge.scoring.verify.engine import verify_batch, verify_naive
from prefjudge.scoring.verify.extract import extract_code
from prefjudge.scoring.verify.ruff_engine import ruff_version

__all__ = ["extract_code", "ruff_version", "verify_batch", "verify_naive"]
