"""SWE-IF generator output: ``swe-if`` (generation) and ``swe-if-edit`` (editing) files.

- ``swe-if`` (``code_generator.py``, generation task: ``full_response`` and ``if_info``):
  the response is ``full_response``, the instructions are ``if_info.constraints``
  (``index`` → id, ``parameters`` → params), protocol ``single``, k the number of
  constraints;
- ``swe-if-edit`` (``edit_num`` and ``messages`` as well): protocol ``multi``; the turns
  come from ``messages`` when they pair up as the generator writes them (one user
  message and one reply per turn, the first turn the plain task, turn t + 1 adding
  constraint t, the last reply ``full_response``), else the record has no turns.

A line whose ``status`` says generation failed (``failed_after_retries``,
``processing_error``) becomes a generation with an empty response and ``error`` set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefjudge.io import FieldProblem, text_field
from prefjudge.records import Task
from prefjudge.scoring.sample_formats.registry import (
    SampleFormat,
    SampleParts,
    register_sample_format,
)

EXPECTED = "SWE-IF output ('full_response', 'if_info')"
MISSING = ("full_response", "'full_response'")
_FAILED_STATUSES = frozenset({"failed_after_retries", "processing_error"})
_REPLY_ROLES = frozenset({"model", "assistant"})


def _constraints(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """SWE-IF ``if_info.constraints`` as instruction refs (``{}`` means none)."""
    info = data.get("if_info", {})
    if info is None:
        return []
    if not isinstance(info, dict):
        raise FieldProblem("if_info", f"expected an object, got {type(info).__name__}")
    constraints = info.get("constraints", [])
    if not isinstance(constraints, list):
        raise FieldProblem("if_info.constraints",
                       f"expected a list, got {type(constraints).__name__}")
    refs = []
    for index, item in enumerate(constraints):
        where = f"if_info.constraints.{index}"
        if not isinstance(item, dict):
            raise FieldProblem(where, f"expected an object, got {type(item).__name__}")
        ident = item.get("index")
        if not isinstance(ident, str) or not ident:
            raise FieldProblem(f"{where}.index", "expected an instruction id (a string)")
        params = item.get("parameters", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise FieldProblem(f"{where}.parameters",
                           f"expected an object, got {type(params).__name__}")
        refs.append({"id": ident, "params": params})
    return refs


def _message_text(message: Any) -> tuple[str, str] | None:
    """``(role, text)`` of a Gemini-style (``parts``) or OpenAI-style (``content``) message."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return None
    parts, content = message.get("parts"), message.get("content")
    if isinstance(content, str) and parts is None:
        return message["role"], content
    if isinstance(parts, list) and parts and content is None:
        texts = [part.get("text") if isinstance(part, dict) else None for part in parts]
        if all(isinstance(text, str) for text in texts):
            return message["role"], "".join(texts)
    return None


def _edit_turns(messages: Any, refs: list[dict[str, Any]],
                response: str) -> list[dict[str, Any]] | None:
    """The turns of a SWE-IF editing record, or None when its messages do not map exactly."""
    if not isinstance(messages, list) or len(messages) != 2 * (len(refs) + 1):
        return None
    turns: list[dict[str, Any]] = []
    for index in range(len(refs) + 1):
        asked, replied = (_message_text(m) for m in messages[2 * index:2 * index + 2])
        if asked is None or replied is None or asked[0] != "user" or \
                replied[0] not in _REPLY_ROLES:
            return None
        turns.append({"index": index + 1, "prompt": asked[1], "response": replied[1],
                      "instruction": refs[index - 1] if index else None})
    if turns[-1]["response"] != response:
        return None
    return turns


def _read(data: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]], str | None]:
    """The line's ``full_response``, its constraints, and why generation failed (or None).

    The failure comes from the line's ``status`` (``failed_after_retries``,
    ``processing_error``).
    """
    response = text_field(data, "full_response")
    refs = _constraints(data)
    status = data.get("status")
    if not isinstance(status, str) or status not in _FAILED_STATUSES:
        return response, refs, None
    detail = data.get("processing_error") or response or status
    return response, refs, f"{status}: {detail}" if detail != status else status


def swe_if_sample(
    data: Mapping[str, Any], task_id: str, tasks: Mapping[str, Task] | None
) -> SampleParts:
    """A SWE-IF generation line: ``full_response`` and ``if_info.constraints``."""
    response, refs, error = _read(data)
    return SampleParts("" if error else response, refs, error=error)


def swe_if_edit_sample(
    data: Mapping[str, Any], task_id: str, tasks: Mapping[str, Task] | None
) -> SampleParts:
    """A SWE-IF editing line: as :func:`swe_if_sample`, multi-turn, with its turns."""
    response, refs, error = _read(data)
    edit_num = data.get("edit_num")
    if isinstance(edit_num, bool) or not isinstance(edit_num, int) or edit_num < 0:
        raise FieldProblem("edit_num", "expected a non-negative integer")
    if error is not None:
        return SampleParts("", refs, protocol="multi", error=error)
    if len(refs) != edit_num:
        raise FieldProblem("if_info.constraints", (
            f"{len(refs)} constraint(s) but edit_num is {edit_num}; an editing "
            "record lists the constraints of every edit so far"
        ))
    turns = _edit_turns(data.get("messages"), refs, response)
    return SampleParts(response, refs, protocol="multi", turns=turns)


def _detect_edit(record: Mapping[str, Any]) -> str | None:
    keys = record.keys()
    return "edit_num" if {"edit_num", "messages"} <= keys and keys & {
        "full_response", "if_info"} else None


def _detect_generation(record: Mapping[str, Any]) -> str | None:
    keys = record.keys()
    if not keys & {"full_response", "if_info"}:
        return None
    return "full_response" if "full_response" in keys else "if_info"


SWE_IF = register_sample_format(
    SampleFormat(
        name="swe-if",
        description="SWE-IF generation output ('task_id', 'solution', 'full_response', "
        "'if_info')",
        expected=EXPECTED,
        detect=_detect_generation,
        convert=swe_if_sample,
        order=30,
        marks=("full_response",),
        missing=MISSING,
    )
)

SWE_IF_EDIT = register_sample_format(
    SampleFormat(
        name="swe-if-edit",
        description="SWE-IF editing output (also 'edit_num' and 'messages')",
        expected=EXPECTED,
        detect=_detect_edit,
        convert=swe_if_edit_sample,
        order=20,
        marks=("full_response",),
        missing=MISSING,
    )
)
