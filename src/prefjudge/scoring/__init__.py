"""Stage 1, deterministic scoring (Vibe Checker / SWE-IF): ``prefjudge score``.

* :mod:`.taxonomy` — the 30 VeriCode instructions, loaded from ``rubrics/vericode.yaml``;
* :mod:`.applicability` — the predicates an instruction's ``applies_when`` may name;
* :mod:`.tasks` — benchmark tasks (BigCodeBench, HumanEval(+), MBPP+, LiveCodeBench);
* :mod:`.profiles` — verification profiles: ``reference`` (the SWE-IF authors' verdicts) and
  ``strict`` (hardened);
* :mod:`.formats` — generation files: prefjudge's own, EvalPlus, BigCodeBench and SWE-IF
  sample files;
* :mod:`.verify` — the instruction verifiers (batched Ruff runs and AST checks);
* :mod:`.score` — generation + task → scored sample (verifiers and sandboxed tests);
* :mod:`.metrics` — IF, pass@1, FR_k and their intervals, as pandas tables.

Unit tests run in :mod:`prefjudge.sandbox`, the only place model-written code executes.
"""
