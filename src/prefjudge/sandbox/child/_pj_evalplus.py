"""HumanEval+ / MBPP+ runner: runs a function on the task's inputs, records its outputs.

Follows EvalPlus (``evalplus/eval/__init__.py``, ``evalplus/data/mbpp.py``) in what it
runs, and leaves the judging to prefjudge, outside the sandbox:

- MBPP+ inputs are stored as JSON and turned back into tuples, sets and complex numbers
  per task, exactly as EvalPlus's ``mbpp_deserialize_inputs`` does;
- ``role: reference`` runs the reference solution on every input (a deep copy of it, as
  EvalPlus does, made before the clock starts, as there) and records each output and the
  CPU time the call took, by the thread's clock (``time.thread_time``: under the run's
  CPU limit the process clock only moves at the kernel's ticks, 4 ms apart);
- ``role: candidate`` runs the code under test on every input, each call limited to the
  CPU time prefjudge computed from the reference's (``max(1 s, 4 x reference)``, as
  EvalPlus does, but in CPU time of this process rather than wall time, so that a loaded
  machine does not turn correct solutions into timeouts), and records each output. Each
  input set is run on its own, as EvalPlus's ``check_correctness`` does (base, then
  plus): a set stops at its first input that raises or times out (EvalPlus's default,
  ``fast_check``), the next set runs all the same. The result says how each set ended
  (``base_status``/``base_detail``, ``plus_status``/``plus_detail``: ``ran`` or the
  problem), and is written as soon as a set had a problem, so a run cut short in the
  plus set (the run's own time or CPU limit, a crash) still says what base did; after
  such a problem the plus set's stdout/stderr goes to /dev/null (:func:`_set_aside`).
  The sets share one process and the run's wall-clock and CPU limits, as before; going
  on after a base input that raised or timed out costs at most what the plus inputs
  cost a sample that passes base;
- every output is copied into plain data (``_pj_plain.to_plain``: its own ``__eq__`` and
  other methods never run) and appended to the outputs file as one JSON line, with the
  name of its type as found by identity among the types captured before the code ran
  (``_pj_plain.type_name``: a class that names itself ``builtins.float`` is not a float).

The expected outputs are never in the candidate's sandbox, so code that tampers with the
interpreter, forges lines or steals the nonce still has to produce the right outputs to
pass: the comparison (exact, or within EvalPlus's tolerances, and its special oracles)
happens in prefjudge (``prefjudge.sandbox.compare``).
"""

from __future__ import annotations

import _signal
import builtins
import copy
import gc
import json
import os
import time
from typing import Any

import _pj_common as common
import _pj_plain as plain

CODE_FILE = "solution.py"
REFERENCE_FILE = "reference.py"

# EvalPlus's special oracles that need an output whole (not only its digest) outside.
MBPP_OUTPUT_NOT_NONE = {"check_str", "text_match_three", "text_starta_endb"}
WHOLE_OUTPUTS = {
    ("humaneval", "find_zero"),
    *(("mbpp", name) for name in (
        "sum_div", "surface_Area", "digit_distance_nums", "similar_elements",
        "find_char_long", "common_in_nested_lists", "extract_singly", "larg_nnum",
        "intersection_array", "find_dissimilar", "Diff", *MBPP_OUTPUT_NOT_NONE,
    )),
}

_TUPLE_ARGS = {
    2,
    116,
    132,
    143,
    222,
    261,
    273,
    394,
    399,
    421,
    424,
    429,
    470,
    560,
    579,
    596,
    616,
    630,
    726,
    740,
    744,
    809,
}
_TUPLES_IN_LISTS = {63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780}
_FIRST_ARG_TUPLES = {75, 413, 444, 753}
_FIRST_ARG_TUPLE = {250, 405, 446, 617, 720, 763, 808}
_NESTED_TUPLES = {259, 401, 445}
_ALL_TUPLES = {580, 615, 791}



class InputTimeout(BaseException):
    """One call exceeded its time limit (a BaseException, so ``except Exception`` misses it)."""


def _all_tuples(value: Any) -> Any:
    return tuple(_all_tuples(item) for item in value) if isinstance(value, list) else value


def deserialize_mbpp_inputs(task_number: int, inputs: list) -> list:
    """Rebuild the Python types of MBPP+ inputs (EvalPlus's ``mbpp_deserialize_inputs``)."""
    n = task_number
    if n in _TUPLE_ARGS:
        return [[tuple(lst) for lst in inp] for inp in inputs]
    if n in _TUPLES_IN_LISTS:
        return [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
    if n in _FIRST_ARG_TUPLES:
        return [[[tuple(lst) for lst in inp[0]], inp[1]] for inp in inputs]
    if n in (106, 750):
        return [[inp[0], tuple(inp[1])] for inp in inputs]
    if n == 115:
        return [
            [[set(item) if isinstance(item, list) and item else {} for item in inp[0]]]
            for inp in inputs
        ]
    if n == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if n in _FIRST_ARG_TUPLE:
        return [[tuple(inp[0]), inp[1]] for inp in inputs]
    if n in _NESTED_TUPLES:
        rebuilt = [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
        return [[tuple(lst) for lst in inp] for inp in rebuilt]
    if n == 278:
        rebuilt = [
            [[tuple(item) if isinstance(item, list) else item for item in inp[0]]] for inp in inputs
        ]
        return [[tuple(lst) for lst in inp] for inp in rebuilt]
    if n == 307:
        return [[tuple(inp[0]), inp[1], inp[2]] for inp in inputs]
    if n == 722:
        return [[{k: tuple(v) for k, v in inp[0].items()}, *inp[1:]] for inp in inputs]
    if n == 252:
        return [[complex(inp[0])] for inp in inputs]
    if n in _ALL_TUPLES:
        return [_all_tuples(inp) for inp in inputs]
    return inputs


def _input_sets(payload: dict) -> dict[str, list]:
    sets = {"base": payload["base_inputs"] or [], "plus": payload["plus_inputs"] or []}
    if payload["dataset"] == "mbpp":
        number = int(str(payload["task_id"]).rsplit("/", 1)[-1])
        sets = {name: deserialize_mbpp_inputs(number, inputs) for name, inputs in sets.items()}
    return sets


def _load_function(code: str, entry_point: str, filename: str, noun: str = "code"
                   ) -> tuple[Any, dict[str, str] | None]:
    try:
        compiled = common.compile_source(code, filename)
    except (SyntaxError, ValueError) as exc:
        return None, {"status": "fail", "detail": f"the {noun} does not compile: {exc}"}
    namespace = {"__name__": "__solution__", "__builtins__": builtins}
    try:
        exec(compiled, namespace)
    except BaseException as exc:
        return None, common.failure_from_exception(exc, (filename,), "failed at import: ")
    function = namespace.get(entry_point)
    if not callable(function):
        return None, {"status": "fail",
                      "detail": f"the {noun} defines no function {entry_point!r}"}
    return function, None


def is_floats(value: Any) -> bool:
    """Whether ``value`` is a float, a non-empty list/tuple of floats or a float array."""
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(item, float) for item in value)
    if type(value).__module__ == "numpy" and hasattr(value, "dtype"):
        return str(value.dtype) in ("float64", "float32")
    return False


def _on_alarm(signum: int, frame: Any) -> None:
    raise InputTimeout


# Taken before any code runs, from the C module (``signal.signal`` converts to and from
# enums in Python: 5-10 us a call, on every one of a task's thousand inputs).
_set_handler, _set_timer = _signal.signal, _signal.setitimer
_SIGPROF, _ITIMER_PROF = _signal.SIGPROF, _signal.ITIMER_PROF
_dumps = json.dumps  # likewise: the code may replace json's
_thread_time = time.thread_time  # the reference's clock (see _run_reference)


def _call_with_limit(function: Any, inp: list, limit_s: float) -> Any:
    _set_handler(_SIGPROF, _on_alarm)  # again each call: the code may have replaced it
    _set_timer(_ITIMER_PROF, limit_s)
    try:
        return function(*inp)
    finally:
        _set_timer(_ITIMER_PROF, 0)


_gc_enabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable


class _CollectorPaused:
    """Pause the garbage collector while an output is copied and written.

    Copying an output of millions of objects would otherwise set it off again and again
    over all of them. A plain class, not ``contextlib``'s generator: it is entered once
    per output, thousands of times a run.
    """

    __slots__ = ("_collecting",)

    def __enter__(self) -> None:
        self._collecting = _gc_enabled()
        _gc_disable()

    def __exit__(self, *exc: object) -> None:
        if self._collecting:
            _gc_enable()


def _only_not_none(payload: dict) -> bool:
    """Whether the task's oracle looks only at whether an output ``is not None``."""
    return payload["dataset"] == "mbpp" and payload["entry_point"] in MBPP_OUTPUT_NOT_NONE


def _plain_output(out: Any, only_not_none: bool) -> tuple[Any, str, set[str]]:
    """The output as plain data, the name of its original type, and ``to_plain``'s notes."""
    original = plain.type_name(out)
    notes: set[str] = set()
    if only_not_none and type(out) is not bool:
        value: Any = out is not None  # all the oracle looks at (a re.Match, often)
        notes.add("normal")
    else:
        value = plain.to_plain(out, notes=notes)
    return value, original, notes


def _full_record(payload: dict, value: Any, original: str, notes: set[str]) -> dict[str, Any]:
    """The whole record of a plain output: digest, size, and the value when small or needed."""
    whole = (payload["dataset"], payload["entry_point"]) in WHOLE_OUTPUTS
    return plain.record(value, original, whole=whole, simple=not notes)


def _output_record(payload: dict, out: Any) -> dict[str, Any]:
    """The record of one reference output (raises NotPlainData, RecursionError, TypeError...)."""
    with _CollectorPaused():
        return _full_record(payload, *_plain_output(out, _only_not_none(payload)))


_QUOTED_KEPT = 64  # type names whose JSON text a run keeps (they repeat: one or two a task)


class CandidateLines:
    """Makes the outputs-file line of each of a candidate's outputs (one per run).

    A small output (the usual case) is sent whole, as ``t`` and ``v`` only: prefjudge
    compares it whole and recomputes any digest it needs from it, so the harness skips
    the digest, and the text is built directly (``_pj_plain.tagged_text``), as
    :func:`prefjudge.sandbox.compare.identical_line` expects the line of an output equal
    to the reference's. A larger one gets the full record (digest, size, the value when
    it must be whole), as the reference's does. What depends only on the task (whether an
    oracle looks at ``is not None`` only) is looked up once, and each type name quoted
    once: a run writes thousands of lines.
    """

    def __init__(self, payload: dict) -> None:
        """Prepare for ``payload``'s outputs (before the code runs)."""
        self._payload = payload
        self._only_not_none = _only_not_none(payload)
        self._quoted: dict[str, str] = {}

    def line(self, name: str, index: int, out: Any) -> str:
        """The line of output ``out`` of input ``index`` of set ``name``.

        Raises as :func:`_output_record`; the collector is paused meanwhile, as there.
        """
        with _CollectorPaused():
            value, original, notes = _plain_output(out, self._only_not_none)
            text = plain.tagged_text(value)
            if text is None:
                record = _full_record(self._payload, value, original, notes)
                return _dumps({"set": name, "i": index, **record})
            quoted = self._quoted.get(original)
            if quoted is None:
                quoted = plain.quote(original)
                if len(self._quoted) < _QUOTED_KEPT:
                    self._quoted[original] = quoted
            return f'{{"set": "{name}", "i": {index}, "t": {quoted}, "v": {text}}}'


def _run_reference(function: Any, payload: dict, log: common.OutputsLog) -> dict[str, str]:
    for name, inputs in _input_sets(payload).items():
        for index, inp in enumerate(inputs):
            where = {"set": name, "i": index}
            # Timed as EvalPlus times it (the copy made before), by this thread's clock:
            # under the run's CPU limit the process clock only moves at the kernel's ticks.
            args = copy.deepcopy(inp)
            start = _thread_time()
            try:
                out = function(*args)
            except BaseException as exc:
                why = common.describe_exception(exc, (REFERENCE_FILE,))
                log.append({**where, "raised": why})
                return {"status": "error", "detail": common.truncate(
                    f"the reference solution failed on {name} input #{index}: {why}")}
            elapsed = _thread_time() - start
            try:
                line = _output_record(payload, out)
            except (plain.NotPlainData, RecursionError, TypeError, ValueError) as exc:
                return {"status": "error", "detail": common.truncate(
                    f"the reference solution's output on {name} input #{index}: {exc}")}
            line.update(where, cpu=elapsed, fl=is_floats(out))
            log.append(line)
    return {"status": "ran", "detail": "the reference ran on every input"}


def _run_set(function: Any, name: str, inputs: list, limits: list, lines: CandidateLines,
             log: common.OutputsLog) -> dict[str, str]:
    """Run one input set, up to its first input that raises or times out.

    EvalPlus stops a set there too, by default (``fast_check``). Returns ``ran`` when
    every input gave an output, else that input's problem.
    """
    append_text = log.append_text
    for index, inp in enumerate(inputs):
        limit = float(limits[index])
        try:
            out = _call_with_limit(function, inp, limit)
        except InputTimeout:
            where = {"set": name, "i": index}
            log.append({**where, "timeout": limit})
            shown = common.short_repr(inp)
            detail = f"{name} input #{index} exceeded {limit:.2f} s of CPU; input: {shown}"
            return {"status": "timeout", "detail": detail}
        except BaseException as exc:
            prefix = f"{name} input #{index} raised; input: {common.short_repr(inp)}\n"
            problem = common.failure_from_exception(exc, (CODE_FILE,), prefix)
            log.append({"set": name, "i": index, "raised": problem["detail"]})
            return problem
        try:
            line = lines.line(name, index, out)
        except (plain.NotPlainData, RecursionError, TypeError, ValueError) as exc:
            shown = common.short_repr(inp)
            detail = common.truncate(f"{name} input #{index}: {exc}; input: {shown}")
            log.append({"set": name, "i": index, "raised": detail})
            return {"status": "fail", "detail": detail}
        append_text(line)  # "set" and "i" first: read cheaply when skipped
    return {"status": "ran", "detail": f"the code ran on every {name} input"}


def _set_aside(name: str, result: dict[str, str]) -> None:
    """Keep what the next sets do out of the outcome of set ``name``, which had a problem.

    The run used to end there; the sets after it must not change that outcome: their
    stdout/stderr goes to /dev/null (a flood would stop the whole run), and the result
    notes which of the scratch disk's limits are used up now (``<set>_scratch``: prefjudge
    counts a full disk against this set only if it was full already).
    """
    try:
        info = os.statvfs(".")
        full = [kind for kind, free, total in (("files", info.f_ffree, info.f_files),
                                                ("bytes", info.f_bfree, info.f_blocks))
                if total and free == 0]
    except OSError:
        full = []
    result[f"{name}_scratch"] = ",".join(full)
    try:
        null = os.open("/dev/null", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _run_candidate(function: Any, payload: dict, log: common.OutputsLog,
                   writer: common.ResultWriter,
                   lines: CandidateLines | None = None) -> dict[str, str]:
    """Run every input set, each on its own, as EvalPlus does.

    A set that stops at an input that raised or timed out does not stop the next one.
    Every set's outcome goes into the result (``base_status``, ``base_detail``...), whose
    ``status`` and ``detail`` are the first set's problem. A set's problem is written at
    once: if the run is cut short in a later set (its time, or a crash), the result still
    says what the earlier sets did. ``lines`` makes the outputs' lines (a measured run
    keeps one across its rounds); a new :class:`CandidateLines` by default.
    """
    limits = payload["time_limits"]
    lines = lines or CandidateLines(payload)
    result: dict[str, str] = {}
    first: dict[str, str] | None = None
    sets = list(_input_sets(payload).items())
    for position, (name, inputs) in enumerate(sets):
        outcome = _run_set(function, name, inputs, limits[name], lines, log)
        result[f"{name}_status"], result[f"{name}_detail"] = outcome["status"], outcome["detail"]
        if outcome["status"] != "ran" and first is None:
            first = outcome
        if first is not None and position < len(sets) - 1:
            if outcome["status"] != "ran":
                _set_aside(name, result)
            writer.write({"stage": "done", **first, **result})
    if first is None:
        return {"status": "ran", "detail": "the code ran on every input", **result}
    return {**first, **result}


def run(payload: dict) -> dict[str, str]:
    """Run the reference or the candidate on base, then plus inputs, logging the outputs.

    Returns:
        ``ran`` when every input gave an output (prefjudge then compares them outside),
        else the first problem (``fail``, ``timeout``, or ``error`` for the reference);
        a candidate's result also says how each input set ended (``<set>_status``,
        ``<set>_detail``).
    """
    log = common.OutputsLog()
    plain.capture_types()  # numpy's too, if it was imported since: before any code runs
    if payload.get("role") == "reference":
        function, problem = _load_function(payload["code"], payload["entry_point"],
                                           REFERENCE_FILE)
        if problem is not None:
            return {"status": "error", "detail": "the reference solution: " + problem["detail"]}
        return _run_reference(function, payload, log)
    # Made before the code runs, as the harness's own (which writes the final result).
    writer = common.ResultWriter(payload["nonce"])
    function, problem = _load_function(payload["code"], payload["entry_point"], CODE_FILE)
    if problem is not None:
        return problem
    return _run_candidate(function, payload, log, writer)
