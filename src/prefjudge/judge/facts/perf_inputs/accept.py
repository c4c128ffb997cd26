"""Accepting scaled inputs: the reference solution must take them, within a budget, stably.

For one task, every seed input (the task's largest inputs by size and its dearest by the
reference's CPU time) is grown by each strategy that fits it
(:mod:`~prefjudge.judge.facts.perf_inputs.scaling`) up a ladder of factors
(:data:`LADDER_BASE` to the power 0, 1, 2 ...). At each step the reference solution,
**with the task's contract** (EvalPlus's input assertions, kept in ``metadata``) put back
at the top of its body, runs in the sandbox on every family's candidates at once, twice.
A candidate is accepted where the reference returns (the contract holds: an input outside
the task's domain raises there), its CPU time per call stays within
:data:`REF_BUDGET_S` in both runs, and the two runs give the same output. Of a step's
candidates of one family (``near`` offers several) the one the reference works hardest on
is kept, read from the cheaper of its two runs: other work on the machine only adds time,
and a spike on one run must not pass a composite number for the prime beside it. A
family stops growing at its first step with no accepted candidate, and at
:data:`MAX_STEPS` or :data:`MAX_INPUT_CHARS`.

The family chosen is the one whose reference cost at its largest accepted input is the
highest per character of that input (the input whose cost grows most with scale, the
sizes being capped alike); its accepted steps are the task's
performance-exercising inputs (:class:`PerfInputs`); a ``shift`` family, whose values
leave the seed's range, is chosen only where no other grows; where none grows at all (a
contract that fixes a list's length), the ``inner`` families of the same seeds are tried
(what the lists hold grows). The best family of each other
strategy is kept beside it (:attr:`PerfInputs.alternates`, up to :data:`MAX_ALTERNATES`):
the reference's cost cannot see what two responses do differently (an index that grows
with its list makes an insert-at-front loop quadratic and leaves the reference as it
was), so the measurement probes both sides on every family and measures on the one that
separates them most (:func:`~prefjudge.judge.facts.perf_inputs.measure.choose_family`).

The CPU cost of making them is bounded: at most ``2 * (MAX_STEPS + 1)`` reference runs
of a few families each (plus one rerun per rejected candidate), each candidate at most
:data:`REF_BUDGET_S` of the reference's time: a few CPU-seconds per task, made once and kept
(:mod:`~prefjudge.judge.facts.perf_inputs.store`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefjudge.judge.facts.perf_inputs.scaling import (
    inner_strategies,
    input_digest,
    is_matrix,
    strategies_for,
    variants,
)
from prefjudge.records import Task
from prefjudge.sandbox.adapters import TaskNotRunnableError, reference_payload
from prefjudge.sandbox.compare import ReferenceOutputs, input_positions
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import RunOutcome
from prefjudge.sandbox.references import reference_from

Runner = Callable[[dict[str, Any], SandboxLimits], RunOutcome]

LADDER_BASE = 4
MAX_STEPS = 10
REF_BUDGET_S = 0.05
"""The most CPU seconds the reference may spend on one accepted input."""
MAX_INPUT_CHARS = 100_000
SEEDS_BY_SIZE = 3
SEEDS_BY_COST = 2
NEAR_SEEDS = 2
"""Seeds grown by ``near`` (each offers many candidates; the task's numbers lie close)."""
MAX_ACCEPT_CPU_S = 6.0
"""The reference's CPU time, summed over every candidate of a task, past which it stops."""
MAX_ALTERNATES = 4
"""Families of other strategies kept beside the chosen one (probed by the measurement)."""
MEASURED_SCALES = 2
SCALE_GAP = 2
"""Steps between two measured scales (a factor ``LADDER_BASE ** SCALE_GAP`` apart)."""
ACCEPT_LIMITS = SandboxLimits(timeout_s=10.0, cpu_s=10)
_FAILED_ON = re.compile(r"on plus input #(\d+)")


@dataclass(frozen=True)
class Step:
    """One accepted scale: its factor, which candidate, the reference's cost, the digest."""

    factor: int
    variant: int
    ref_cpu_s: float
    sha256: str


@dataclass(frozen=True)
class PerfInputs:
    """A task's performance-exercising inputs: one family's accepted ladder.

    Attributes:
        task_id: The task.
        seed: Which of the task's inputs was grown, as ``(set, index)``.
        strategy: How (:data:`~prefjudge.judge.facts.perf_inputs.scaling.STRATEGIES`).
        steps: The accepted scales, smallest first.
        inputs: The input of each step (regenerated from the recipe, checked by digest).
        origin: Where inputs not grown from the task's come from, as kept (a model's
            generator: :meth:`~prefjudge.judge.facts.perf_inputs.synthesized.Synthesis.record`);
            None for scaled inputs.
        alternates: The best family of each other strategy, best first (each without
            alternates of its own).
    """

    task_id: str
    seed: tuple[str, int]
    strategy: str
    steps: tuple[Step, ...]
    inputs: tuple[list[Any], ...] = field(repr=False, compare=False)
    origin: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    alternates: tuple[PerfInputs, ...] = field(default=(), repr=False, compare=False)

    def families(self) -> tuple[PerfInputs, ...]:
        """This family, then its alternates."""
        return (self, *self.alternates)

    def label(self) -> str:
        """The family in words: ``along of plus #3`` (``the model's generator``)."""
        if self.strategy == "model":
            return "the model's generator"
        return f"{self.strategy} of {self.seed[0]} #{self.seed[1]}"

    def measured(self, count: int = MEASURED_SCALES) -> list[int]:
        """Which steps are measured: the largest, then every :data:`SCALE_GAP` below it."""
        top = len(self.steps) - 1
        chosen = [top - SCALE_GAP * k for k in range(count) if top - SCALE_GAP * k >= 0]
        if len(chosen) < 2 and top >= 1:
            chosen = [top, top - 1]
        return sorted(chosen)

    def task(self, task: Task, steps: Sequence[int]) -> Task:
        """``task`` with the inputs of ``steps`` as its only (plus) inputs."""
        return task.model_copy(update={"base_inputs": [], "plus_inputs": [
            self.inputs[index] for index in steps]})

    def recipe(self) -> dict[str, Any]:
        """What regenerates the inputs exactly (:func:`from_recipe`; ``origin`` when set)."""
        if self.origin is not None:
            return dict(self.origin)
        recipe: dict[str, Any] = {
            "seed": list(self.seed), "strategy": self.strategy,
            "steps": [[s.factor, s.variant, s.ref_cpu_s, s.sha256] for s in self.steps]}
        if self.alternates:
            recipe["alternates"] = [other.recipe() for other in self.alternates]
        return recipe


def from_recipe(task: Task, recipe: dict[str, Any]) -> PerfInputs | None:
    """The inputs a :meth:`PerfInputs.recipe` describes, or None if they do not come back.

    Each is made again from the task's seed input and checked against its digest; so are
    the alternates' (any that does not come back fails the whole).
    """
    found = _family_from_recipe(task, recipe)
    if found is None:
        return None
    alternates = [_family_from_recipe(task, other) for other in recipe.get("alternates", [])]
    if any(other is None for other in alternates):
        return None
    return replace(found, alternates=tuple(alternates))  # type: ignore[arg-type]


def _family_from_recipe(task: Task, recipe: dict[str, Any]) -> PerfInputs | None:
    try:
        name, index = recipe["seed"]
        seed = (task.base_inputs if name == "base" else task.plus_inputs or [])[index]
        steps = tuple(Step(int(f), int(v), float(c), str(d)) for f, v, c, d in recipe["steps"])
        inputs = tuple(variants(task.task_id, seed, s.factor, recipe["strategy"])[s.variant]
                       for s in steps)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    if any(input_digest(inp) != s.sha256 for inp, s in zip(inputs, steps, strict=True)):
        return None
    return PerfInputs(task.task_id, (name, index), recipe["strategy"], steps, inputs)


def with_contract(task: Task) -> str:
    """The reference solution with the task's contract put back at the top of its body.

    EvalPlus's reference raises on an input outside the task's domain through these
    assertions; the dataset keeps them apart (``metadata["contract"]``). The code as it
    is when there is no contract or it cannot be put back.
    """
    code, contract = task.canonical_solution or "", str(task.metadata.get("contract") or "")
    if not contract.strip():
        return code
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                     and node.name == task.entry_point), None)
    if function is None or not function.body:
        return code
    first = function.body[0]
    docstring = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                 and isinstance(first.value.value, str))
    after = (first.end_lineno or first.lineno) if docstring else first.lineno - 1
    indent = " " * first.col_offset
    added = [indent + line.strip() for line in contract.splitlines() if line.strip()]
    lines = code.splitlines()
    patched = "\n".join(lines[:after] + added + lines[after:]) + "\n"
    try:
        compile(patched, "<reference>", "exec")
    except SyntaxError:
        return code
    return patched


def line_output(line: dict[str, Any]) -> dict[str, Any]:
    """A reference output line's output alone (its time and position left out)."""
    return {key: value for key, value in line.items() if key not in ("cpu", "set", "i")}


def run_reference(task: Task, code: str, inputs: list[list[Any]], run: Runner
                  ) -> list[dict[str, Any] | None]:
    """The reference's output line on each input, None where it fails or runs too long.

    One sandbox run for all; an input the reference fails on is dropped and the rest run
    again. A run that fails as a whole (out of time) rejects every input left.
    """
    lines: list[dict[str, Any] | None] = [None] * len(inputs)
    left = list(range(len(inputs)))
    while left:
        derived = task.model_copy(update={"base_inputs": [], "canonical_solution": code,
                                          "plus_inputs": [inputs[i] for i in left]})
        try:
            result = reference_from(derived, run(reference_payload(derived), ACCEPT_LIMITS),
                                    ACCEPT_LIMITS)
        except (OSError, TaskNotRunnableError):
            return lines
        if isinstance(result, ReferenceOutputs):
            for slot, line in zip(left, result.lines, strict=True):
                lines[slot] = line
            return lines
        failed = _FAILED_ON.search(result.detail or "")
        if failed is None or int(failed.group(1)) >= len(left):
            return lines
        del left[int(failed.group(1))]
    return lines


@dataclass
class _Family:
    seed: tuple[str, int]
    inp: list[Any]
    strategy: str
    steps: list[Step] = field(default_factory=list)
    inputs: list[list[Any]] = field(default_factory=list)
    live: bool = True


def predicted_cost(steps: Sequence[Step]) -> float:
    """The reference's cost at a ladder's next step, were its growth to go on as seen."""
    if not steps:
        return 0.0
    last = steps[-1].ref_cpu_s
    before = steps[-2].ref_cpu_s if len(steps) >= 2 else 0.0
    return last * max(float(LADDER_BASE) if before <= 0 else last / before, 2.0)


def fits_prompt(task: Task, inp: list[Any]) -> bool:
    """Whether a seed input fits what the prompt says of its shape (cheap guides only).

    A task about a *square* (magic squares, square matrices) grows square matrices only:
    a tiled non-square one would be refused at once by a side that checks the shape.
    """
    if "square" in (task.prompt or "").lower():
        return all(not is_matrix(arg) or len(arg) == len(arg[0]) for arg in inp)
    return True


def _seeds(task: Task, reference: ReferenceOutputs) -> list[tuple[str, int, Any]]:
    """The task's largest inputs by size and its dearest by the reference's CPU time."""
    positions = [p for p in input_positions(task)
                 if strategies_for(p[2]) and fits_prompt(task, p[2])]
    if not positions:
        return []
    cost = {(line["set"], int(line["i"])): float(line["cpu"]) for line in reference.lines}
    by_size = sorted(positions, key=lambda p: -len(json.dumps(p[2])))[:SEEDS_BY_SIZE]
    by_cost = sorted(positions, key=lambda p: -cost.get((p[0], p[1]), 0.0))[:SEEDS_BY_COST]
    chosen: list[tuple[str, int, Any]] = []
    for position in by_size + by_cost:
        if all(position[:2] != other[:2] for other in chosen):
            chosen.append(position)
    return chosen


def _step(task: Task, code: str, families: list[_Family], factor: int, run: Runner) -> float:
    """Grow every live family to ``factor``; keep its dearest accepted candidate, or stop it.

    Returns:
        The reference's CPU seconds on the step's candidates (both runs).
    """
    batch: list[tuple[_Family, int, list[Any]]] = []
    for family in families:
        if not family.live or predicted_cost(family.steps) > 2 * REF_BUDGET_S:
            family.live = False
            continue
        offered = variants(task.task_id, family.inp, factor, family.strategy)
        if max(len(json.dumps(inp)) for inp in offered) > MAX_INPUT_CHARS:
            family.live = False
            continue
        batch.extend((family, number, inp) for number, inp in enumerate(offered))
    if not batch:
        return 0.0
    first = run_reference(task, code, [inp for *_, inp in batch], run)
    kept = [slot for slot, line in enumerate(first) if line is not None]
    again = run_reference(task, code, [batch[slot][2] for slot in kept], run)
    spent = sum(float(line["cpu"]) for line in [*first, *again] if line is not None)
    best: dict[int, tuple[float, int, float]] = {}
    over: set[int] = set()
    for slot, line in zip(kept, again, strict=True):
        one = first[slot]
        if line is None or one is None or line_output(line) != line_output(one):
            continue
        family = batch[slot][0]
        times = (float(one["cpu"]), float(line["cpu"]))
        # the budget holds the dearer run; the hardest candidate is read from the cheaper
        # (other work on the machine only ever adds time to a run)
        if max(times) > REF_BUDGET_S:
            over.add(id(family))
        elif min(times) > best.get(id(family), (-1.0, 0, 0.0))[0]:
            best[id(family)] = (min(times), slot, max(times))
    for family in {id(f): f for f, *_ in batch}.values():
        if id(family) in over or id(family) not in best:
            family.live = False
            continue
        _, slot, cpu = best[id(family)]
        _, number, inp = batch[slot]
        family.steps.append(Step(factor, number, cpu, input_digest(inp)))
        family.inputs.append(inp)
    return spent


def build_perf_inputs(task: Task, reference: ReferenceOutputs, run: Runner
                      ) -> PerfInputs | None:
    """Grow, accept and choose a task's performance-exercising inputs (module docstring).

    Args:
        task: A HumanEval+/MBPP+ task.
        reference: Its reference outputs on its own inputs (their CPU times pick seeds).
        run: Runs a payload in the sandbox.

    Returns:
        The chosen family's inputs, or None when no family grows past its seed.
    """
    code = with_contract(task)
    seeds = _seeds(task, reference)
    families = [_Family((name, index), inp, strategy)
                for name, index, inp in seeds for strategy in strategies_for(inp)]
    near = [family for family in families if family.strategy == "near"]
    grown = _climb(task, code, [f for f in families if f.strategy != "near"] +
                   near[:NEAR_SEEDS], run)
    if not grown:  # the task's contract may fix a list's length: grow what it holds
        grown = _climb(task, code, [_Family((name, index), inp, strategy)
                                    for name, index, inp in seeds
                                    for strategy in inner_strategies(inp)], run)
    if not grown:
        return None
    # ``shift`` leaves the seed's range: probed beside the others, never chosen first
    grown.sort(key=lambda family: family.strategy == "shift")
    best, *others = grown
    strategies = {best.strategy}
    alternates = []
    for family in others:
        if family.strategy not in strategies and len(alternates) < MAX_ALTERNATES:
            strategies.add(family.strategy)
            alternates.append(_perf_of(task, family))
    return replace(_perf_of(task, best), alternates=tuple(alternates))


def _climb(task: Task, code: str, families: list[_Family], run: Runner) -> list[_Family]:
    """Grow ``families`` up the ladder; those that grew, dearest per character first."""
    spent = 0.0
    for step in range(MAX_STEPS + 1):
        if not any(family.live for family in families) or spent > MAX_ACCEPT_CPU_S:
            break
        spent += _step(task, code, families, LADDER_BASE ** step, run)
    return sorted((family for family in families if _grows(family)),
                  key=lambda f: (f.steps[-1].ref_cpu_s / len(json.dumps(f.inputs[-1])),
                                 f.steps[-1].factor), reverse=True)


def _grows(family: _Family) -> bool:
    """Whether a family has two accepted steps and its input grew between them.

    A seed that stays as it was however it is scaled (two empty lists tiled) gives a
    ladder whose reference cost is all noise.
    """
    return len(family.steps) >= 2 and \
        len(json.dumps(family.inputs[-1])) > len(json.dumps(family.inputs[0]))


def _perf_of(task: Task, family: _Family) -> PerfInputs:
    return PerfInputs(task.task_id, family.seed, family.strategy, tuple(family.steps),
                      tuple(family.inputs))

