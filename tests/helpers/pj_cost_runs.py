"""One measured run of the cost runner in the sandbox, checked against the reference.

For the tests of a measured run's lines (``RepeatedLines``): a task cut down to one plus
input, a side's code run through it for a few rounds, and what the judge then says of
its outputs.
"""

from __future__ import annotations

from collections.abc import Callable

from prefjudge.judge.facts.efficiency_outputs import measured_outputs_problem
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.adapters import perf_payload
from prefjudge.sandbox.compare import ReferenceOutputs
from prefjudge.sandbox.references import reference_outputs

Runner = Callable[..., object]


def measured(task: Task, code: str | None, run: Runner, limits: SandboxLimits,
             rounds: int) -> object:
    """Run ``code`` (None: the baseline) on ``task``'s plus inputs for ``rounds`` rounds."""
    payload = perf_payload(task, code, task.plus_inputs, rounds)
    payload.update(input_sets=["plus"])
    outcome = run(payload, limits)
    assert outcome.result is not None and outcome.result["status"] == "ran", outcome.result
    return outcome


def measured_and_checked(task: Task, code: str, run: Runner, limits: SandboxLimits,
                         rounds: int) -> tuple[object, str | None]:
    """A measured run of ``code`` on ``task``'s one plus input, and the problem found in
    its outputs against the reference's (None: every call returned the reference's)."""
    reference = reference_outputs(task, limits.time_doubled(), run)
    assert isinstance(reference, ReferenceOutputs), reference
    outcome = measured(task, code, run, limits, rounds)
    chosen = [("plus", 0, task.plus_inputs[0])]
    return outcome, measured_outputs_problem(task, reference, chosen, outcome)
