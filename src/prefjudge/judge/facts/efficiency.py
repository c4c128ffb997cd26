"""Efficiency evidence: which of two correct responses costs less CPU on the task's inputs.

Like EvalPerf, the cost of a HumanEval+/MBPP+ solution is what it takes to run it on the
task's most demanding inputs, compared between two solutions that both pass the tests.

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
work takes about :data:`TARGET_S` and the dearer side's at most :data:`CAP_S`. The inputs
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
the noise alone explains (the ratio reaches (2), but (1) or (3) fails) gets one more batch
of ``repeats`` runs of each, and is decided again on all of them.

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
whose responses do not both pass their tests is never measured: the tests alone decide it,
by the one rule of :mod:`prefjudge.judge.facts.time_limits` (a side that runs out of time
on its tests where the other finishes is the dearer one; any other failure is
``insufficient``), here as in the evidence judge.

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

import hashlib
import json
import math
import random
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prefjudge.judge.facts.correctness import correctness_fact, response_code
from prefjudge.judge.facts.time_limits import efficiency_from_tests
from prefjudge.records import Fact, FuncResult, Pair, Task
from prefjudge.sandbox import resolve_isolation
from prefjudge.sandbox.adapters import TaskNotRunnableError, perf_payload
from prefjudge.sandbox.compare import (
    EVALPLUS_LINE_MAX,
    INPUT_SETS,
    ReferenceOutputs,
    SpoiledOutputs,
    _compare_one,
    _output_line,
    input_positions,
    parse_line,
    raw_lines,
)
from prefjudge.sandbox.functional import run_one
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.preload import imports_of
from prefjudge.sandbox.process import RunOutcome, run_in_sandbox
from prefjudge.sandbox.references import reference_outputs

Outcome = Literal["A", "B", "tie", "insufficient", "error"]
Runner = Callable[[dict[str, Any], SandboxLimits], RunOutcome]

COUNTER = "cpu_time:rusage"
"""The counter every cost is read from: CPU time of the run's processes (getrusage)."""
DEFAULT_REPEATS = 7
MAX_INPUTS = 5
TARGET_S = 0.03
CAP_S = 0.5
PROBE_S = 0.02
PROBE_FLOOR_S = 0.005
MAX_PROBES = 6
MAX_ROUNDS = 200_000
MIN_RELATIVE = 0.10
ALPHA = 0.05
NOISE_FACTOR = 2.0
MAD_TO_SIGMA = 1.4826
MEDIAN_ERROR = 1.2533  # standard error of a median of n normal samples: 1.2533 sigma / sqrt(n)
NET_FLOOR_S = 1e-4
GIST_CHARS = 300
DISTINCT_OUTPUTS = 8
"""Different outputs of one input a measured run writes (each compared); more is a problem."""
SIDES = ("A", "B")


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


class _Stop(Exception):
    """A measurement that cannot go on: the outcome (insufficient or error) and why."""

    def __init__(self, outcome: Outcome, why: str):
        super().__init__(why)
        self.outcome = outcome
        self.why = why


# --- choosing inputs -------------------------------------------------------------------------


def heaviest_inputs(task: Task, reference: ReferenceOutputs, count: int = MAX_INPUTS
                    ) -> list[tuple[str, int, Any]]:
    """The task's ``count`` most demanding inputs, as ``(set, index, input)``.

    Ranked by the reference solution's CPU time on each (measured in its own sandbox; the
    reference is trusted code), then by the input's size as JSON.
    """
    positions = input_positions(task)
    ranked = sorted(
        zip(reference.lines, positions, strict=True),
        key=lambda pair: (-float(pair[0]["cpu"]), -len(json.dumps(pair[1][2]))),
    )
    return [position for _, position in ranked[:count]]


def in_run_order(chosen: Sequence[tuple[str, int, Any]]) -> list[tuple[str, int, Any]]:
    """The chosen inputs in the order a run calls them: base first, each set in order."""
    return sorted(chosen, key=lambda position: (INPUT_SETS.index(position[0]), position[1]))


def _reference(task: Task, limits: SandboxLimits, run: Runner) -> ReferenceOutputs | FuncResult:
    return reference_outputs(task, limits.time_doubled(), run)


def warm_imports(*codes: str) -> list[str]:
    """Top-level modules the codes import (imported before every run's rounds)."""
    modules = set()
    for code in codes:
        modules |= {entry for entry in imports_of(code) if ":" not in entry}
    return sorted(modules)


# --- measuring -------------------------------------------------------------------------------


@dataclass
class _Meter:
    """Runs one side (or the baseline) with a number of rounds; returns its CPU seconds.

    Every run of a side is checked (:func:`measured_outputs_problem`): a side whose
    measured outputs are not the reference's stops the measurement.
    """

    task: Task
    codes: dict[str, str | None]
    chosen: list[tuple[str, int, Any]]
    reference: ReferenceOutputs
    warm: list[str]
    run: Runner
    limits: SandboxLimits

    def payload(self, side: str, rounds: int) -> dict[str, Any]:
        """The cost runner's payload: the chosen inputs, their sets and CPU-time limits."""
        payload = perf_payload(self.task, self.codes[side], [inp for *_, inp in self.chosen],
                               rounds, self.warm)
        limits = self.reference.time_limits(self.task)
        payload["input_sets"] = [name for name, _, _ in self.chosen]
        payload["time_limits"] = [limits[name][index] for name, index, _ in self.chosen]
        payload["distinct_outputs"] = DISTINCT_OUTPUTS
        return payload

    def measure(self, side: str, rounds: int) -> float:
        try:
            outcome = self.run(self.payload(side, rounds), self.limits)
        except OSError as exc:
            raise _Stop("error", f"the sandbox could not start: {exc}") from exc
        cpu_s = _cpu_of(side, outcome, self.limits, self.chosen)
        if side != "baseline":
            problem = measured_outputs_problem(self.task, self.reference, self.chosen, outcome)
            if problem is not None:
                raise _Stop("insufficient", f"{side}'s {problem}: no efficiency claim")
        return cpu_s


# --- checking what was measured --------------------------------------------------------------


def _atol_at(task: Task, reference: ReferenceOutputs, name: str, index: int) -> float:
    """The tolerance a test run compares input ``index`` of set ``name`` with.

    EvalPlus carries it along a set: ``task.atol``, else 1e-6 once an output made of
    floats came before (every earlier one matched: the side passed its tests).
    """
    atol = float(task.atol or 0)
    if atol == 0 and any(line.get("fl") for line in reference.lines
                         if line["set"] == name and int(line["i"]) < index):
        return 1e-6
    return atol


def _written_lines(outcome: RunOutcome) -> list[str] | str:
    """The lines of a measured run's outputs, or why they are not the ones it wrote.

    The run's result (which only the harness can write: it carries the nonce) holds the
    SHA-256 of what it wrote; a file the code rewrote or added to does not match it.
    """
    text, result = outcome.outputs, outcome.result or {}
    if text is None or outcome.outputs_over_cap:
        return "measured outputs did not come back"
    written = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if written != result.get("outputs_sha256"):
        return "measured outputs are not what its run wrote (the outputs file was changed)"
    return list(raw_lines(text))


def measured_outputs_problem(task: Task, reference: ReferenceOutputs,
                             chosen: Sequence[tuple[str, int, Any]], outcome: RunOutcome
                             ) -> str | None:
    """What is wrong with the outputs of a side's measured run, if anything.

    The cost runner writes, per input, each different output once (up to
    :data:`DISTINCT_OUTPUTS`; ``child/_pj_perf.py``); each is compared with the
    reference's output for that input, by the test runs' own rule
    (:func:`~prefjudge.sandbox.compare.check_output`, EvalPlus's tolerances and oracles).

    Args:
        task: The task.
        reference: Its reference outputs.
        chosen: The inputs measured, as ``(set, index, input)``, in the run's order
            (base inputs first, each set in order).
        outcome: The side's measured run, which said ``ran``.

    Returns:
        None when every output of every round matched; else ``measured outputs differ
        from the reference on N of M inputs (the first difference)``, or why its outputs
        could not be read or were not all compared.
    """
    lines = _written_lines(outcome)
    if isinstance(lines, str):
        return lines
    slots: dict[tuple[str, int], int] = {}  # (set, index among the run's) -> slot
    taken = dict.fromkeys(INPUT_SETS, 0)
    for slot, (name, _, _) in enumerate(chosen):
        slots[(name, taken[name])] = slot
        taken[name] += 1
    wants = {(line["set"], int(line["i"])): line for line in reference.lines}
    seen: set[int] = set()
    differ: dict[int, str] = {}
    for raw in lines:
        line = parse_line(raw) if len(raw) <= EVALPLUS_LINE_MAX else None
        key = (line.get("set"), line.get("i")) if isinstance(line, dict) else None
        slot = slots.get(key) if isinstance(key, tuple) and isinstance(key[1], int) else None
        if slot is None:
            return "measured outputs could not be read (a line is out of place)"
        seen.add(slot)
        detail = _measured_difference(task, reference, chosen[slot], line, wants)
        if detail is not None:
            differ.setdefault(slot, detail)
    if len(seen) < len(chosen):
        return (f"measured outputs could not be read ({len(chosen) - len(seen)} of "
                f"{len(chosen)} inputs have none)")
    if not differ:
        return _varied(outcome, len(chosen))
    return (f"measured outputs differ from the reference on {len(differ)} of {len(chosen)} "
            f"inputs ({gist(differ[min(differ)])})")


def _varied(outcome: RunOutcome, count: int) -> str | None:
    """Why a run whose written outputs all matched still makes no claim, if it does not.

    Beyond :data:`DISTINCT_OUTPUTS` different outputs of one input the runner writes no
    more of them (``outputs_varied``: how many inputs had more): those were not compared.
    """
    varied = str((outcome.result or {}).get("outputs_varied", "0"))
    if varied == "0":
        return None
    return (f"measured outputs took more different values than are compared (on "
            f"{gist(varied, 20)} of {count} inputs)")


def _measured_difference(task: Task, reference: ReferenceOutputs,
                         where: tuple[str, int, Any], line: dict[str, Any],
                         wants: dict[tuple[str, int], dict[str, Any]]) -> str | None:
    """How one measured output differs from the reference's (None: it matches)."""
    name, index, inp = where
    try:
        got = _output_line(line, line["set"], line["i"])
        if "raised" in got or "timeout" in got:
            return f"{name} input #{index}: the run says the call did not return"
        atol = _atol_at(task, reference, name, index)
        _, detail = _compare_one(task, (name, index, inp), got, wants[(name, index)], atol)
    except (SpoiledOutputs, ValueError, KeyError, TypeError, RecursionError) as exc:
        detail = f"{name} input #{index}: the output could not be read ({exc})"
    return detail


def _cpu_of(side: str, outcome: RunOutcome, limits: SandboxLimits,
            chosen: Sequence[tuple[str, int, Any]] = ()) -> float:
    """The run's CPU seconds, or :class:`_Stop` saying why it does not count.

    A side's run that did not finish (it raised, ran out of time, or said ``error``: a
    module it imports only when measured) is the side's doing, never an error: its test
    run passed in the same environment. ``chosen``: the inputs measured, to name them as
    the task numbers them.
    """
    who = "the baseline run" if side == "baseline" else f"{side}'s measurement run"
    blame: Outcome = "error" if side == "baseline" else "insufficient"
    if outcome.setup_error:
        raise _Stop("error", f"the sandbox could not be set up: {outcome.setup_error}")
    if outcome.timed_out:
        raise _Stop(blame, f"{who} exceeded its {limits.timeout_s:g} s limit")
    if outcome.output_exceeded:
        raise _Stop(blame, f"{who} flooded its output")
    status = (outcome.result or {}).get("status")
    if status != "ran":
        detail = str((outcome.result or {}).get("detail") or
                     "it ended before its rounds finished")
        if side == "baseline":
            verb = "could not run" if status == "error" else "did not finish"
            raise _Stop("error", f"{who} {verb}: {gist(detail)}")
        raise _Stop(blame, f"{who} did not finish ({gist(_numbered(detail, chosen))}): no "
                    "efficiency claim")
    if outcome.cpu_s is None:
        raise _Stop("error", f"{who}: the sandbox reported no CPU time")
    return outcome.cpu_s


_ROUND_HEAD = re.compile(r"round (\d+): (base|plus) input #(\d+) ")


def _numbered(detail: str, chosen: Sequence[tuple[str, int, Any]]) -> str:
    """A run's problem with its input named by the task's number, not the run's.

    The cost runner calls the chosen inputs only, so it numbers them from 0 in each set;
    the head of its detail (``round N: plus input #K ``) is the runner's own words.
    """
    head = _ROUND_HEAD.match(detail)
    if head is None:
        return detail
    name, local = head.group(2), int(head.group(3))
    indices = [index for each, index, _ in chosen if each == name]
    if local >= len(indices):
        return detail
    return (f"round {head.group(1)}: {name} input #{indices[local]} "
            + detail[head.end():])


def _probe(meter: _Meter, rounds: int) -> dict[str, float]:
    return {"rounds": rounds, **{side: meter.measure(side, rounds)
                                 for side in ("baseline", *SIDES)}}


def _choose_rounds(meter: _Meter) -> tuple[int, list[dict[str, float]]]:
    """Probe both sides from one round up; the rounds to run each side with.

    Each probe runs the baseline, A and B once (twice when the dearer side's cost would end
    the probing, keeping the smaller of each: a run slowed by something else only ever
    costs more). The rounds grow (at most 100-fold a step,
    so that the dearer side costs about :data:`PROBE_S`) until the cheaper side's work
    stands out of the start-up cost (above :data:`PROBE_FLOOR_S` and half the cost of a
    one-round baseline) or the dearer side's reaches :data:`PROBE_S`. The rounds chosen
    give the cheaper side about :data:`TARGET_S` of work (at least the start-up cost),
    and the dearer side's run at most :data:`CAP_S` beyond its start-up (its work, and
    the copies and loop the baseline also pays).
    """
    rounds, probes, startup = 1, [], 0.0
    for _ in range(MAX_PROBES):
        probe = _probe(meter, rounds)
        startup = startup or probe["baseline"]
        net = [max(probe[side] - probe["baseline"], NET_FLOOR_S) for side in SIDES]
        enough = max(PROBE_FLOOR_S, startup / 2)
        if max(PROBE_S, enough) <= max(net) < CAP_S:  # would stop here: no fluke?
            again = _probe(meter, rounds)
            probe = {key: min(value, again[key]) for key, value in probe.items()}
            net = [max(probe[side] - probe["baseline"], NET_FLOOR_S) for side in SIDES]
        probes.append(probe)
        if min(net) >= enough or max(net) >= max(PROBE_S, enough) or rounds >= MAX_ROUNDS:
            break
        step = math.ceil(max(PROBE_S, enough) / max(net))
        rounds = min(MAX_ROUNDS, rounds * max(2, min(100, step)))
    per_round = [net_s / rounds for net_s in net]
    harness_per_round = max(probe["baseline"] - startup, 0.0) / rounds  # copies, loop
    target = max(TARGET_S, startup)
    chosen = min(math.ceil(target / min(per_round)),
                 math.floor(CAP_S / (max(per_round) + harness_per_round)))
    return max(1, min(MAX_ROUNDS, chosen)), probes


# --- deciding --------------------------------------------------------------------------------


def _spread(values: Sequence[float]) -> float:
    """Scaled median absolute deviation (a standard deviation, were the noise normal)."""
    middle = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - middle) for v in values)


def _p_value(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)


def gist(text: str, size: int = GIST_CHARS) -> str:
    """``text`` on one line, its start and its end when longer than ``size`` characters.

    A problem's detail begins with where it happened and ends with what happened (the
    exception, the expected and the actual output): a fact keeps both.
    """
    line = " ".join(text.split())
    if len(line) <= size:
        return line
    half = (size - 5) // 2
    return f"{line[:half]} ... {line[-half:]}"


def _seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def decide(samples: dict[str, list[float]], *, min_relative: float = MIN_RELATIVE,
           alpha: float = ALPHA, noise_factor: float = NOISE_FACTOR
           ) -> tuple[Outcome, str, dict[str, Any]]:
    """Decide from the runs' CPU seconds which side is cheaper (see the module docstring).

    Args:
        samples: Gross CPU seconds of each run: ``A``, ``B`` and ``baseline``.
        min_relative: Smallest relative difference of net costs that can decide.
        alpha: Largest Mann-Whitney p-value that can decide.
        noise_factor: How many times the measured noise the gap must exceed.

    Returns:
        ``(outcome, fact, stats)``: ``A``, ``B`` or ``tie``; the sentence; the figures.
    """
    medians = {side: statistics.median(values) for side, values in samples.items()}
    net = {side: max(medians[side] - medians["baseline"], NET_FLOOR_S) for side in SIDES}
    cheap, dear = sorted(SIDES, key=lambda side: net[side])
    ratio = net[dear] / net[cheap]
    spread = {side: _spread(samples[side]) for side in SIDES}
    runs = len(samples["A"])
    noise = MEDIAN_ERROR * math.hypot(spread["A"], spread["B"]) / math.sqrt(runs)
    p_value = _p_value(samples["A"], samples["B"])
    gap = medians[dear] - medians[cheap]
    stats = {
        "median_s": medians, "net_s": net, "ratio": ratio, "spread_s": spread,
        "noise_s": noise, "p_value": p_value, "min_relative": min_relative, "alpha": alpha,
        "noise_factor": noise_factor,
    }
    noise_pct = 100 * max(spread[side] / max(medians[side], NET_FLOOR_S) for side in SIDES)
    said = (f"A's code took {_seconds(net['A'])} CPU (median of {runs} runs, start-up "
            f"subtracted) vs B's {_seconds(net['B'])}")
    if p_value > alpha:
        why = f"the runs overlap (Mann-Whitney p={p_value:.2g} > {alpha:g})"
    elif ratio < 1 + min_relative:
        why = f"{ratio:.2f}x is under the {1 + min_relative:.2f}x needed to decide"
    elif gap <= noise_factor * noise:
        why = (f"the gap ({_seconds(gap)}) is within {noise_factor:g}x the noise "
               f"(±{_seconds(noise)})")
    else:
        fact = (f"{said}: {cheap} is {ratio:.1f}x cheaper (noise ±{noise_pct:.0f} %, "
                f"Mann-Whitney p={p_value:.2g})")
        return cheap, fact, stats  # type: ignore[return-value]
    return "tie", f"{said}: no clear difference, {why}", stats


def more_would_help(stats: dict[str, Any]) -> bool:
    """Whether a tie came from noise alone: the costs differ enough, the runs too little."""
    return stats["ratio"] >= 1 + stats["min_relative"]


# --- the comparison --------------------------------------------------------------------------


def _interleaved(meter: _Meter, rounds: int, repeats: int, order: random.Random,
                 samples: dict[str, list[float]]) -> None:
    """Run the baseline, A and B ``repeats`` times each, in a shuffled order every time."""
    for _ in range(repeats):
        sides = ["baseline", *SIDES]
        order.shuffle(sides)
        for side in sides:
            samples[side].append(meter.measure(side, rounds))


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
) -> EfficiencyDecision:
    """Measure both responses' CPU cost on the task's heaviest inputs and compare them.

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
        max_inputs: How many of the heaviest inputs every run calls the code on.

    Returns:
        The decision, with its measurements; never raises for bad code.

    Raises:
        ValueError: ``repeats`` below 4.
    """
    if repeats < 4:
        raise ValueError(f"repeats must be at least 4, got {repeats}")
    run = runner or (lambda payload, run_limits: run_in_sandbox(plan, payload, run_limits))
    codes: dict[str, str | None] = {"A": code_a, "B": code_b, "baseline": None}
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
    chosen = in_run_order(heaviest_inputs(task, reference, max_inputs))
    names = tuple(f"{name} #{index}" for name, index, _ in chosen)
    meter = _Meter(task, codes, chosen, reference, warm_imports(code_a, code_b), run, limits)
    samples: dict[str, list[float]] = {"baseline": [], "A": [], "B": []}
    rounds, probes = 0, []
    order = random.Random(seed)
    try:
        rounds, probes = _choose_rounds(meter)
        _interleaved(meter, rounds, repeats, order, samples)
        outcome, fact, stats = decide(samples)
        if outcome == "tie" and more_would_help(stats):
            _interleaved(meter, rounds, repeats, order, samples)
            outcome, fact, stats = decide(samples)
    except (_Stop, TaskNotRunnableError) as exc:
        outcome, why = (exc.outcome, exc.why) if isinstance(exc, _Stop) else ("error", str(exc))
        return EfficiencyDecision(outcome, why, inputs=names, rounds=rounds,
                                  samples=samples, probes=tuple(probes))
    fact = f"{fact}; {rounds} rounds over {len(chosen)} of the task's heaviest inputs"
    return EfficiencyDecision(outcome, fact, inputs=names, rounds=rounds, samples=samples,
                              probes=tuple(probes), stats=stats)


def efficiency_facts(pairs: Sequence[Pair], tasks: Mapping[str, Task], *,
                     limits: SandboxLimits, runner: Runner | None = None, seed: int = 0
                     ) -> list[Fact]:
    """Efficiency facts of pairs whose two responses both pass their tests (checked before).

    Args:
        pairs: The pairs.
        tasks: Tasks by id; a pair whose task is missing gets an ``insufficient`` fact.
        limits: Limits of every sandboxed run.
        runner: Runs a payload (e.g. a :class:`~prefjudge.sandbox.zygote.ZygotePool`'s
            ``run``; default: a fresh sandbox per run).
        seed: Seeds the order of the runs.

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
            limits=limits, runner=runner, seed=seed, check_correct=False)
        facts.append(decision.to_fact())
    return facts
