"""Cost runner: calls a HumanEval+/MBPP+ function on chosen inputs, round after round.

What a run costs is measured outside, by the run's supervisor (the kernel's CPU count of
every process of the run, ``launcher.children_cpu_s``): nothing here times anything, so
code that replaces ``time.process_time`` or ``time.perf_counter`` changes nothing.

**Every measured call is a checked call.** The calls go through the EvalPlus runner's own
code (``_pj_evalplus._run_candidate``, ``_run_set``, ``_call_with_limit``), as in a test
run: each with its input's CPU-time limit, its output made into the line a test run
writes. Of each input's lines, every different one is written to the outputs file once
(up to ``distinct_outputs`` an input; the result counts the inputs with more:
:class:`OutputsLog`); prefjudge compares every line written with the reference's output
outside
(``prefjudge.judge.facts.efficiency``), and the result carries the SHA-256 of what was
written, so a file the code rewrote does not pass for the run's. A side that returns a
wrong output in any round of any run is caught, whatever it found out about being
measured.

**A measured call looks like a test call.** Above the function the candidate sees the
frames of a test run, by name and file: ``_call_with_limit``, ``_run_set`` and
``_run_candidate`` are the EvalPlus runner's; ``run`` and ``_load_function`` are this
runner's, compiled under the EvalPlus runner's file name (:data:`_DRIVER`). Output goes
to the harness's counting sinks as in a test run (the count starts again each round, so
a solution that prints is held to the test run's cap per round); this module imports
nothing a test run does not (``marshal``, a built-in, makes the copies); the harness
takes ``_pj_*`` modules out of ``sys.modules``; and the payload the harness holds is
rewritten to a test run's (``format: evalplus``) before the code runs. What is left to
tell them apart is how many inputs there are and how often the code is executed, and
the harness's own state walked to through frames (the limit the README states).

Each run:

1. imports ``warm_imports`` (the modules either side's code imports), so that import
   costs are the same in every run of a pair and cancel out;
2. plans, per argument, the cheapest exact way to give every call a fresh copy of the
   input as the task stores it (none for immutable values, a slice for a list of
   immutable values, a ``marshal`` round trip for anything nested and mutable), so that
   a function that changes its arguments in place never sees them changed by an earlier
   call; the EvalPlus runner turns the copies into Python values (MBPP+ tuples, sets);
3. for each of ``rounds`` rounds: executes the code in a fresh namespace (so caches kept
   in the function's module do not carry over from one round to the next), then calls
   the function once on fresh copies of each input.

With no ``code`` (a baseline run) it does all of that but execute and call the code: it
calls a function that returns None instead, so that starting, copying, looping, the time
limits and the writing of a line are subtracted by the judge.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import hashlib
import importlib
import marshal
import sys
from collections.abc import Callable
from typing import Any

import _pj_common as common
import _pj_evalplus as evalplus
import _pj_plain as plain

CODE_FILE = "solution.py"
SETS = ("base", "plus")
NO_LIMIT = 0.0  # an input without a limit: ``setitimer(..., 0)`` arms no timer
DISTINCT_OUTPUTS = 8  # different outputs written per input, unless the payload says


def _warm(modules: list[str]) -> None:
    for name in modules:
        # one that cannot be imported fails the same way in the code's own run, or is
        # never reached there: either way not this run's business
        with contextlib.suppress(Exception, SystemExit):
            importlib.import_module(str(name))


ATOMS = (int, float, complex, str, bytes, bool, type(None))


def _immutable(value: Any) -> bool:
    """Whether ``value`` cannot be changed in place (atoms, and tuples/frozensets of them)."""
    if isinstance(value, ATOMS):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(item) for item in value)
    return False


def _marshal_copier(value: Any) -> Callable[[], Any]:
    try:
        blob = marshal.dumps(value)
    except ValueError:  # not plain data: not an input read from JSON
        return lambda: copy.deepcopy(value)
    loads = marshal.loads
    return lambda: loads(blob)


def _copier(value: Any) -> Callable[[], Any]:
    """A function giving a fresh copy of ``value`` each call, as cheap as exactness allows."""
    if _immutable(value):
        return lambda: value
    if isinstance(value, list) and all(_immutable(item) for item in value):
        return value.copy
    if isinstance(value, set):  # set elements are hashable, so (here) immutable
        return value.copy
    if isinstance(value, dict) and all(_immutable(item) for item in value.values()):
        return value.copy
    return _marshal_copier(value)


class OutputsLog(common.OutputsLog):
    """The outputs file of a measured run: each input's different outputs, once each.

    Named as the log of a test run (the code can see it in the frame that calls it). The
    lines come in the order of the round's inputs, one per input: a line equal to one
    already written for that input is checked here (the texts are the harness's own
    strings) and not written again; any other is written, to be compared outside, up to
    ``kept`` different lines an input (beyond them, the input is noted in
    :attr:`varied`). Only what is written is hashed.
    """

    def __init__(self, kept: int) -> None:
        """Create the (empty) outputs file, as a test run's log does."""
        super().__init__()
        self._kept = kept
        self._seen: list[set[str]] = []
        self._slot = 0
        self._sha = hashlib.sha256()
        self.written = 0
        self.varied: set[int] = set()

    def next_round(self) -> None:
        """The next line is the first input's again."""
        self._slot = 0

    def append_text(self, text: str) -> None:
        """Keep the round's line of the next input if it is new (see the class docstring)."""
        slot = self._slot
        self._slot = slot + 1
        if slot == len(self._seen):
            self._seen.append(set())
        seen = self._seen[slot]
        if text in seen:
            return
        if len(seen) >= self._kept:
            self.varied.add(slot)
            return
        seen.add(text)
        self._keep(text)

    def _keep(self, text: str) -> None:
        self._sha.update((text + "\n").encode("utf-8", "surrogatepass"))
        self.written += 1
        super().append_text(text)

    def append(self, line: dict[str, Any]) -> None:
        """An input that raised or timed out: written (the run ends with it)."""
        self._keep(self._dumps(line))

    def digest(self) -> str:
        """SHA-256 of every line written, each with its newline."""
        return self._sha.hexdigest()


OutputsLog.__module__ = common.OutputsLog.__module__


_marshal_dumps = marshal.dumps  # taken before any code runs, as the runner's own
MARSHAL_VERSION = 2  # no references or interning flags: the same value, the same bytes
FAST_VERSION = 4
"""Written first: ASCII strings as they are stored and a shared object once (about four
times cheaper than version 2 on a list of short strings), but the bytes depend on what
is shared and what is interned, so a value can come out as other bytes."""


class RepeatedLines(evalplus.CandidateLines):
    """A run's line maker that knows an output it has made the line of before.

    A measured call's output is turned into its line as in a test run (copied into plain
    data, digested): in Python, element by element, it costs more than the code's own work
    on a large output, and the same for both sides, so it drowns the difference the run is
    there to measure. Here each input's last output is also kept as its ``marshal`` bytes
    (made in C, of exact built-in types only: ``marshal`` refuses a subclass, so no code
    of the candidate's runs): an output whose bytes are the same as that input's last
    is the same plain value of the same types, whose line is the one made then, returned
    again. The bytes are :data:`FAST_VERSION`'s first; where they differ from the last
    output's, the canonical :data:`MARSHAL_VERSION` bytes decide (the same value laid out
    otherwise in memory is still the same value). Any other output (different, or not
    marshallable: a numpy array, a subclass) gets its line made in full, as in a test
    run. Every call's output is still checked.
    """

    def __init__(self, payload: dict[str, Any]) -> None:
        """A line maker for ``payload``'s outputs, with nothing seen yet."""
        super().__init__(payload)
        self._last: dict[tuple[str, int], tuple[bytes, bytes, str]] = {}

    def line(self, name: str, index: int, out: Any) -> str:
        """The line of ``out`` (see the class docstring; raises as the full line's maker)."""
        try:
            fast = _marshal_dumps(out, FAST_VERSION)
            last = self._last.get((name, index))
            if last is not None and last[0] == fast:
                return last[2]
            blob = _marshal_dumps(out, MARSHAL_VERSION)
        except (ValueError, TypeError, RecursionError):
            return super().line(name, index, out)
        if last is not None and last[1] == blob:
            self._last[(name, index)] = (fast, blob, last[2])
            return last[2]
        text = super().line(name, index, out)
        self._last[(name, index)] = (fast, blob, text)
        return text


def _nothing(*args: Any) -> None:
    """The baseline's stand-in for the code: called as the code is, returns None."""


class Plan:
    """What every round of a run needs, made before any code runs.

    A plain class: ``dataclasses`` (and the ``inspect`` it imports) is not loaded in a
    test run, and what a run imports is there for the code to see.
    """

    def __init__(self, payload: dict[str, Any], rounds: int, compiled: Any,
                 sets: dict[str, list[list[Callable[[], Any]]]], kept: int) -> None:
        """A plan for ``rounds`` rounds over ``sets`` (copiers per input, per set).

        ``payload`` is a test run's, whose inputs each round replaces by fresh copies;
        ``kept``: how many different outputs of an input the log writes.
        """
        self.payload, self.rounds, self.compiled = payload, rounds, compiled
        self.sets = sets
        self.log = OutputsLog(kept)
        self.lines = RepeatedLines(payload)
        self.writer = common.ResultWriter(payload["nonce"])
        self.sink: Any = None
        self.counted: dict[str, int] = {}

    def round_payload(self) -> dict[str, Any]:
        """The payload of one round, as a test run's: fresh copies of every input."""
        inputs = {f"{name}_inputs": [[copy_arg() for copy_arg in copiers]
                                     for copiers in self.sets[name]] for name in SETS}
        return {**self.payload, **inputs}

    def next_round(self) -> None:
        """The log's first input again; the output count again unless a round flooded."""
        self.log.next_round()
        if self.sink is not None and not self.sink.overflowed:
            self.counted["bytes"] = 0

    def done(self) -> dict[str, str]:
        """The result of a run whose every round ran."""
        count = sum(len(copiers) for copiers in self.sets.values())
        return {"status": "ran", "detail": f"{self.rounds} rounds of {count} inputs",
                "outputs_lines": str(self.log.written), "outputs_sha256": self.log.digest(),
                "outputs_varied": str(len(self.log.varied))}


def _grouped(payload: dict[str, Any]) -> tuple[dict[str, list], dict[str, list[float]]]:
    """The inputs and their CPU-time limits, per input set (``input_sets``, default plus)."""
    inputs = list(payload["inputs"])
    names = list(payload.get("input_sets") or ["plus"] * len(inputs))
    limits = list(payload.get("time_limits") or [NO_LIMIT] * len(inputs))
    sets: dict[str, list] = {name: [] for name in SETS}
    per_set: dict[str, list[float]] = {name: [] for name in SETS}
    for inp, name, limit in zip(inputs, names, limits, strict=True):
        sets[str(name)].append(inp)
        per_set[str(name)].append(float(limit))
    return sets, per_set


def _test_run_payload(payload: dict[str, Any], sets: dict[str, list],
                      limits: dict[str, list[float]]) -> dict[str, Any]:
    """A test run's payload (``adapters.candidate_payload``) for the inputs measured."""
    shown = {"format": "evalplus", "task_id": payload["task_id"],
             "entry_point": payload["entry_point"], "dataset": payload["dataset"],
             "base_inputs": sets["base"], "plus_inputs": sets["plus"], "role": "candidate",
             "code": payload.get("code"), "time_limits": limits}
    kept = ("libraries", "nonce", "output_cap")
    return {**shown, **{key: payload[key] for key in kept if key in payload}}


def prepare(payload: dict[str, Any]) -> Plan | dict[str, str]:
    """Everything a run needs, done before any code runs; or why the code cannot run.

    Rewrites ``payload`` (the dict the harness holds) to a test run's.
    """
    _warm(list(payload.get("warm_imports") or []))
    sets, limits = _grouped(payload)
    code = payload.get("code")
    compiled = None
    if code is not None:
        try:
            compiled = common.compile_source(code, CODE_FILE)
        except (SyntaxError, ValueError) as exc:
            return {"status": "fail", "detail": f"the code does not compile: {exc}"}
    plain.capture_types()  # as a test run does before the code runs
    copiers = {name: [[_copier(arg) for arg in inp] for inp in inputs]
               for name, inputs in sets.items()}
    shown = _test_run_payload(payload, sets, limits)
    plan = Plan(shown, int(payload["rounds"]), compiled, copiers,
                int(payload.get("distinct_outputs") or DISTINCT_OUTPUTS))
    sink = sys.stdout
    if isinstance(sink, common.OutputSink):
        plan.sink, plan.counted = sink, sink._shared
    payload.clear()
    payload.update(shown)
    return plan


def ended(number: int, result: dict[str, str]) -> dict[str, str] | None:
    """None when a round's code loaded and its calls all returned, else the round's problem.

    The problem is said as a test run says it, after ``round N: ``.
    """
    if result.get("status") == "ran":
        return None
    return {"status": result.get("status", "fail"),
            "detail": common.truncate(f"round {number + 1}: {result.get('detail', '')}")}


# The frames above a measured call: compiled under the EvalPlus runner's file name, and
# named as its functions, so that the stack the code can walk is a test run's by name.
_DRIVER = '''
def _load_function(compiled, entry_point):
    namespace = {"__name__": "__solution__", "__builtins__": builtins}
    try:
        exec(compiled, namespace)
    except BaseException as exc:
        return None, failure_from_exception(exc, (CODE_FILE,), "failed at import: ")
    function = namespace.get(entry_point)
    if not callable(function):
        return None, {"status": "fail", "detail": f"the code defines no function {entry_point!r}"}
    return function, None


def run(payload):
    plan = prepare(payload)
    if not isinstance(plan, Plan):
        return plan
    entry_point = plan.payload["entry_point"]
    for number in range(plan.rounds):
        plan.next_round()
        function, problem = nothing, None
        if plan.compiled is not None:
            function, problem = _load_function(plan.compiled, entry_point)
        if problem is None:
            problem = _run_candidate(function, plan.round_payload(), plan.log, plan.writer,
                                     plan.lines)
        problem = ended(number, problem)
        if problem is not None:
            return problem
    return plan.done()
'''


def _driver() -> dict[str, Any]:
    """The namespace of :data:`_DRIVER`, compiled under the EvalPlus runner's file name."""
    namespace: dict[str, Any] = {
        "__name__": evalplus.__name__, "builtins": builtins, "CODE_FILE": CODE_FILE,
        "failure_from_exception": common.failure_from_exception, "prepare": prepare,
        "Plan": Plan, "ended": ended, "nothing": _nothing,
        "_run_candidate": evalplus._run_candidate,
    }
    filename = evalplus._run_candidate.__code__.co_filename
    exec(compile(_DRIVER, filename, "exec", dont_inherit=True), namespace)
    return namespace


run: Callable[[dict[str, Any]], dict[str, str]] = _driver()["run"]
"""Run the rounds the payload asks for (see the module docstring).

Returns ``ran`` (with ``outputs_lines`` and ``outputs_sha256``: what the outputs file
holds; ``outputs_varied``: how many inputs had more different outputs than were written)
when every call of every round returned, else the first problem (``fail``, ``timeout`` or
``error``, after ``round N: ``: the code does not compile, defines no function, raised,
a call raised or ran out of its time), as a test run says it. The status is the code's own
claim: the judge trusts the CPU time the supervisor counted and the outputs it compares.
"""
