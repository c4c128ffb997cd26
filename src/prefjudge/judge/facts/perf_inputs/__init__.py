"""Performance-exercising inputs of HumanEval+/MBPP+ tasks, as EvalPerf measures cost on.

A task's own inputs were written to check correctness: they are small, and on them two
solutions of different complexity cost the same, or the wrong one looks cheaper. Here a
task's inputs are grown by type-aware scaling (:mod:`.scaling`), accepted only where the
reference solution (with the task's contract) returns within a budget and stably
(:mod:`.accept`), made once and kept per benchmark (:mod:`.store`); the efficiency fact
measures both sides on them at several scales and reads the cost as a curve
(:mod:`.curve`).
"""

from __future__ import annotations

from prefjudge.judge.facts.perf_inputs.accept import PerfInputs, build_perf_inputs
from prefjudge.judge.facts.perf_inputs.store import PERF_INPUTS, PerfInputStore

__all__ = ["PERF_INPUTS", "PerfInputStore", "PerfInputs", "build_perf_inputs"]
