"""Measuring one side's cost: runs, rounds, the noise rule and the decision between two.

The parts :mod:`prefjudge.judge.facts.efficiency` puts together (its docstring states
the method): :class:`_Meter` runs a side (or the baseline) for a number of rounds and
checks its outputs (:mod:`prefjudge.judge.facts.efficiency_outputs`); :func:`_choose_rounds`
probes both sides for the rounds; :func:`decide` applies the noise rule to the runs' CPU
seconds.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prefjudge.judge.facts.efficiency_outputs import gist, measured_outputs_problem
from prefjudge.records import Task
from prefjudge.sandbox.adapters import perf_payload
from prefjudge.sandbox.compare import ReferenceOutputs
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.preload import imports_of
from prefjudge.sandbox.process import RunOutcome

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
ONCE_ROUNDS = 16
"""Rounds at or below which a second probe (:data:`ONCE_PROBE_FACTOR` times the rounds)
tells a side's cost paid once a run from its cost per round."""
ONCE_PROBE_FACTOR = 4
ONCE_SHARE = 1.0
"""The most a side's once-a-run cost may be of the cheaper side's work over its rounds."""
RETRY_ROUNDS = 4
"""How many times the rounds of a tie that noise alone explains are measured again with."""
RETRY_CAP_S = 1.5
"""The most CPU seconds the dearer side's run may take in that second measurement."""
MIN_RELATIVE = 0.10
ALPHA = 0.05
NOISE_FACTOR = 2.0
MAD_TO_SIGMA = 1.4826
MEDIAN_ERROR = 1.2533  # standard error of a median of n normal samples: 1.2533 sigma / sqrt(n)
NET_FLOOR_S = 1e-4
DISTINCT_OUTPUTS = 8
"""Different outputs of one input a measured run writes (each compared); more is a problem."""
SIDES = ("A", "B")


class _Stop(Exception):
    """A measurement that cannot go on: the outcome (insufficient or error), why, and whose.

    ``side``: ``A`` or ``B`` when that side's run failed or answered otherwise than the
    reference (its doing); None for the baseline or the sandbox. ``timed_out``: the input
    (``(set, index)``, as the task numbers it) whose time limit the side's run exceeded,
    when that is how it failed.
    """

    def __init__(self, outcome: Outcome, why: str, side: str | None = None,
                 timed_out: tuple[str, int] | None = None):
        super().__init__(why)
        self.outcome = outcome
        self.why = why
        self.side = side
        self.timed_out = timed_out



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
        try:
            cpu_s = _cpu_of(side, outcome, self.limits, self.chosen)
        except _Stop as stop:
            if side != "baseline" and stop.outcome == "insufficient":
                stop.side = side
            raise
        if side != "baseline":
            problem = measured_outputs_problem(self.task, self.reference, self.chosen, outcome)
            if problem is not None:
                raise _Stop("insufficient", f"{side}'s {problem}: no efficiency claim", side)
        return cpu_s



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
                    "efficiency claim",
                    timed_out=_input_of(detail, chosen) if status == "timeout" else None)
    if outcome.cpu_s is None:
        raise _Stop("error", f"{who}: the sandbox reported no CPU time")
    return outcome.cpu_s


_ROUND_HEAD = re.compile(r"round (\d+): (base|plus) input #(\d+) ")


def _input_of(detail: str, chosen: Sequence[tuple[str, int, Any]]) -> tuple[str, int] | None:
    """The input a run's problem names (``round N: plus input #K ...``), as the task does."""
    head = _ROUND_HEAD.match(detail)
    if head is None:
        return None
    name, local = head.group(2), int(head.group(3))
    indices = [index for each, index, _ in chosen if each == name]
    return (name, indices[local]) if local < len(indices) else None


def _numbered(detail: str, chosen: Sequence[tuple[str, int, Any]]) -> str:
    """A run's problem with its input named by the task's number, not the run's.

    The cost runner calls the chosen inputs only, so it numbers them from 0 in each set;
    the head of its detail (``round N: plus input #K ``) is the runner's own words.
    """
    head, named = _ROUND_HEAD.match(detail), _input_of(detail, chosen)
    if head is None or named is None:
        return detail
    return f"round {head.group(1)}: {named[0]} input #{named[1]} " + detail[head.end():]


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
    chosen = max(1, min(MAX_ROUNDS, chosen))
    if chosen <= ONCE_ROUNDS:
        chosen = _beyond_once(meter, probes, probe, harness_per_round, chosen, target)
    return chosen, probes


def _beyond_once(meter: _Meter, probes: list[dict[str, float]], probe: dict[str, float],
                 harness_per_round: float, chosen: int, target: float) -> int:
    """The rounds, grown where a side's cost paid once a run hides its work per round.

    A side pays some costs once a run beyond the baseline's (its first output's line made
    in full, as a test run makes it: on a large output, more than the code's own work);
    with few rounds they dilute the difference between the sides. A second probe at
    :data:`ONCE_PROBE_FACTOR` times the last probe's rounds tells each side's cost per
    round (the slope) from its once-a-run cost; the rounds grow until the cheaper side's
    work is at least :data:`ONCE_SHARE` times the larger once-a-run cost (and
    ``target``), the dearer side's run staying within :data:`CAP_S`.
    """
    first = probe["rounds"]
    if max(probe[side] - probe["baseline"] for side in SIDES) * ONCE_PROBE_FACTOR > 2 * CAP_S:
        return chosen  # the work per round is large already: another probe costs too much
    more = ONCE_PROBE_FACTOR * int(first)
    second = _probe(meter, more)
    probes.append(second)
    base = (probe["baseline"], second["baseline"])
    per_round, once = [], []
    for side in SIDES:
        low = max(probe[side] - base[0], NET_FLOOR_S)
        high = max(second[side] - base[1], NET_FLOOR_S)
        slope = (high - low) / (more - first)
        if slope <= 0:
            return chosen  # noise larger than the work: the rounds stay as chosen
        per_round.append(slope)
        once.append(max(low - slope * first, 0.0))
    wanted = math.ceil(max(target, ONCE_SHARE * max(once)) / min(per_round))
    ceiling = math.floor((CAP_S - max(once)) / (max(per_round) + harness_per_round))
    return max(chosen, min(MAX_ROUNDS, wanted, ceiling))


# --- deciding --------------------------------------------------------------------------------


def _spread(values: Sequence[float]) -> float:
    """Scaled median absolute deviation (a standard deviation, were the noise normal)."""
    middle = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - middle) for v in values)


def _p_value(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)


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


def measure_and_decide(meter: _Meter, rounds: int, repeats: int, order: random.Random
                       ) -> tuple[int, dict[str, list[float]], Outcome, str, dict[str, Any]]:
    """Run the baseline, A and B interleaved with ``rounds`` rounds and decide.

    A tie that noise alone explains (:func:`more_would_help`) is measured again, on new
    runs, with :data:`RETRY_ROUNDS` times the rounds (as many as keep the dearer side's
    run within :data:`RETRY_CAP_S`): the work grows against the runs' start-up noise.
    Where the rounds cannot grow, another batch of ``repeats`` runs is added instead, and
    all are decided together.

    Returns:
        ``(rounds, samples, outcome, fact, stats)`` of the decision made last.
    """
    samples: dict[str, list[float]] = {"baseline": [], "A": [], "B": []}
    _interleaved(meter, rounds, repeats, order, samples)
    outcome, fact, stats = decide(samples)
    if outcome != "tie" or not more_would_help(stats):
        return rounds, samples, outcome, fact, stats
    medians = stats["median_s"]
    per_round = max(max(medians[side] for side in SIDES) - medians["baseline"], 0.0) / rounds
    harness = medians["baseline"]
    more = min(rounds * RETRY_ROUNDS, MAX_ROUNDS,
               math.floor((RETRY_CAP_S - harness) / max(per_round, 1e-9)))
    if more >= 2 * rounds:
        samples = {"baseline": [], "A": [], "B": []}
        rounds = more
    _interleaved(meter, rounds, repeats, order, samples)
    outcome, fact, stats = decide(samples)
    return rounds, samples, outcome, fact, stats


# --- the comparison --------------------------------------------------------------------------


def _interleaved(meter: _Meter, rounds: int, repeats: int, order: random.Random,
                 samples: dict[str, list[float]]) -> None:
    """Run the baseline, A and B ``repeats`` times each, in a shuffled order every time."""
    for _ in range(repeats):
        sides = ["baseline", *SIDES]
        order.shuffle(sides)
        for side in sides:
            samples[side].append(meter.measure(side, rounds))
