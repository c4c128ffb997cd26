"""Performance-exercising inputs made by a generator a model writes ("synthesizing a synthesizer").

EvalPerf's way to large inputs: rather than asking a model for one large input, ask it for
a small program that makes an input of any size. Here the model (any object with the
backend contract's ``model_id`` and ``generate``, :class:`prefjudge.backends.base.Backend`)
gets the task's prompt, its entry point and a few of its own inputs, from the prompt
template ``rubrics/prompts/perf_input_generator.md``, and is asked for
``def perf_input(scale: int) -> list``. The reply's code is **untrusted**: it is only
parsed here (:func:`parse_generator`, which never runs it), and runs only in the sandbox
(:mod:`prefjudge.sandbox.generate_payload`), called at the scales ``LADDER_BASE ** k``
(``k`` = 0 .. ``MAX_STEPS``); what it returns comes back as JSON and is kept only where it
is a list of arguments made of plain data, short enough (``MAX_INPUT_CHARS``). It runs
twice: a scale where the two runs differ, and every one above it, is dropped (inputs that
do not come back the same cannot be kept as a recipe).

The inputs then go through **the same acceptance** as scaled ones
(:mod:`~prefjudge.judge.facts.perf_inputs.accept`): scale by scale, smallest first, the
reference solution with the task's contract runs on the input twice
(:func:`~prefjudge.judge.facts.perf_inputs.accept.run_reference`), and the scale is
accepted where it returns, stably, within ``REF_BUDGET_S``; the ladder stops at the first
scale that is not accepted, that is no larger than the one before, whose predicted cost
passes the budget, or once ``MAX_ACCEPT_CPU_S`` is spent. At least two accepted scales
make a :class:`~prefjudge.judge.facts.perf_inputs.accept.PerfInputs` of strategy
``model``; otherwise there are none, and :class:`Synthesis` says why.

What makes it reproducible is :meth:`Synthesis.record`: the model's name, the prompt's
digest, the generator's source and digest, and each accepted scale's reference cost and
input digest; :func:`from_record` runs the kept generator again in the sandbox and checks
every input against its digest.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from prefjudge.backends.contract import Request, Result, Sampling, chat
from prefjudge.judge.facts.perf_inputs.accept import (
    LADDER_BASE,
    MAX_ACCEPT_CPU_S,
    MAX_INPUT_CHARS,
    MAX_STEPS,
    REF_BUDGET_S,
    PerfInputs,
    Runner,
    Step,
    line_output,
    predicted_cost,
    run_reference,
    with_contract,
)
from prefjudge.judge.facts.perf_inputs.scaling import input_digest
from prefjudge.paths import data_dir
from prefjudge.records import Task
from prefjudge.sandbox.compare import ReferenceOutputs, input_positions
from prefjudge.sandbox.generate_payload import (
    GENERATE_LIMITS,
    Generated,
    generate_payload,
    read_generated,
)

log = logging.getLogger(__name__)

STRATEGY = "model"
SEED = ("model", 0)
"""What :attr:`PerfInputs.seed` says of model-made inputs (no input of the task was grown)."""
ENTRY = "perf_input"
TEMPLATE = "perf_input_generator.md"
SEPARATOR = "=== user ==="
FIELDS = frozenset({"prompt", "entry_point", "examples", "max_chars"})
EXAMPLES = 3
EXAMPLE_CHARS = 300
PROMPT_CHARS = 6000
SOURCE_MAX = 20_000
"""The longest generator source taken from a reply (characters)."""
SAMPLING = Sampling(temperature=0.0, max_tokens=1024)
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


class ChatClient(Protocol):
    """What is asked of the model's client: the backend contract's ``model_id``, ``generate``."""

    model_id: str

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        """One result per request, in order (:meth:`prefjudge.backends.base.Backend.generate`)."""
        ...


@dataclass(frozen=True)
class Synthesis:
    """What asking a model for a generator came to.

    Attributes:
        task_id: The task.
        model: The model's name (the client's ``model_id``).
        perf: The accepted inputs, or None.
        reason: Why there are none (or what stopped the ladder, when there are).
        source: The generator's source, when the reply held one.
        prompt_sha256: The SHA-256 of the request's messages (the template filled in).
        reply: The model's reply, as it came (None when no reply came).
    """

    task_id: str
    model: str
    perf: PerfInputs | None
    reason: str
    source: str | None = None
    prompt_sha256: str = ""
    reply: str | None = field(default=None, repr=False)

    def record(self) -> dict[str, Any] | None:
        """What :func:`from_record` makes the same inputs again from; None without inputs."""
        if self.perf is None or self.source is None:
            return None
        return {"strategy": STRATEGY, "model": self.model, "prompt_sha256": self.prompt_sha256,
                "generator": self.source, "generator_sha256": _sha(self.source),
                "steps": [[s.factor, s.variant, s.ref_cpu_s, s.sha256] for s in self.perf.steps]}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the prompt ---------------------------------------------------------------------------------


def load_template() -> tuple[str, str]:
    """The template's system and user parts, checked: only its fields, each required one.

    Raises:
        ValueError: The file has no separator line, an unknown placeholder, or lacks one.
    """
    path = data_dir("rubrics") / "prompts" / TEMPLATE
    text = path.read_text(encoding="utf-8")
    if f"\n{SEPARATOR}\n" not in text:
        raise ValueError(f"{path}: no line {SEPARATOR!r} between the system and user parts")
    system, user = text.split(f"\n{SEPARATOR}\n", 1)
    used = set(_PLACEHOLDER.findall(text))
    if used - FIELDS or FIELDS - used:
        raise ValueError(f"{path}: placeholders {sorted(used)} are not {sorted(FIELDS)}")
    return system.strip(), user.strip()


def _shown(inp: Any) -> str:
    text = json.dumps(inp)
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + " ... (cut)"


def examples(task: Task, reference: ReferenceOutputs | None) -> list[Any]:
    """A few of the task's own inputs: its first base ones, and its dearest for the reference."""
    positions = input_positions(task)
    chosen = [inp for name, _, inp in positions if name == "base"][:EXAMPLES - 1]
    if reference is not None and len(reference.lines) == len(positions):
        dearest = max(range(len(positions)), key=lambda i: float(reference.lines[i]["cpu"]))
        chosen.append(positions[dearest][2])
    kept: list[Any] = []
    for inp in chosen or [inp for *_, inp in positions[:EXAMPLES]]:
        if all(json.dumps(inp) != json.dumps(other) for other in kept):
            kept.append(inp)
    return kept[:EXAMPLES]


def generator_request(task: Task, reference: ReferenceOutputs | None,
                      sampling: Sampling = SAMPLING) -> Request:
    """The chat request asking the model for the task's generator (free text, greedy)."""
    system, user = load_template()
    values = {"prompt": (task.prompt or "").strip()[:PROMPT_CHARS],
              "entry_point": str(task.entry_point),
              "examples": "\n".join(f"- `{_shown(inp)}`" for inp in examples(task, reference)),
              "max_chars": str(MAX_INPUT_CHARS)}
    text = _PLACEHOLDER.sub(lambda match: values[match.group(1)], user)
    return chat(f"perf-input:{task.task_id}", ("system", system), text, sampling=sampling)


def _request_sha(request: Request) -> str:
    return _sha(json.dumps([[m.role, m.content] for m in request.messages]))


# -- the reply ------------------------------------------------------------------------------------


def _defines_entry(source: str) -> bool:
    """Whether ``source`` parses and defines ``perf_input`` at its top level (never runs it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, ast.FunctionDef) and node.name == ENTRY
               and len(node.args.args) >= 1 for node in tree.body)


def parse_generator(reply: str | None) -> tuple[str | None, str]:
    """The generator's source in a model's reply, or None and why there is none.

    The first fenced code block (a Python one first) that parses and defines
    ``perf_input(scale)`` at its top level; else the whole reply, if it is such code. The
    code is only parsed (:func:`ast.parse`), never compiled or run here.

    Returns:
        ``(source, "")``, or ``(None, reason)``.
    """
    if not reply or not reply.strip():
        return None, "the model's reply is empty"
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(reply)]
    ordered = [body for lang, body in blocks if lang in ("python", "py", "python3")] + \
        [body for lang, body in blocks if lang not in ("python", "py", "python3")]
    for body in [*ordered, *([] if blocks else [reply])]:
        source = body.strip() + "\n"
        if len(source) > SOURCE_MAX:
            continue
        if _defines_entry(source):
            return source, ""
    where = f"none of its {len(blocks)} code block(s)" if blocks else "the reply (no code block)"
    return None, f"{where} defines {ENTRY}(scale) in code that parses"


# -- running the generator and accepting its inputs --------------------------------------------


def ladder_scales() -> list[int]:
    """The scales a generator is called at: ``LADDER_BASE ** k``, k = 0 .. ``MAX_STEPS``."""
    return [LADDER_BASE ** step for step in range(MAX_STEPS + 1)]


def run_generator(source: str, scales: list[int], run: Runner) -> Generated:
    """The generator's inputs at ``scales``, run twice in the sandbox; cut where they differ."""
    payload = generate_payload(source, scales, MAX_INPUT_CHARS, entry_point=ENTRY)
    first = read_generated(payload, run(payload, GENERATE_LIMITS), GENERATE_LIMITS)
    if not first.scales:
        return first
    again = read_generated(payload, run(payload, GENERATE_LIMITS), GENERATE_LIMITS)
    same = 0
    while (same < min(len(first.scales), len(again.scales))
           and input_digest(first.inputs[same]) == input_digest(again.inputs[same])):
        same += 1
    if same == len(first.scales):
        return first
    problem = (f"at scale {first.scales[same]}: the generator is not deterministic (two "
               "runs gave different inputs)") if same < len(again.scales) else again.problem
    return Generated(first.scales[:same], first.inputs[:same], problem, again.environment)


def _refused(task: Task, code: str, scale: int, inp: list[Any], run: Runner
             ) -> tuple[Step | None, float, str]:
    """Accept one scale's input (the reference twice), or say why not; the CPU spent."""
    first = run_reference(task, code, [inp], run)[0]
    if first is None:
        return None, 0.0, (f"the reference solution fails or runs too long on the scale-{scale} "
                           "input (outside the task's domain, or past the budget)")
    again = run_reference(task, code, [inp], run)[0]
    spent = float(first["cpu"]) + (float(again["cpu"]) if again is not None else 0.0)
    if again is None or line_output(again) != line_output(first):
        return None, spent, f"the reference's output on the scale-{scale} input is not stable"
    cpu = max(float(first["cpu"]), float(again["cpu"]))
    if cpu > REF_BUDGET_S:
        return None, spent, (f"the reference takes {cpu:.3f} s on the scale-{scale} input, "
                             f"over the {REF_BUDGET_S:g} s budget")
    return Step(scale, 0, cpu, input_digest(inp)), spent, ""


def accept_generated(task: Task, generated: Generated, run: Runner
                     ) -> tuple[PerfInputs | None, str]:
    """The accepted ladder of a generator's inputs (module docstring), and what stopped it."""
    code = with_contract(task)
    steps: list[Step] = []
    kept: list[list[Any]] = []
    spent, why = 0.0, generated.problem or ""
    for scale, inp in zip(generated.scales, generated.inputs, strict=True):
        if kept and len(json.dumps(inp)) <= len(json.dumps(kept[-1])):
            why = f"the scale-{scale} input is no larger than the one before"
            break
        if predicted_cost(steps) > 2 * REF_BUDGET_S or spent > MAX_ACCEPT_CPU_S:
            why = "the reference's cost at the next scale would pass the budget"
            break
        step, cost, refused = _refused(task, code, scale, inp, run)
        spent += cost
        if step is None:
            why = refused
            break
        steps.append(step)
        kept.append(inp)
    if len(steps) < 2:
        return None, (f"{len(steps)} scale(s) accepted, 2 needed"
                      + (f": {why}" if why else ""))
    return PerfInputs(task.task_id, SEED, STRATEGY, tuple(steps), tuple(kept)), why


# -- the whole path --------------------------------------------------------------------------


def synthesize(task: Task, client: ChatClient, run: Runner,
               reference: ReferenceOutputs | None, sampling: Sampling = SAMPLING) -> Synthesis:
    """Ask the model for a generator, run it in the sandbox, accept its inputs.

    Args:
        task: A HumanEval+/MBPP+ task (prompt, entry point, inputs, reference solution).
        client: The model's client (the backend contract: ``model_id``, ``generate``).
        run: Runs a payload in the sandbox.
        reference: The reference's outputs on the task's own inputs (the dearest input is
            one of the examples shown); None shows the first inputs only.
        sampling: The model's sampling (greedy, 1024 tokens by default).

    Returns:
        What came of it: the inputs, or None and why; the generator and the model's name.
    """
    request = generator_request(task, reference, sampling)
    model = str(getattr(client, "model_id", "") or "unknown")
    asked = {"task_id": task.task_id, "model": model, "prompt_sha256": _request_sha(request)}
    [result] = client.generate([request])
    if result.error is not None or result.text is None:
        return Synthesis(**asked, perf=None, reason=f"the model's call failed: {result.error}")
    source, why = parse_generator(result.text)
    if source is None:
        cut = " (the reply was cut at its token limit)" if result.finish_reason == "length" \
            else ""
        return Synthesis(**asked, perf=None, reason=why + cut, reply=result.text)
    generated = run_generator(source, ladder_scales(), run)
    if generated.environment:
        return Synthesis(**asked, perf=None, source=source, reply=result.text,
                         reason=f"the sandbox could not run the generator: {generated.problem}")
    perf, why = accept_generated(task, generated, run)
    found = Synthesis(**asked, perf=perf, reason=why, source=source, reply=result.text)
    log.info("model-made perf inputs of %s: %s", task.task_id,
             f"{len(perf.steps)} scales" if perf is not None else f"none ({why})")
    return found


def synthesized_perf_inputs(task: Task, client: ChatClient, run: Runner,
                            reference: ReferenceOutputs | None) -> PerfInputs | None:
    """The task's performance-exercising inputs from a model-written generator, or None.

    :func:`synthesize` without the account of how (its reason is logged).
    """
    found = synthesize(task, client, run, reference)
    if found.perf is None:
        log.info("no model-made perf inputs for %s: %s", task.task_id, found.reason)
    return found.perf


def from_record(task: Task, record: dict[str, Any], run: Runner) -> PerfInputs | None:
    """The inputs a :meth:`Synthesis.record` describes, made again, or None if they differ.

    The kept generator runs again in the sandbox at the recorded scales; each input must
    match its digest.
    """
    try:
        source = str(record["generator"])
        steps = tuple(Step(int(f), int(v), float(c), str(d)) for f, v, c, d in record["steps"])
        if record.get("strategy") != STRATEGY or _sha(source) != record["generator_sha256"]:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    scales = [step.factor for step in steps]
    generated = run_generator(source, scales, run)
    if list(generated.scales) != scales or any(
            input_digest(inp) != step.sha256 for inp, step in zip(generated.inputs, steps,
                                                                  strict=True)):
        return None
    return PerfInputs(task.task_id, SEED, STRATEGY, steps, generated.inputs)
