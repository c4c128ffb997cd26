"""Efficiency evidence: which of two correct responses costs less CPU on the task's inputs.

Like EvalPerf, the cost of a HumanEval+/MBPP+ solution is what it takes to run it on the
task's most demanding inputs, compared between two solutions that both pass the tests.

**Scaled inputs** (``scaled=True``, the evidence judge's way: :func:`efficiency_facts`).
The task's own inputs were written to check correctness and are small; the pair is
measured on the task's performance-exercising inputs instead
(:mod:`prefjudge.judge.facts.perf_inputs`: the task's inputs grown by type-aware
scaling, accepted where the reference returns within a budget and stably, made once and
kept), at two scales a factor of 16 apart, each measured as below, the cost read as a
curve (time per call at each scale, a fitted growth: the fact says ``per call, x16 ->
x256 input: A: 1.2 ms -> 116 ms, about n^1.6; B: ...``, the detail keeps ``scales``,
``growth`` and ``perf_inputs``). A side that fails on a scaled input where the other
returns the reference's output loses. Where no scaled input is accepted, or both sides
fail on one, the task's own inputs are measured as below, and the fact says so.

**The counter.** EvalPerf counts CPU instructions with the hardware performance counters
(``perf_event_open``, ``PERF_COUNT_HW_INSTRUCTIONS``). They are not available on the
virtual machines prefjudge is run on (``perf_event_open`` answers ``ENOENT`` for that
event under KVM, checked on the development machine), and the sandbox's seccomp filter
refuses ``perf_event_open`` to the code anyway. So the cost here is **CPU time** (user +
system) of the whole run, counted by the kernel and read by the run's supervisor once it
has reaped every process of the run (``RunOutcome.cpu_s``, ``counter =
"cpu_time:rusage"``). It is measured **outside** the code's process: code that replaces
``time.process_time`` or ``time.perf_counter`` fools nothing, and a process it starts is
counted too. CPU time grows far less than wall time when other work shares the machine,
but it is noisier than an instruction count (caches, frequency, and in a virtual machine
time the hypervisor gave to others), hence the repetition and the noise rule below; pairs
are best measured one at a time (runs measured side by side disturb each other).

**Repetition.** The task's inputs are small (EvalPerf's performance-exercising inputs are
not published with the tasks), so one call costs microseconds, far below the few
milliseconds a sandboxed run costs to start. Each run therefore executes the code afresh
and calls it on the chosen inputs ``rounds`` times (``child/_pj_perf.py``), with
``rounds`` picked by probing both sides (outside-measured, too) so that the cheaper side's
work takes about :data:`TARGET_S` and the dearer side's at most :data:`CAP_S`. Where
that is a few rounds, a second probe at more rounds tells each side's work per round from
what it pays once a run (its first output's line, made in full: on a large output more
than the code's own work), and the rounds grow until the work outweighs it
(``efficiency_measure._beyond_once``). The inputs
are the task's :data:`MAX_INPUTS` heaviest (by the reference solution's CPU time on each,
then by size). A baseline run does everything but the code (start, copies of the inputs,
loop, time limits, a line written per call); its median is subtracted, so that the costs
compared are the code's own.

**Noise.** The baseline, A and B run ``repeats`` times each, interleaved in a seeded
random order within each round. A side is declared cheaper only when (1) the two sides'
runs are told apart by a two-sided exact Mann-Whitney test at :data:`ALPHA`, (2) the ratio
of their net medians reaches ``1 + MIN_RELATIVE``, and (3) the gap between the medians is
more than :data:`NOISE_FACTOR` times its standard error, estimated from the repeats'
spread (``1.2533 * hypot(sigma_A, sigma_B) / sqrt(n)``, each sigma a scaled median
absolute deviation); otherwise the pair is a ``tie``, and the fact says why. A tie that
the noise alone explains (the ratio reaches (2), but (1) or (3) fails) is measured again
on new runs with :data:`~prefjudge.judge.facts.efficiency_measure.RETRY_ROUNDS` times the
rounds (the dearer side's run within ``RETRY_CAP_S``), so that the work stands further
above the start-up's noise, and decided on those; where the rounds cannot grow, one more
batch of ``repeats`` runs of each is added and all are decided together
(:func:`~prefjudge.judge.facts.efficiency_measure.measure_and_decide`).

**Checked calls.** Every call measured is a checked call: the cost runner calls the code
through the EvalPlus runner's own code, each input with its CPU-time limit, and writes
each input's output as a test run does (each different output once, up to
:data:`DISTINCT_OUTPUTS`); every run of a side is compared here with the reference's
outputs for the same inputs (:func:`measured_outputs_problem`, by the test runs' rule and
tolerances). A side whose measured outputs differ, or cannot be read back as its run wrote
them (the run's result carries their SHA-256), or that raises or runs out of time while
measured, gets no efficiency claim: the pair is ``insufficient`` and the fact says why
("B's measured outputs differ from the reference on 3 of 5 inputs ...: no efficiency
claim"). The outputs are written the same way by the baseline (its stand-in returns
None), so what is subtracted includes the time limits and the writing of a line; a side
still pays for making its output into a line, which two correct sides do alike (their
outputs are the same). A measured call also looks like a test call to the code: the same
frames by name and file, the same modules, the same output streams
(``child/_pj_perf.py``).

Outcomes: ``A``/``B`` (that side is cheaper), ``tie``, ``insufficient`` (a side fails,
times out or answers otherwise than the reference while measured; the task has no inputs
prefjudge can run) and ``error`` (the sandbox could not run, or the reference solution
failed: never the code's doing). A pair
whose responses do not both pass their tests is decided by the tests alone, by the one
rule of :mod:`prefjudge.judge.facts.time_limits` (a side that runs out of time on its
tests where the other finishes is the dearer one; any other failure is
``insufficient``), here as in the evidence judge, except where both only ran out of time:
those are measured, and on the task's own inputs an input both sides run out of time on
is set aside for the heaviest inputs the reference finds :data:`LADDER_BASE` times
cheaper (up to :data:`MAX_SET_ASIDE` times), while one side running out of time where the
other finishes makes the other the cheaper one.

Nothing survives from one measured run to the next (each has its own scratch
space and its own IPC, network and pid namespaces, zygote runs too), so no cache can be kept
between them. What the code does inside its own process is still the code's: it may keep
right answers from one round to the next in interpreter-wide state (they pass the check:
the work is skipped, not faked), tell a measured run by what cannot be hidden (its code
is executed once per round; a run holds a few inputs only), though answers it gives
otherwise there are caught, or walk frames to the harness's state to forge its result
or its outputs' digest (it can read its run's nonce there); the kernel's count cannot be
faked.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefjudge.judge.facts.correctness import correctness_fact, response_code
from prefjudge.judge.facts.efficiency_measure import (  # noqa: F401 - re-exported names
    ALPHA,
    CAP_S,
    COUNTER,
    DEFAULT_REPEATS,
    DISTINCT_OUTPUTS,
    MAX_INPUTS,
    MIN_RELATIVE,
    NOISE_FACTOR,
    SIDES,
    TARGET_S,
    Outcome,
    Runner,
    _choose_rounds,
    _interleaved,
    _Meter,
    _Stop,
    decide,
    measure_and_decide,
    more_would_help,
    warm_imports,
)
from prefjudge.judge.facts.efficiency_outputs import (  # noqa: F401 - re-exported names
    gist,
    measured_outputs_problem,
)
from prefjudge.judge.facts.perf_inputs.accept import LADDER_BASE, PerfInputs
from prefjudge.judge.facts.perf_inputs.measure import measure_scaled, perf_inputs_for
from prefjudge.judge.facts.time_limits import efficiency_from_tests
from prefjudge.records import Fact, FuncResult, Pair, Task
from prefjudge.sandbox import resolve_isolation
from prefjudge.sandbox.adapters import TaskNotRunnableError
from prefjudge.sandbox.compare import INPUT_SETS, ReferenceOutputs, input_positions
from prefjudge.sandbox.functional import run_one
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import run_in_sandbox
from prefjudge.sandbox.references import reference_outputs

MAX_SET_ASIDE = 3
"""How many times inputs both sides run out of time on are set aside (each time the
reference's cost a :data:`LADDER_BASE` lower)."""


@dataclass(frozen=True)
class EfficiencyDecision:
    """Which side costs less, the sentence saying so, and the measurements behind it.

    Attributes:
        outcome: ``A``/``B`` (cheaper), ``tie``, ``insufficient`` or ``error``.
        fact: The finding in words.
        counter: What was counted (:data:`COUNTER`).
        inputs: The inputs used, as ``set #index`` (``plus #12``).
        rounds: How many times each run executed the code and called it on every input.
        samples: Gross CPU seconds of each run, per side (``A``, ``B``, ``baseline``), in
            the order they ran.
        probes: The runs that chose ``rounds``: ``{"rounds", "A", "B", "baseline"}``.
        stats: Medians, net costs, ratio, noise and p-value of the decision.
        detail: The fact's whole detail when the tests alone decided (nothing was
            measured; :meth:`from_fact`), else None.
    """

    outcome: Outcome
    fact: str
    counter: str = COUNTER
    inputs: tuple[str, ...] = ()
    rounds: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    probes: tuple[dict[str, float], ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] | None = None

    @classmethod
    def from_fact(cls, fact: Fact) -> EfficiencyDecision:
        """The decision an ``efficiency`` fact found without measuring (the tests decided).

        Args:
            fact: The fact (:func:`~prefjudge.judge.facts.time_limits.efficiency_from_tests`).

        Returns:
            A decision whose :meth:`to_fact` gives ``fact`` back.
        """
        return cls(fact.outcome, fact.fact, counter=fact.detail.get("counter", COUNTER),
                   detail=dict(fact.detail))

    def to_fact(self) -> Fact:
        """The decision as an ``efficiency`` :class:`~prefjudge.records.Fact`."""
        if self.detail is not None:
            return Fact(kind="efficiency", outcome=self.outcome, fact=self.fact,
                        detail=dict(self.detail))
        detail = {
            "counter": self.counter, "inputs": list(self.inputs), "rounds": self.rounds,
            "samples": {side: list(values) for side, values in self.samples.items()},
            "probes": [dict(probe) for probe in self.probes], **self.stats,
        }
        return Fact(kind="efficiency", outcome=self.outcome, fact=self.fact, detail=detail)



# --- choosing inputs -------------------------------------------------------------------------


def heaviest_inputs(task: Task, reference: ReferenceOutputs, count: int = MAX_INPUTS,
                    below: float | None = None) -> list[tuple[str, int, Any]]:
    """The task's ``count`` most demanding inputs, as ``(set, index, input)``.

    Ranked by the reference solution's CPU time on each (measured in its own sandbox; the
    reference is trusted code), then by the input's size as JSON. ``below``: only inputs
    the reference spends less CPU time on than that.
    """
    positions = input_positions(task)
    ranked = sorted(
        ((line, position) for line, position in zip(reference.lines, positions, strict=True)
         if below is None or float(line["cpu"]) < below),
        key=lambda pair: (-float(pair[0]["cpu"]), -len(json.dumps(pair[1][2]))),
    )
    return [position for _, position in ranked[:count]]


def in_run_order(chosen: Sequence[tuple[str, int, Any]]) -> list[tuple[str, int, Any]]:
    """The chosen inputs in the order a run calls them: base first, each set in order."""
    return sorted(chosen, key=lambda position: (INPUT_SETS.index(position[0]), position[1]))


def _reference(task: Task, limits: SandboxLimits, run: Runner) -> ReferenceOutputs | FuncResult:
    return reference_outputs(task, limits.time_doubled(), run)


def correctness_decision(result_a: FuncResult, result_b: FuncResult
                         ) -> EfficiencyDecision | None:
    """None when both responses pass their tests, else what the tests alone decide.

    The rule is :func:`~prefjudge.judge.facts.time_limits.efficiency_from_tests`, applied
    to the correctness fact of the two results, as the evidence judge applies it.

    Args:
        result_a: Response A's test result (``prefjudge.sandbox.run_one``).
        result_b: Response B's.

    Returns:
        None (both pass: measure them); else ``error`` when a run could not be judged (the
        sandbox, the reference solution, a missing library), the side that finishes when
        the other runs out of time, or ``insufficient``.
    """
    fact = efficiency_from_tests(correctness_fact(result_a, result_b))
    return None if fact is None else EfficiencyDecision.from_fact(fact)


def compare_efficiency(
    task: Task,
    code_a: str,
    code_b: str,
    *,
    plan: IsolationPlan,
    limits: SandboxLimits,
    runner: Runner | None = None,
    repeats: int = DEFAULT_REPEATS,
    seed: int = 0,
    check_correct: bool = True,
    max_inputs: int = MAX_INPUTS,
    scaled: bool = False,
    perf_client: Any = None,
) -> EfficiencyDecision:
    """Measure both responses' CPU cost on the task's performance-exercising inputs.

    Args:
        task: A HumanEval+/MBPP+ task (``test_format == "evalplus"``) with its inputs.
        code_a: Response A's complete code.
        code_b: Response B's complete code.
        plan: How to isolate the runs.
        limits: Limits of every run (tests and measurements).
        runner: Runs a payload (default: a fresh sandbox per run under ``plan``; a
            :class:`~prefjudge.sandbox.zygote.ZygotePool`'s ``run`` forks it instead).
        repeats: Runs of each side, and of the baseline, behind each median (at least 4:
            fewer cannot reach a Mann-Whitney p-value of 0.05); twice as many when a
            first batch leaves a tie that noise alone explains.
        seed: Seeds the order of the runs within each round.
        check_correct: Run both responses against the task's tests first (False when the
            caller knows that both pass).
        max_inputs: How many of the heaviest inputs every run calls the code on, where
            the task's own inputs are measured.
        scaled: Measure on the task's scaled inputs at several scales
            (:mod:`prefjudge.judge.facts.perf_inputs`), falling back to the task's own
            heaviest inputs where none is accepted (the evidence judge's way:
            :func:`efficiency_facts`); False (the default here): the task's own inputs
            only.
        perf_client: With ``scaled``, a served model whose generator makes the inputs
            (``--perf-inputs model``:
            :func:`~prefjudge.judge.facts.perf_inputs.measure.perf_inputs_for`); None:
            the scaled inputs.

    Returns:
        The decision, with its measurements; never raises for bad code.

    Raises:
        ValueError: ``repeats`` below 4.
    """
    if repeats < 4:
        raise ValueError(f"repeats must be at least 4, got {repeats}")
    run = runner or (lambda payload, run_limits: run_in_sandbox(plan, payload, run_limits))
    if task.test_format != "evalplus" or not (task.base_inputs or task.plus_inputs):
        return EfficiencyDecision("insufficient", f"task {task.task_id} has no HumanEval+/"
                                  "MBPP+ inputs to measure the code on")
    if check_correct:
        problem = correctness_decision(run_one(task, code_a, plan, limits, runner),
                                       run_one(task, code_b, plan, limits, runner))
        if problem is not None:
            return problem
    try:
        reference = _reference(task, limits, run)
    except (OSError, TaskNotRunnableError) as exc:
        return EfficiencyDecision("error", f"the reference solution could not run: {exc}")
    if isinstance(reference, FuncResult):
        return EfficiencyDecision("error", f"the reference solution: {reference.detail[:300]}")
    codes: dict[str, str | None] = {"A": code_a, "B": code_b, "baseline": None}
    meter = _Meter(task, codes, in_run_order(heaviest_inputs(task, reference, max_inputs)),
                   reference, warm_imports(code_a, code_b), run, limits)
    order = random.Random(seed)
    found = _first_on_scaled(meter, repeats, order, perf_client) if scaled else ""
    if isinstance(found, EfficiencyDecision):
        return found
    return _on_own_inputs(meter, repeats, order, found)


def _first_on_scaled(meter: _Meter, repeats: int, order: random.Random, perf_client: Any
                     ) -> EfficiencyDecision | str:
    """The decision on the task's scaled inputs, or the note saying why the own inputs go on."""
    try:
        perf = perf_inputs_for(meter.task, meter.reference, meter.run, perf_client)
        decision = None if perf is None else _on_scaled(meter, perf, repeats, order)
    except (OSError, TaskNotRunnableError) as exc:
        return EfficiencyDecision("error", f"the scaled inputs could not be made: {exc}")
    if isinstance(decision, EfficiencyDecision):
        return decision
    return ("; no scaled input was accepted for this task: measured on its own inputs"
            if perf is None else f"; measured on the task's own inputs: {decision}")


def _on_scaled(meter: _Meter, perf: PerfInputs, repeats: int, order: random.Random
               ) -> EfficiencyDecision | str:
    """The decision measured on the task's scaled inputs (:func:`measure_scaled`).

    Where both sides fail on a scaled input (they passed the task's own inputs), why:
    the caller measures them on the task's own inputs instead.
    """
    try:
        found = measure_scaled(meter.task, perf, meter.codes, meter.warm, meter.run,
                               meter.limits, repeats, order)
    except (_Stop, TaskNotRunnableError) as exc:
        outcome, why = (exc.outcome, exc.why) if isinstance(exc, _Stop) else ("error", str(exc))
        return EfficiencyDecision(outcome, why)
    if found.both_fail:
        return found.fact
    return EfficiencyDecision(found.outcome, found.fact, inputs=found.inputs,  # type: ignore[arg-type]
                              rounds=found.rounds, samples=found.samples,
                              probes=found.probes, stats=found.stats)


def _after_time_out(meter: _Meter, stop: _Stop) -> EfficiencyDecision | _Meter | None:
    """A side ran out of time on one of the task's own inputs: what the other side does there.

    The other side runs once on the same inputs. Where it finishes, it is the cheaper one
    (the rule of :mod:`~prefjudge.judge.facts.time_limits`). Where it runs out of time on
    the same input, both are slow there, and the inputs are chosen again among those the
    reference finds :data:`~prefjudge.judge.facts.perf_inputs.accept.LADDER_BASE` times
    cheaper (a meter for them; None when there are none): the sides are compared on inputs
    both finish. Anything else: None (the stop stands).
    """
    if stop.side is None or stop.timed_out is None:
        return None
    other = "B" if stop.side == "A" else "A"
    name, index = stop.timed_out
    try:
        meter.measure(other, 1)
    except _Stop as second:
        if second.side is None:
            raise
        if second.timed_out != stop.timed_out:
            return None
        cost = {(line["set"], int(line["i"])): float(line["cpu"])
                for line in meter.reference.lines}
        below = cost.get((name, index), 0.0) / LADDER_BASE
        chosen = in_run_order(heaviest_inputs(meter.task, meter.reference, len(meter.chosen),
                                              below=below))
        return replace(meter, chosen=chosen) if chosen else None
    return EfficiencyDecision(other, f"{stop.side} runs out of its time limit on {name} "
                              f"#{index} where {other} finishes: {other} is the cheaper one")


def _on_own_inputs(meter: _Meter, repeats: int, order: random.Random, note: str
                   ) -> EfficiencyDecision:
    """The decision measured on the task's own heaviest inputs (the method before scaling).

    Where both sides run out of time on one of them, on inputs both finish
    (:func:`_after_time_out`), up to :data:`MAX_SET_ASIDE` times.
    """
    for _ in range(MAX_SET_ASIDE):
        decision, stop = _measure_own(meter, repeats, order, note)
        after = None if stop is None else _after_time_out(meter, stop)
        if stop is None or after is None:
            return decision
        if isinstance(after, EfficiencyDecision):
            return after
        name, index = stop.timed_out  # type: ignore[misc]
        note = f"; both sides run out of time on {name} #{index}: measured on inputs both " \
               f"finish{note}"
        meter = after
    return _measure_own(meter, repeats, order, note)[0]


def _measure_own(meter: _Meter, repeats: int, order: random.Random, note: str
                 ) -> tuple[EfficiencyDecision, _Stop | None]:
    """One measurement on ``meter``'s inputs: the decision, and the stop that ended it."""
    names = tuple(f"{name} #{index}" for name, index, _ in meter.chosen)
    samples: dict[str, list[float]] = {"baseline": [], "A": [], "B": []}
    rounds, probes = 0, []
    try:
        rounds, probes = _choose_rounds(meter)
        rounds, samples, outcome, fact, stats = measure_and_decide(meter, rounds, repeats,
                                                                   order)
    except (_Stop, TaskNotRunnableError) as exc:
        outcome, why = (exc.outcome, exc.why) if isinstance(exc, _Stop) else ("error", str(exc))
        return EfficiencyDecision(outcome, why + note, inputs=names, rounds=rounds,
                                  samples=samples, probes=tuple(probes)), \
            exc if isinstance(exc, _Stop) else None
    fact = f"{fact}; {rounds} rounds over {len(meter.chosen)} of the task's heaviest inputs"
    return EfficiencyDecision(outcome, fact + note, inputs=names, rounds=rounds,
                              samples=samples, probes=tuple(probes), stats=stats), None


def efficiency_facts(pairs: Sequence[Pair], tasks: Mapping[str, Task], *,
                     limits: SandboxLimits, runner: Runner | None = None, seed: int = 0,
                     scaled: bool = True, perf_client: Any = None) -> list[Fact]:
    """Efficiency facts of pairs whose two responses both pass their tests (checked before).

    Measured on the tasks' performance-exercising inputs (``scaled``, the default; see
    :func:`compare_efficiency`).

    Args:
        pairs: The pairs.
        tasks: Tasks by id; a pair whose task is missing gets an ``insufficient`` fact.
        limits: Limits of every sandboxed run.
        runner: Runs a payload (e.g. a :class:`~prefjudge.sandbox.zygote.ZygotePool`'s
            ``run``; default: a fresh sandbox per run).
        seed: Seeds the order of the runs.
        scaled: Measure on scaled inputs (False: the task's own inputs only).
        perf_client: A served model whose generators make the inputs (see
            :func:`compare_efficiency`).

    Returns:
        One fact per pair, in order (measured one pair at a time).
    """
    plan = resolve_isolation()
    facts = []
    for pair in pairs:
        task = tasks.get(pair.task_id)
        if task is None:
            facts.append(Fact(kind="efficiency", outcome="insufficient",
                              fact=f"no task {pair.task_id!r} to measure the code on"))
            continue
        decision = compare_efficiency(
            task, response_code(pair, "A"), response_code(pair, "B"), plan=plan,
            limits=limits, runner=runner, seed=seed, check_correct=False, scaled=scaled,
            perf_client=perf_client)
        facts.append(decision.to_fact())
    return facts
