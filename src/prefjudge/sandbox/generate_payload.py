"""Running an untrusted input generator in the sandbox: its payload, and reading what it gave.

A generator is Python source (written by a model) defining a function of one integer, the
scale, that returns one argument list for a task's function. It runs only in the sandbox,
through the harness's ``generate`` format (``child/_pj_generate.py``): called once per
scale, smallest first, each call under a CPU-time limit, each input sent back as JSON text
of at most ``max_chars`` characters. What comes back is untrusted: :func:`read_generated`
reads it with the same limits again and keeps only plain JSON argument lists, in the order
of the scales asked for, up to the first scale that has none (and says why).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from prefjudge.sandbox.adapters import interpret
from prefjudge.sandbox.compare import parse_line, raw_lines
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import RunOutcome

GENERATE_LIMITS = SandboxLimits(timeout_s=30.0, cpu_s=30, memory_mb=2048)
"""The limits of one generator run (every scale together)."""
CALL_CPU_S = 2.0
"""The most CPU seconds one call of the generator (and making its JSON) may take."""
REASON_MAX = 600


@dataclass(frozen=True)
class Generated:
    """What a generator run gave: inputs for the first scales, and why it stopped, if it did.

    Attributes:
        scales: The scales that gave an input, smallest first.
        inputs: Their inputs (argument lists of JSON values), in the same order.
        problem: Why the next scale gave none (None when every scale gave one).
        environment: The problem is the sandbox's or the harness's, not the generator's.
    """

    scales: tuple[int, ...] = ()
    inputs: tuple[list[Any], ...] = field(default=(), repr=False)
    problem: str | None = None
    environment: bool = False


def generate_payload(code: str, scales: list[int], max_chars: int, *,
                     entry_point: str = "perf_input", call_cpu_s: float = CALL_CPU_S
                     ) -> dict[str, Any]:
    """Payload calling ``entry_point`` of ``code`` at each scale (see the module docstring).

    Args:
        code: The generator's source (untrusted: it runs only in the sandbox).
        scales: The scales, smallest first.
        max_chars: The longest JSON text one input may have.
        entry_point: The generator's function.
        call_cpu_s: The most CPU seconds one call may take.

    Returns:
        The harness payload.
    """
    return {"format": "generate", "code": code, "entry_point": entry_point,
            "scales": [int(scale) for scale in scales], "max_chars": int(max_chars),
            "call_cpu_s": float(call_cpu_s)}


def _bounded(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_MAX else text[:REASON_MAX - 3] + "..."


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


def _argument_list(text: Any, max_chars: int) -> tuple[list[Any] | None, str | None]:
    """One input's JSON text as an argument list, or why it is not one."""
    if not isinstance(text, str):
        return None, "its input is not JSON text"
    if len(text) > max_chars:
        return None, f"its input has {len(text)} characters, more than {max_chars}"
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return None, f"its input is not plain JSON data ({type(exc).__name__}: {exc})"
    if not isinstance(value, list):
        return None, f"its input is a {type(value).__name__}, not a list of arguments"
    return value, None


def read_generated(payload: dict[str, Any], outcome: RunOutcome,
                   limits: SandboxLimits = GENERATE_LIMITS) -> Generated:
    """The inputs a generator run gave, checked again outside (see the module docstring).

    Args:
        payload: The run's payload (:func:`generate_payload`): the scales and limits asked.
        outcome: What the run produced.
        limits: The limits it ran under (quoted in a problem).

    Returns:
        The inputs of the first scales, and why the next one has none.
    """
    scales: list[int] = []
    inputs: list[list[Any]] = []
    problem: str | None = None
    for position, raw in enumerate(raw_lines(outcome.outputs)):
        line = parse_line(raw)
        expected = payload["scales"][position] if position < len(payload["scales"]) else None
        if not isinstance(line, dict) or line.get("scale") != expected or expected is None:
            problem = f"the generator's output line {position + 1} is not the harness's"
            break
        if "problem" in line:
            problem = str(line["problem"])
            break
        value, why = _argument_list(line.get("input"), int(payload["max_chars"]))
        if value is None:
            problem = f"at scale {expected}: {why}"
            break
        scales.append(expected)
        inputs.append(value)
    environment = False
    if problem is None and len(scales) < len(payload["scales"]):
        status = (outcome.result or {}).get("status")
        if outcome.outputs_over_cap:
            problem = "the generator's outputs were larger than the sandbox reads"
        elif status == "ran":
            problem = "the generator's run gave fewer inputs than it said"
        else:
            result = interpret(outcome, limits)
            environment = result.status == "error"
            problem = f"the generator's run stopped: {result.detail}"
    found = Generated(tuple(scales), tuple(inputs), None if problem is None else
                      _bounded(problem), environment)
    return found
