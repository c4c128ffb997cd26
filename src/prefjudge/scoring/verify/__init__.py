"""Instruction verifiers: code extraction, the batched Ruff engine, AST/regex checks.

Public entry points: :func:`verify_batch` (batched, what scoring uses), :func:`verify_naive`
(one Ruff process per check, the reference the benchmark compares against),
:func:`extract_code` and :func:`ruff_version`.

They are imported on first use: importing a submodule (the verification process's handle,
:mod:`prefjudge.scoring.verify.process`, which ``prefjudge score`` starts before anything
else) does not load the engine, its checks and the taxonomy's models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.lazy import lazy_getattr

if TYPE_CHECKING:
    from prefjudge.scoring.verify.engine import verify_batch, verify_naive
    from prefjudge.scoring.verify.extract import extract_code
    from prefjudge.scoring.verify.ruff_engine import ruff_version

_HOMES = {
    "verify_batch": "prefjudge.scoring.verify.engine",
    "verify_naive": "prefjudge.scoring.verify.engine",
    "extract_code": "prefjudge.scoring.verify.extract",
    "ruff_version": "prefjudge.scoring.verify.ruff_engine",
}


__getattr__ = lazy_getattr(__name__, _HOMES)


__all__ = ["extract_code", "ruff_version", "verify_batch", "verify_naive"]
