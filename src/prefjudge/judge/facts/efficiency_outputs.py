"""Checking what a measured run returned: every output compared with the reference's.

Every call the efficiency fact measures is a checked call
(:mod:`prefjudge.judge.facts.efficiency`): the cost runner (``child/_pj_perf.py``) writes
each input's different outputs once, and :func:`measured_outputs_problem` compares every
one with the reference's output on that input, by the test runs' own rule and tolerances.
A run whose outputs file is not the one its run wrote (its SHA-256, carried by the run's
result) is not read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from prefjudge.records import Task
from prefjudge.sandbox.compare import (
    EVALPLUS_LINE_MAX,
    INPUT_SETS,
    ReferenceOutputs,
    SpoiledOutputs,
    _compare_one,
    _output_line,
    parse_line,
    raw_lines,
)
from prefjudge.sandbox.process import RunOutcome

GIST_CHARS = 300


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
