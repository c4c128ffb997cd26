"""Both sides measured on a task's performance-exercising inputs, scale by scale.

Each measured scale (:meth:`~prefjudge.judge.facts.perf_inputs.accept.PerfInputs.measured`)
is one input, measured as the efficiency fact measures any input
(:mod:`prefjudge.judge.facts.efficiency`): the baseline, A and B interleaved, the rounds
chosen so that the cheaper side's work stands well above the timer's noise, every call's
output compared with the reference's on that input (the reference's outputs on the
scaled inputs are computed once and kept like any others,
:func:`~prefjudge.sandbox.references.reference_outputs`). The scales give each side a
curve, and the pair one decision (:mod:`~prefjudge.judge.facts.perf_inputs.curve`).

Where the task keeps more than one family of scaled inputs
(:attr:`~prefjudge.judge.facts.perf_inputs.accept.PerfInputs.alternates`), both sides are
first probed on each family's largest input (:func:`choose_family`), and the
measurement goes on the family that separates them most: the family was chosen by the
reference's cost, which cannot see what the two sides do differently.

A side that fails on a scaled input (a wrong output, a raise, its time limit: EvalPlus's,
from the reference's time on that input) gets no cost claim, and **loses** efficiency when
the other side returns the reference's output on the same input: it does not win by
answering otherwise; both failing is ``insufficient``.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field, replace
from typing import Any

from prefjudge.judge.facts.efficiency_measure import (
    NET_FLOOR_S,
    SIDES,
    Runner,
    _choose_rounds,
    _Meter,
    _Stop,
    measure_and_decide,
)
from prefjudge.judge.facts.perf_inputs.accept import PerfInputs, build_perf_inputs
from prefjudge.judge.facts.perf_inputs.curve import ScalePoint, combine, curve_text, growth
from prefjudge.judge.facts.perf_inputs.store import MODEL_PERF_INPUTS, PERF_INPUTS
from prefjudge.records import FuncResult, Task
from prefjudge.sandbox.compare import ReferenceOutputs
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.references import reference_outputs

log = logging.getLogger(__name__)

PROBE_WORK_S = 0.02
"""The reference's CPU time a family's probe asks of each side (rounds on its largest input)."""
PROBE_RUNS = 2
"""Runs of each side (and the baseline) a probe takes the cheapest of."""
MAX_PROBE_ROUNDS = 10_000
SWITCH_RATIO = 1.3
"""How many times further apart an alternate family must put the sides to be measured on."""


@dataclass
class ScaledMeasure:
    """What measuring on scaled inputs found (the efficiency fact's decision is made of it).

    Attributes:
        outcome: ``A``/``B``, ``tie``, ``insufficient`` or ``error``.
        fact: The finding in words (the curves, then the decision).
        inputs: The inputs measured, as ``x16 of plus #61``.
        rounds: Calls per run at the largest scale.
        samples: The largest scale's runs (gross CPU seconds per side).
        probes: The largest scale's probes.
        stats: The largest scale's figures, with ``scales``, ``growth`` and
            ``perf_inputs`` (the curve and where the inputs came from).
        both_fail: Both sides failed on a scaled input (the caller measures them on the
            task's own inputs instead: they pass those).
    """

    outcome: str
    fact: str
    inputs: tuple[str, ...] = ()
    rounds: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    probes: tuple[dict[str, float], ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)
    both_fail: bool = False


def perf_inputs_for(task: Task, reference: ReferenceOutputs, run: Runner,
                    client: Any = None) -> PerfInputs | None:
    """The task's perf inputs: kept ones, else made now (and kept).

    With ``client`` (a served model: ``--perf-inputs model``), the inputs of a generator the
    model writes (:mod:`~prefjudge.judge.facts.perf_inputs.synthesized`), kept per model;
    where it gives none, the scaled ones.
    """
    if client is not None:
        from prefjudge.judge.facts.perf_inputs import synthesized

        model = str(getattr(client, "model_id", "") or "unknown")
        found = MODEL_PERF_INPUTS.get(
            task, lambda: _model_made(task, client, run, reference), key_extra=model,
            load=lambda kept, record: synthesized.from_record(kept, record, run))
        if found is not None:
            return found
    return PERF_INPUTS.get(task, lambda: build_perf_inputs(task, reference, run))


def _model_made(task: Task, client: Any, run: Runner, reference: ReferenceOutputs
                ) -> PerfInputs | None:
    from prefjudge.judge.facts.perf_inputs.synthesized import synthesize

    found = synthesize(task, client, run, reference)
    if found.perf is None:
        log.info("no model-made perf inputs for %s: %s", task.task_id, found.reason)
        return None
    return replace(found.perf, origin=found.record())


def _other_fails(meter: _Meter, stop: _Stop) -> _Stop | None:
    """Run the side ``stop`` did not stop once on the same inputs: its stop, or None."""
    other = "B" if stop.side == "A" else "A"
    try:
        meter.measure(other, 1)
    except _Stop as second:
        if second.side is None:
            raise
        return second
    return None


def _one_side_fails(meter: _Meter, stop: _Stop, factor: int) -> ScaledMeasure:
    """A side failed on a scaled input: the other wins if it returns the reference's there."""
    bad = str(stop.side)
    good = "B" if bad == "A" else "A"
    other = _other_fails(meter, stop)
    if other is not None:
        return ScaledMeasure("insufficient", f"both sides fail on the x{factor} input "
                             f"({stop.why}; {other.why})", both_fail=True)
    return ScaledMeasure(good, f"{stop.why} on the x{factor} input, where {good} returns "
                         f"the reference's output: {good} is the efficient one ({bad} "
                         "loses efficiency by failing, no cost is claimed for it)")


def _probe_family(task: Task, family: PerfInputs, slot: int, top: list[Any],
                  reference: ReferenceOutputs, codes: dict[str, str | None], warm: list[str],
                  run: Runner, limits: SandboxLimits) -> dict[str, Any] | None:
    """Both sides on a family's largest input: how far apart (None: both fail there)."""
    meter = _Meter(task, codes, [("plus", slot, top)], reference, warm, run, limits)
    ref_s = max(family.steps[-1].ref_cpu_s, 1e-6)
    rounds = max(1, min(MAX_PROBE_ROUNDS, math.ceil(PROBE_WORK_S / ref_s)))
    cost: dict[str, float] = {}
    for side in ("baseline", *SIDES) * PROBE_RUNS:
        try:
            spent = meter.measure(side, rounds)
        except _Stop as stop:
            if stop.side is None:
                raise
            if _other_fails(meter, stop) is not None:
                return None
            return {"family": family.label(), "ratio": math.inf, "fails": stop.side}
        cost[side] = min(spent, cost.get(side, math.inf))
    net = {side: max(cost[side] - cost["baseline"], NET_FLOOR_S) / rounds for side in SIDES}
    return {"family": family.label(), "ratio": max(net.values()) / min(net.values()),
            "per_call_s": net}


def choose_family(task: Task, perf: PerfInputs, codes: dict[str, str | None],
                  warm: list[str], run: Runner, limits: SandboxLimits
                  ) -> tuple[PerfInputs, list[dict[str, Any]]]:
    """The family to measure on, and each family's probe (none when there is one family).

    Each side runs on each family's largest input (rounds worth about
    :data:`PROBE_WORK_S` of the reference's time, every output checked; the cheapest of
    :data:`PROBE_RUNS` runs, the baseline's subtracted). A family where
    one side fails and the other returns the reference's output separates them most; one
    where both fail is left out, and so is a ``shift`` family where one side fails: its
    values leave the seed's range, where a side may rightly answer otherwise. The first
    family (the reference's choice) is kept unless another puts the sides
    :data:`SWITCH_RATIO` times further apart.

    Raises:
        _Stop: The baseline, the sandbox or the reference failed (an ``error``).
    """
    families = perf.families()
    if len(families) == 1:
        return perf, []
    tops = [family.inputs[-1] for family in families]
    probed_task = task.model_copy(update={"base_inputs": [], "plus_inputs": tops})
    reference = reference_outputs(probed_task, limits.time_doubled(), run)
    if isinstance(reference, FuncResult):
        raise _Stop("error", f"the reference solution on the scaled inputs: "
                    f"{reference.detail[:300]}")
    probes = [_probe_family(probed_task, family, slot, tops[slot], reference, codes, warm,
                            run, limits) for slot, family in enumerate(families)]
    chosen, ratio = 0, probes[0]["ratio"] if probes[0] else 0.0
    for slot, probe in enumerate(probes[1:], 1):
        if probe is not None and "fails" in probe and families[slot].strategy == "shift":
            probe["ratio"], probe["fails"] = 0.0, f"{probe['fails']} fails outside the " \
                "task's values (not counted)"
        if probe is not None and probe["ratio"] > SWITCH_RATIO * max(ratio, 1.0):
            chosen, ratio = slot, probe["ratio"]
    kept = [{**probe, "ratio": None if probe["ratio"] == math.inf else probe["ratio"]}
            for probe in probes if probe is not None]
    return families[chosen], kept


def _fails_text(fails: str) -> str:
    return f"{fails} fails" if fails in SIDES else fails


def _probes_text(probes: list[dict[str, Any]]) -> str:
    """The probes in words: ``; measured on ... of 3 probed: repeat of base #0 1.0x, ...``."""
    said = ", ".join(f"{probe['family']} " + (_fails_text(probe['fails']) if "fails" in probe
                                              else f"{probe['ratio']:.1f}x")
                     for probe in probes)
    return f"; measured on the family that separates the sides most of {len(probes)} " \
           f"probed: {said}"


def _scale(meter: _Meter, factor: int, repeats: int, order: random.Random
           ) -> tuple[ScalePoint, dict[str, list[float]], list[dict[str, float]], dict]:
    """Measure one scale: its point, its runs, its probes and its figures."""
    rounds, probes = _choose_rounds(meter)
    rounds, samples, outcome, fact, stats = measure_and_decide(meter, rounds, repeats, order)
    per_call = {side: stats["net_s"][side] / rounds for side in SIDES}
    point = ScalePoint(factor, outcome, per_call, stats["ratio"], stats["p_value"], rounds,
                       fact)
    return point, samples, probes, stats


def measure_scaled(task: Task, perf: PerfInputs, codes: dict[str, str | None],
                   warm: list[str], run: Runner, limits: SandboxLimits, repeats: int,
                   order: random.Random) -> ScaledMeasure:
    """Measure both sides on ``perf``'s scales and decide (see the module docstring).

    Raises:
        _Stop: The baseline or the sandbox failed (an ``error``: never the code's doing).
    """
    perf, families = choose_family(task, perf, codes, warm, run, limits)
    steps = perf.measured()
    scaled = perf.task(task, steps)
    reference = reference_outputs(scaled, limits.time_doubled(), run)
    if isinstance(reference, FuncResult):
        raise _Stop("error", f"the reference solution on the scaled inputs: "
                    f"{reference.detail[:300]}")
    seed = "the model's generator" if perf.strategy == "model" else \
        f"{perf.seed[0]} #{perf.seed[1]}"
    chosen_by = _probes_text(families) if families else ""
    names = tuple(f"x{perf.steps[step].factor} of {seed}" for step in steps)
    points: list[ScalePoint] = []
    samples: dict[str, list[float]] = {}
    probes: list[dict[str, float]] = []
    stats: dict[str, Any] = {}
    for slot, step in enumerate(steps):
        factor = perf.steps[step].factor
        meter = _Meter(scaled, codes, [("plus", slot, scaled.plus_inputs[slot])], reference,
                       warm, run, limits)
        try:
            point, samples, probes, stats = _scale(meter, factor, repeats, order)
        except _Stop as stop:
            if stop.side is None:
                raise
            found = _one_side_fails(meter, stop, factor)
            found.inputs = names
            found.fact += chosen_by
            return found
        points.append(point)
    outcome, why = combine(points)
    top = points[-1]
    fact = f"{curve_text(points)} ({perf.label()}{chosen_by}). At the x{top.factor} " \
           f"input: {top.fact}"
    if outcome != top.outcome or outcome == "tie":
        fact += f"; {why}"
    stats = {**stats, "scales": [point.to_dict() for point in points],
             "growth": {side: growth(points, side) for side in SIDES},
             "perf_inputs": {"seed": seed, "strategy": perf.strategy,
                             "factors": [perf.steps[step].factor for step in steps],
                             "probed": families}}
    return ScaledMeasure(outcome, fact, names, top.rounds, samples, tuple(probes), stats)
