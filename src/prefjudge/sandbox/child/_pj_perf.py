"""Cost runner: calls a HumanEval+/MBPP+ function on chosen inputs, round after round.

What a run costs is measured outside, by the run's supervisor (the kernel's CPU count of
every process of the run, ``launcher.children_cpu_s``): nothing here times anything, so
code that replaces ``time.process_time`` or ``time.perf_counter`` changes nothing. This
runner only does the work whose cost is counted, the same way for both sides of a pair:

1. imports ``warm_imports`` (the modules either side's code imports), so that import
   costs are the same in every run of a pair and cancel out;
2. turns the inputs into Python values as the EvalPlus runner does (MBPP+ tuples, sets)
   and plans, per argument, the cheapest exact way to give every call a fresh copy
   (none for immutable values, a slice for a list of immutable values, a pickle round
   trip for anything nested and mutable), so that a function that changes its
   arguments in place never sees them changed by an earlier call;
3. for each of ``rounds`` rounds: executes the code in a fresh namespace (so caches kept
   in the function's module do not carry over from one round to the next), then calls
   the function once on fresh copies of each input, its output discarded.

With no ``code`` (a baseline run) it does all of that but execute and call: the cost of
starting, copying and looping, which the judge subtracts. Output the code prints goes
nowhere (it still costs what writing it costs). Outputs are not compared: whether the code
is correct is decided by its EvalPlus run.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib
import pickle
import sys
from collections.abc import Callable
from typing import Any

import _pj_common as common
import _pj_evalplus as evalplus

CODE_FILE = "solution.py"


class _Discard:
    """A text stream that swallows what is written to it."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


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
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return functools.partial(pickle.loads, blob)


def _inputs(payload: dict) -> list[list[Callable[[], Any]]]:
    """Per input, one copier per argument."""
    inputs = list(payload["inputs"])
    if payload["dataset"] == "mbpp":
        number = int(str(payload["task_id"]).rsplit("/", 1)[-1])
        inputs = evalplus.deserialize_mbpp_inputs(number, inputs)
    return [[_copier(arg) for arg in inp] for inp in inputs]


def _rounds(payload: dict, inputs: list[list[Callable[[], Any]]]) -> dict[str, str]:
    code, entry_point = payload.get("code"), payload["entry_point"]
    rounds = int(payload["rounds"])
    if code is None:  # the baseline: everything but the code
        for _ in range(rounds):
            for copiers in inputs:
                [copy() for copy in copiers]
        return {"status": "ran", "detail": f"baseline: {rounds} rounds of {len(inputs)} inputs"}
    try:
        compiled = common.compile_source(code, CODE_FILE)
    except (SyntaxError, ValueError) as exc:
        return {"status": "fail", "detail": f"the code does not compile: {exc}"}
    for number in range(rounds):
        namespace = {"__name__": "__solution__", "__builtins__": builtins}
        try:
            exec(compiled, namespace)
        except BaseException as exc:
            return common.failure_from_exception(exc, (CODE_FILE,), "failed at import: ")
        function = namespace.get(entry_point)
        if not callable(function):
            return {"status": "fail", "detail": f"the code defines no function {entry_point!r}"}
        for index, copiers in enumerate(inputs):
            try:
                function(*[copy() for copy in copiers])
            except BaseException as exc:
                prefix = f"round {number + 1}, input #{index} raised\n"
                return common.failure_from_exception(exc, (CODE_FILE,), prefix)
    return {"status": "ran", "detail": f"{rounds} rounds of {len(inputs)} inputs"}


def run(payload: dict) -> dict[str, Any]:
    """Run the rounds the payload asks for; ``ran`` when every call returned.

    Returns:
        ``ran``, or ``fail`` with the first problem (the code does not compile, defines
        no function, or a call raised). The status is the code's own claim: the judge
        trusts only the CPU time the supervisor counted, and correctness comes from the
        code's EvalPlus run.
    """
    _warm(list(payload.get("warm_imports") or []))
    inputs = _inputs(payload)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Discard()
    try:
        return _rounds(payload, inputs)
    finally:
        sys.stdout, sys.stderr = saved
