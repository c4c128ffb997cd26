"""Outcomes decided where the code cannot reach: outputs compared outside the sandbox.

For HumanEval+/MBPP+ (EvalPlus) and stdin/stdout (LiveCodeBench) tasks the sandbox only
runs things and records their outputs as plain data (``child/_pj_plain.py``); the
expected outputs never enter the candidate's sandbox. prefjudge reads the outputs back
here, in its own process, and compares them:

- EvalPlus: the reference solution runs in a sandbox of its own (once per task, its
  outputs kept: :mod:`prefjudge.sandbox.references`); each candidate output must equal
  the reference's exactly, or within EvalPlus's tolerance (``np.allclose(rtol=1e-7,
  atol)`` when ``atol`` is set or the expected output is made of floats, then ``atol``
  1e-6 for the rest of that input set), with EvalPlus's special oracles; outputs too
  large to send whole are compared exactly through their canonical digests. The base
  and the plus inputs are judged each on their own, as EvalPlus does
  (:func:`judge_evalplus`: ``FuncResult.sets``);
- stdio: both outputs stripped and split into lines, each line stripped; lines must be
  equal, or else parse as the same sequence of decimal numbers (LiveCodeBench's rule).

Nothing the run wrote is trusted: a line that cannot be read, is out of place or
does not match fails the sample; a run that says ``pass`` itself (a forged result with
a stolen nonce) fails too; only this comparison can give ``pass``. Reading it costs time
and memory in proportion to what was written: lines are read one at a time, and only up
to the first that does not match (EvalPlus: in each input set; the rest of that set's
lines are passed over by their first few characters); stdio outputs are compared line
by line and token by token; sets and dicts are never built from what came back
(``_pj_plain.load``), so members that all hash alike cost no more than any others.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from prefjudge.records import FuncResult, SetResult, Task
from prefjudge.sandbox.adapters import evalplus_dataset, interpret
from prefjudge.sandbox.child import _pj_plain as plain
from prefjudge.sandbox.evalplus_oracles import ORACLES, check_output  # tests patch it here
from prefjudge.sandbox.evalplus_oracles import is_floats as is_floats  # re-exported
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import RunOutcome
from prefjudge.sandbox.stdio_outputs import outputs_equal  # patched here by tests

MIN_TIME_LIMIT_S = 1.0
TIME_LIMIT_FACTOR = 4.0
DETAIL_MAX = 2000
INPUT_SETS = ("base", "plus")
# The longest line the EvalPlus harness writes: a value sent whole, and the rest of its
# record (digest, size, a type name of at most 200 characters, an error's detail).
EVALPLUS_LINE_MAX = plain.FORCED_INLINE_MAX + (64 << 10)


class SpoiledOutputs(ValueError):
    """A line of the outputs file is not what the harness writes."""


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def line_count(text: str | None) -> int:
    r"""How many lines :func:`raw_lines` gives (``\n`` ends a line; a last one may not)."""
    text = text or ""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def raw_lines(text: str | None) -> Iterator[str]:
    r"""The lines of ``text``, split at ``\n``, one at a time (no list of them all)."""
    lines = _Lines(text)
    while (line := lines.next()) is not None:
        yield line


def parse_line(raw: str) -> Any:
    """One JSON line; None if it is not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def read_lines(text: str | None) -> list[Any]:
    """The JSON lines of an outputs file; a line that is not JSON becomes None."""
    return [parse_line(raw) for raw in raw_lines(text)]


# --- LiveCodeBench: stdin/stdout -----------------------------------------------------------

_STDIO_RECORD_HEAD = re.compile(r'\{"i": (\d{1,9}), "stdout": (?=")')
STDIO_LINE_SMALL = 64 << 10  # a longer line is read only in the form the harness writes


def stdio_record(raw: str) -> Any:
    """One line of a stdio run's outputs; None if it cannot be read.

    A long line is read only if it is what the harness writes, ``{"i": N, "stdout":
    "..."}``: one string, never a structure many times the size of its text.
    """
    if len(raw) <= STDIO_LINE_SMALL:
        return parse_line(raw)
    head = _STDIO_RECORD_HEAD.match(raw)
    if head is None or not raw.endswith("}"):
        return None
    stdout = parse_line(raw[head.end():-1])
    return {"i": int(head.group(1)), "stdout": stdout} if isinstance(stdout, str) else None


def _stdio_mismatch(task: Task, lines: Iterator[str]) -> tuple[int, str | None]:
    """How many cases matched in order, and the failing detail at the first that did not.

    Reads the lines one at a time, and no further than the first that does not match.
    """
    count = 0
    for index, (case, raw) in enumerate(zip(task.stdio_cases, lines, strict=False)):
        line = stdio_record(raw)
        if not (isinstance(line, dict) and line.get("i") == index
                and isinstance(line.get("stdout"), str)):
            if isinstance(line, dict) and ("raised" in line or "timeout" in line):
                return index, None
            return index, f"case #{index}: the run's output record could not be read"
        got = line["stdout"]
        if not outputs_equal(got, case.output):
            return index, (
                f"case #{index}: wrong answer\ninput: {case.input[:300]!r}\n"
                f"expected: {case.output[:300]!r}\ngot: {got[:300]!r}"
            )
        count = index + 1
    return count, None


# --- EvalPlus: HumanEval+ / MBPP+ --------------------------------------------------------


@dataclass(frozen=True)
class ReferenceOutputs:
    """What the reference solution returned on every input of a task.

    Attributes:
        lines: One record per input, base inputs first (``d``, ``n``, ``t``, maybe ``v``,
            ``cpu`` seconds, ``fl``: whether the raw output was made of floats).
    """

    lines: tuple[dict[str, Any], ...]
    _sets: dict[tuple[str, str], dict[str, _SetWants]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _limits: dict[str, list[float]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def identical_lines(self, task: Task) -> tuple[str | None, ...]:
        """Per input, the exact line a run writes for an output identical to this one.

        (:func:`identical_line`); None where no line may stand for a match (an output with
        a NaN or sent by digest, a task with an oracle of its own). Made once per task, by
        :meth:`set_wants`, which keeps them.
        """
        key = (evalplus_dataset(task), str(task.entry_point))
        return tuple(identical_line(want, *key) for want in self.lines)

    def set_wants(self, task: Task) -> dict[str, _SetWants]:
        """Per input set, its reference outputs with their identical lines, and their block.

        Made once per task: the same for every sample of it.
        """
        key = (evalplus_dataset(task), str(task.entry_point))
        if key not in self._sets:
            pairs = list(zip(self.lines, self.identical_lines(task), strict=True))
            self._sets[key] = {name: _SetWants.of([(want, same) for want, same in pairs
                                                   if want["set"] == name])
                               for name in INPUT_SETS}
        return self._sets[key]

    def time_limits(self, task: Task) -> dict[str, list[float]]:
        """Per input set, each input's CPU-time limit for a candidate (EvalPlus's rule).

        Made once and shared by every sample of the task (the payloads' JSON of it is
        kept too, :func:`~prefjudge.sandbox.process.payload_json`): never to be changed.
        """
        if not self._limits:
            limits: dict[str, list[float]] = {name: [] for name in INPUT_SETS}
            for line in self.lines:
                limits[line["set"]].append(
                    max(MIN_TIME_LIMIT_S, TIME_LIMIT_FACTOR * float(line["cpu"])))
            self._limits.update(limits)
        return self._limits


@dataclass(frozen=True)
class _SetWants:
    """One input set's reference outputs, as a run's lines are compared with them.

    Attributes:
        wants: Each reference output and its :func:`identical_line` (None: none).
        block: Every identical line, each ending in a newline: the text of a run whose
            outputs in this set are all identical to the reference's, matched at once
            (None when some output has no identical line, or the set is empty).
    """

    wants: list[tuple[dict[str, Any], str | None]]
    block: str | None

    @classmethod
    def of(cls, wants: list[tuple[dict[str, Any], str | None]]) -> _SetWants:
        sames = [same for _, same in wants]
        whole = bool(sames) and all(same is not None for same in sames)
        return cls(wants, "".join(f"{same}\n" for same in sames) if whole else None)


def input_positions(task: Task) -> list[tuple[str, int, Any]]:
    """``(set, index, input)`` for every input, base inputs first, as the runner goes."""
    return [
        (name, index, inp)
        for name, inputs in (("base", task.base_inputs or []), ("plus", task.plus_inputs or []))
        for index, inp in enumerate(inputs)
    ]


def _record(raw: str, name: str, index: int) -> dict[str, Any]:
    """One line of a candidate's outputs, read only if no longer than the harness writes."""
    if len(raw) > EVALPLUS_LINE_MAX:
        raise SpoiledOutputs(f"{name} input #{index}: the run's output record is longer "
                             f"({len(raw):,} characters) than the harness writes")
    return _output_line(parse_line(raw), name, index)


def _output_line(line: Any, name: str, index: int) -> dict[str, Any]:
    if not (isinstance(line, dict) and line.get("set") == name and line.get("i") == index):
        raise SpoiledOutputs(f"{name} input #{index}: the run's output record is out of place")
    if "raised" in line or "timeout" in line:
        return line
    if not (isinstance(line.get("t"), str)
            and (isinstance(line.get("d"), str) or isinstance(line.get("v"), list))):
        raise SpoiledOutputs(f"{name} input #{index}: the run's output record is incomplete")
    return line


def _value(line: dict[str, Any]) -> Any:
    if "v" not in line:
        raise KeyError("v")
    return plain.load(line["v"])


def _digest(line: dict[str, Any]) -> str:
    """The digest of a line's value, recomputed here whenever the value came whole."""
    if "v" in line:
        try:
            return plain.digest(_value(line), simple=False)[0]
        except plain.NotPlainData:  # a NaN: equal to nothing
            return "nan:" + hashlib.sha256(json.dumps(line["v"]).encode()).hexdigest()
    return str(line["d"])



def _identical(got: dict[str, Any], want: dict[str, Any], dataset: str, entry_point: str
               ) -> bool:
    """Whether the run sent back the reference's own value: the same plain data and type.

    The quick way to a match, taken before anything is read back: two values that are
    the same plain data are equal (``==``, so EvalPlus's ``exact_match``), unless they
    hold a NaN, which equals nothing, or the task has an oracle of its own
    (:data:`ORACLES`). A reference line holds a NaN exactly when it has no digest (the
    harness cannot digest one: ``_pj_plain.record``), and never takes this way. Anything
    else is compared in full by :func:`check_output`.
    """
    return ((dataset, entry_point) not in ORACLES and "d" in want
            and got["t"] == want["t"] and got["v"] == want["v"])


def identical_line(want: dict[str, Any], dataset: str, entry_point: str) -> str | None:
    """The line the harness writes for an output :func:`_identical` to ``want``, if any.

    The harness writes a small output as ``{"set": S, "i": I, "t": T, "v": V}``, its value
    as ``json.dumps`` would (``child/_pj_evalplus._candidate_line``), so a line equal to
    this text is one whose type and value are the reference's: a match, found without
    reading the line. Any other line is read and compared as usual. None when no line
    can match this way (see :func:`_identical`).
    """
    if (dataset, entry_point) in ORACLES or "d" not in want or "v" not in want:
        return None
    return (f'{{"set": "{want["set"]}", "i": {int(want["i"])}, "t": {plain.quote(want["t"])}, '
            f'"v": {json.dumps(want["v"])}}}')


def _matched_atol(want: dict[str, Any], atol: float) -> float:
    """The atol to carry on with after an output that matched ``want`` exactly."""
    return 1e-6 if atol == 0 and want.get("fl") else atol  # as check_output


def _compare_one(
    task: Task, where: tuple[str, int, Any], got: dict[str, Any], want: dict[str, Any],
    atol: float,
) -> tuple[float, str | None]:
    """Compare one output; return the atol to carry on with, and a detail if it differs."""
    name, index, inp = where
    dataset, entry_point = evalplus_dataset(task), str(task.entry_point)
    if "v" in got and "v" in want and _identical(got, want, dataset, entry_point):
        return _matched_atol(want, atol), None
    shown = f"{name} input #{index}; input: {_short(inp)}"
    if "v" in got and "v" in want:
        out, exp = _value(got), _value(want)
        try:
            atol = check_output(dataset, entry_point, inp, out, exp, atol,
                                got["t"], want["t"], bool(want.get("fl")))
        except (AssertionError, TypeError, ValueError, ArithmeticError) as exc:
            return atol, (f"{shown}: failed ({exc}); expected: {_short(exp)}; "
                          f"got: {_short(out)}")
        return atol, None
    if _digest(got) == _digest(want):
        return atol, None
    size = f"{max(int(got.get('n') or 0), int(want.get('n') or 0)):,} bytes"
    if want.get("fl") or atol:
        return atol, (f"{shown}: outputs differ, and are too large ({size}) to compare within "
                      "a tolerance")
    return atol, f"{shown}: outputs differ ({size}, compared by digest)"


_LINE_HEAD = re.compile(r'\{"set": "(base|plus)", "i": (\d{1,9}), "(raised|timeout)?')


class _Lines:
    r"""A run's output lines, one at a time, split at ``\n`` (a last one may not end in one).

    A line read too far can be put back; a block of whole lines can be matched at once.
    :func:`raw_lines` splits with it too.
    """

    def __init__(self, text: str | None) -> None:
        self._text = text or ""
        self._at = 0
        self._before = 0

    def next(self) -> str | None:
        text, start = self._text, self._at
        if start >= len(text):
            return None
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        self._before, self._at = start, end + 1
        return text[start:end]

    def put_back(self) -> None:
        """Read the line :meth:`next` gave last again."""
        self._at = self._before

    def take(self, block: str) -> bool:
        """Pass over ``block`` (whole lines, each ending in a newline) if it comes next."""
        if not self._text.startswith(block, self._at):
            return False
        self._at += len(block)
        return True

    def skip_set(self, name: str, index: int, size: int) -> bool:
        """Pass over the rest of set ``name``'s lines, after its line ``index``.

        Only the head of each line is read (the harness writes ``set`` and ``i`` first).
        Returns whether the set ended there as the harness ends one: at its last input,
        or at an input that raised or timed out.
        """
        finished = index == size - 1
        while (raw := self.next()) is not None:
            head = _LINE_HEAD.match(raw)
            if head is None or head.group(1) != name:
                self.put_back()
                break
            finished = int(head.group(2)) == size - 1 or head.group(3) is not None
        return finished


@dataclass(frozen=True)
class _Walk:
    """What one input set's lines say, read in order up to the first that decides.

    Attributes:
        matched: Outputs that matched the reference, in order, before the first that did
            not (or before the lines ran out).
        detail: Why the first that did not match failed, if one did not.
        at: The index of that input, or of the input the run says raised or timed out.
        finished: The run got to the end of the set (its last input, or an input that
            stopped it): the next set ran after it.
    """

    matched: int
    detail: str | None = None
    at: int | None = None
    finished: bool = False


def _walk_set(task: Task, name: str, reference: _SetWants, inputs: list,
              lines: _Lines) -> _Walk:
    """Compare one set's outputs in order, each set with its own tolerance (EvalPlus's).

    ``reference`` holds each reference output and its :func:`identical_line`. A run whose
    next lines are all of them (its block) matches the whole set at once: every line is
    then the one the loop below matches without reading it.
    """
    wants = reference.wants
    if reference.block is not None and lines.take(reference.block):
        return _Walk(len(wants), finished=True)
    atol = float(task.atol or 0)
    for index, ((want, same), inp) in enumerate(zip(wants, inputs, strict=True)):
        raw = lines.next()
        if raw is None:
            return _Walk(index)
        if raw == same:
            atol = _matched_atol(want, atol)
            continue
        try:
            got = _record(raw, name, index)
            if "raised" in got or "timeout" in got:
                return _Walk(index, at=index, finished=True)  # the run's record says why
            atol, detail = _compare_one(task, (name, index, inp), got, want, atol)
        except (SpoiledOutputs, ValueError, KeyError, TypeError, RecursionError) as exc:
            detail = f"{name} input #{index}: the run's output could not be read ({exc})"
        if detail is not None:
            finished = lines.skip_set(name, index, len(wants))
            return _Walk(index, _bounded(detail), index, finished)
    return _Walk(len(wants), finished=True)


def _bounded(detail: str) -> str:
    return detail if len(detail) <= DETAIL_MAX else detail[: DETAIL_MAX - 3] + "..."


def judge_outside(
    task: Task, outcome: RunOutcome, limits: SandboxLimits,
    reference: ReferenceOutputs | None = None,
) -> FuncResult:
    """The verdict on a run whose outputs are compared here (EvalPlus, or stdio).

    ``reference`` is given for EvalPlus tasks (see :func:`judge_evalplus`). For stdio, the
    first output that does not match decides (as if the run had stopped there, as the
    benchmark's own harness does); else the run must have reported that every case ran,
    and every output must have come back and matched, for a ``pass``.
    """
    if reference is not None:
        return judge_evalplus(task, outcome, limits, reference)
    if outcome.setup_error or outcome.output_exceeded:
        return interpret(outcome, limits)
    if outcome.outputs_over_cap:
        return FuncResult(status="fail", detail=OVER_CAP)
    total = len(task.stdio_cases)
    matched, detail = _stdio_mismatch(task, raw_lines(outcome.outputs))
    if detail is not None:
        return FuncResult(status="fail", detail=_bounded(detail))
    status = (outcome.result or {}).get("status")
    if status == "ran":
        if matched == total and line_count(outcome.outputs) == total and not outcome.timed_out:
            return FuncResult(status="pass", detail=f"{total} cases passed")
        if not outcome.timed_out:
            return FuncResult(status="fail", detail=_said_all_ran(matched, total))
    if status == "pass":
        return FuncResult(status="fail", detail=FORGED_PASS)
    return interpret(outcome, limits)


OVER_CAP = "the run's outputs exceeded what prefjudge reads back (32 MiB)"
FORGED_PASS = ("the run reported a pass itself (only prefjudge's comparison can): its result "
               "was forged")
NOT_RUN = ("not judged: the run ended in the base inputs, before the plus inputs ran "
           "(EvalPlus runs them in a process of their own)")


def _said_all_ran(matched: int, total: int) -> str:
    return f"the run said every input ran, but {matched} of {total} outputs came back"


def _per_set(result: dict[str, Any] | None) -> bool:
    """Whether the run's result says how each input set ended (``<set>_status``).

    A result without it (code that did not load, a harness error) is about the whole run;
    a result that says ``pass`` is forged, whatever else it says.
    """
    return result is not None and result.get("status") != "pass" and any(
        f"{name}_status" in result for name in INPUT_SETS)


def _set_record(result: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """What the run's result says of one input set; None when it says nothing of it."""
    if result is None or not _per_set(result):
        return result
    status = result.get(f"{name}_status")
    if status is None:
        return None  # the run ended before it finished this set
    if status not in ("ran", "pass", "fail", "timeout", "error"):
        return {"stage": "done", "status": "fail",
                "detail": f"the run's record of its {name} inputs could not be read"}
    return {"stage": "done", "status": status, "detail": str(result.get(f"{name}_detail", ""))}


def _set_result(task: Task, name: str, walk: _Walk, outcome: RunOutcome,
                limits: SandboxLimits, last: bool, extra_lines: bool) -> SetResult:
    """One input set's outcome: its first output that did not match, else the run's word.

    ``last``: the run went on to no later set. Its end (its wall clock, a crash) counts
    for this set then, or when the run said nothing of this set on its own.
    """
    size = len(_inputs(task, name))
    record = _set_record(outcome.result, name)
    if walk.at is not None:
        failed = [walk.at]
    else:  # the input it was on, if the run ended in this set without a word on it
        failed = [walk.matched] if record is None and walk.matched < size else []
    if walk.detail is not None:
        return SetResult(status="fail", detail=walk.detail, failed=failed)
    complete = walk.at is None and walk.matched == size
    if record is None and complete and not last:
        return SetResult(status="pass", detail=f"{size} {name} inputs matched the reference")
    # The run said how this set ended, then went on: its end (wall clock), and what it
    # did to its disk after, are not this set's doing.
    went_on = not last and record is not None and _per_set(outcome.result)
    timed_out = outcome.timed_out and not went_on
    scratch = outcome.scratch_full
    noted = (outcome.result or {}).get(f"{name}_scratch")
    if went_on and isinstance(noted, str):
        scratch = tuple(kind for kind in scratch if kind in noted.split(","))
    status = (record or {}).get("status")
    if status == "ran":
        if complete and not extra_lines and not timed_out:
            return SetResult(status="pass", detail=f"{size} {name} inputs matched the reference")
        if not timed_out:
            offset = sum(len(_inputs(task, each))
                         for each in INPUT_SETS[:INPUT_SETS.index(name)])
            return SetResult(status="fail", failed=failed, detail=_said_all_ran(
                offset + walk.matched, len(input_positions(task))))
    if status == "pass":
        return SetResult(status="fail", detail=FORGED_PASS, failed=failed)
    stage = "done" if record is not None else (
        "started" if outcome.stage == "done" else outcome.stage)
    verdict = interpret(replace(outcome, result=record, stage=stage, timed_out=timed_out,
                                scratch_full=scratch), limits)
    return SetResult(status=verdict.status, detail=_bounded(verdict.detail), failed=failed)


def _inputs(task: Task, name: str) -> list:
    return (task.base_inputs if name == "base" else task.plus_inputs) or []


def judge_evalplus(task: Task, outcome: RunOutcome, limits: SandboxLimits,
                   reference: ReferenceOutputs) -> FuncResult:
    """The verdict on a HumanEval+/MBPP+ run, and on each of its input sets.

    As EvalPlus (``check_correctness``) does, the base and the plus inputs are judged on
    their own (``sets``). A set's outcome is its first input that did not match, or that
    the run says raised or timed out (EvalPlus stops a set there by default), and
    ``failed`` holds that input's index, as EvalPlus lists it in ``base_fail_tests`` /
    ``plus_fail_tests``; a run that ended in a set without a word (a crash, its wall
    clock) lists the input it was on, and code that did not load lists none. Where
    EvalPlus says ``fail`` for an input that ran out of time, prefjudge says ``timeout``,
    as it does for the whole task. A set the run never got to (it ended in the base
    inputs) is an ``error``: not judged. The verdict on the task is base's outcome when
    base did not pass, else plus's: ``pass`` only when both pass.
    """
    if outcome.setup_error:
        return interpret(outcome, limits)
    if outcome.output_exceeded or outcome.outputs_over_cap:
        whole = (interpret(outcome, limits) if outcome.output_exceeded
                 else FuncResult(status="fail", detail=OVER_CAP))
        not_read = "not judged: the run's outputs could not be read back"
        return _verdict(task, {"base": SetResult(status=whole.status, detail=whole.detail),
                               "plus": SetResult(status="error", detail=not_read)})
    lines = _Lines(outcome.outputs)
    walks: dict[str, _Walk] = {}
    by_set = reference.set_wants(task)
    for name in INPUT_SETS:
        walks[name] = walk = _walk_set(task, name, by_set[name], _inputs(task, name), lines)
        if not (walk.finished or _set_record(outcome.result, name) is not None):
            break  # the run ended in this set
    extra_lines = lines.next() is not None
    sets = {name: _set_result(task, name, walks[name], outcome, limits, name == list(walks)[-1],
                              extra_lines and name == INPUT_SETS[-1]) if name in walks
            else SetResult(status="error", detail=NOT_RUN) for name in INPUT_SETS}
    return _verdict(task, sets)


def _verdict(task: Task, sets: dict[str, SetResult]) -> FuncResult:
    """Base's outcome when it did not pass, else plus's (``pass`` when both passed)."""
    for name in INPUT_SETS:
        if sets[name].status != "pass":
            return FuncResult(status=sets[name].status, detail=sets[name].detail, sets=sets)
    total = len(input_positions(task))
    return FuncResult(status="pass", detail=f"{total} inputs matched the reference", sets=sets)
