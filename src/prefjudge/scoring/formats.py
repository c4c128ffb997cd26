"""Read generation files written by prefjudge or by standard generators, as ``Generation``.

``prefjudge score`` accepts, told apart by the fields of each line (never by the file name):

- ``prefjudge``: prefjudge's own records (``prefjudge generate``; a ``response`` field),
  validated as :class:`~prefjudge.records.Generation` exactly as before;
- ``evalplus``: EvalPlus samples (``evalplus.codegen`` / ``evalplus.sanitize``):
  ``{"task_id", "solution"}`` (the full code) or ``{"task_id", "completion"}`` (a
  continuation of the task's prompt: the code scored is the task's prompt + the
  completion when tasks are given, else the completion alone, said once with a
  :class:`SampleFormatWarning`); ``solution`` wins when a line has both, as in EvalPlus;
- ``bigcodebench``: BigCodeBench samples (``bigcodebench.generate`` / ``sanitize``; a
  ``raw_solution`` field or a ``BigCodeBench/`` task id): the raw response is scored
  when the line has one (instruction checks then see the Markdown), else ``solution``
  (or ``complete_prompt`` + ``completion``, as above);
- ``swe-if``: SWE-IF's generator output (``code_generator.py``, generation task:
  ``full_response`` and ``if_info``): the response is ``full_response``, the
  instructions are ``if_info.constraints`` (``index`` → id, ``parameters`` → params),
  protocol ``single``, k the number of constraints;
- ``swe-if-edit``: SWE-IF's editing files (``edit_num`` and ``messages`` as well):
  protocol ``multi``; the turns come from ``messages`` when they pair up as the
  generator writes them (one user message and one reply per turn, the first turn the
  plain task, turn t + 1 adding constraint t, the last reply ``full_response``), else
  the record has no turns.

A SWE-IF line whose ``status`` says generation failed (``failed_after_retries``,
``processing_error``) becomes a generation with an empty response and ``error`` set, as
``prefjudge generate`` writes a failed call. A converted record also carries
``source_format`` (the format's name), and an EvalPlus or BigCodeBench ``solution`` or
``completion`` is marked ``response_is_code``: its tests run it whole, never a fenced
block found in it (a docstring's ```` ```python ```` example is part of the code).

One file holds one format: a line in another format than the file's first recognised
line, or a line whose format cannot be told, is an :class:`~prefjudge.io.InputIssue`
naming the file, line and field and the formats expected.

Ids: every converted record gets ``{task_id}::{protocol}::k{k}::s{n}`` (the form
``prefjudge generate`` writes), where ``n`` counts the earlier lines of the file with the
same task id (EvalPlus files hold several samples per task), so ids are stable across
runs and ``score`` can resume.

Model name: the ``model`` argument (``prefjudge score --model NAME``) when given, else the
file's stem: its name without a ``.gz`` ending and then without its last extension
(``gpt-4o_0-instructions.jsonl`` → ``gpt-4o_0-instructions``,
``model--bigcodebench-instruct--vllm-0-1-sanitized_calibrated.jsonl`` → that name without
``.jsonl``). prefjudge records name their model on every line: the argument only fills a
missing ``model``, and a line naming another model is an issue.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prefjudge.io import FieldProblem, InputIssue, iter_objects, text_field, validation_issues
from prefjudge.records import Generation, Task, normalize_model_name

FORMATS: dict[str, str] = {
    "prefjudge": "prefjudge generation records (a 'response' field)",
    "evalplus": "EvalPlus samples ('task_id' with 'solution' or 'completion')",
    "bigcodebench": "BigCodeBench samples ('task_id' with 'solution', 'raw_solution' or "
                    "'completion')",
    "swe-if": "SWE-IF generation output ('task_id', 'solution', 'full_response', 'if_info')",
    "swe-if-edit": "SWE-IF editing output (also 'edit_num' and 'messages')",
}
"""Every format :func:`read_generations` reads, by name, with the fields that mark it."""

EXPECTED = (
    "expected prefjudge generations ('response'), EvalPlus or BigCodeBench samples "
    "('task_id' with 'solution' or 'completion') or SWE-IF output ('full_response', "
    "'if_info')"
)
_SAMPLE_FIELDS = ("solution", "completion", "full_response", "if_info")
_FAILED_STATUSES = frozenset({"failed_after_retries", "processing_error"})
_REPLY_ROLES = frozenset({"model", "assistant"})


class SampleFormatWarning(UserWarning):
    """Something about how a sample file was read that the user should know (said once)."""


@dataclass(frozen=True)
class _Detected:
    """The format of one line, or why it cannot be told, and the field that decided."""

    fmt: str | None
    field: str
    message: str = ""
    ambiguous: bool = False


def _classify(record: Mapping[str, Any]) -> _Detected:
    keys = set(record)
    if "response" in keys:
        others = [name for name in _SAMPLE_FIELDS if name in keys]
        if others and "model" not in keys:
            return _Detected(None, "response", (
                f"cannot tell the format: the line has 'response' (prefjudge generation) "
                f"and {others[0]!r} (a generator's sample) but no 'model'; {EXPECTED}"
            ), ambiguous=True)
        return _Detected("prefjudge", "response")
    if {"edit_num", "messages"} <= keys and keys & {"full_response", "if_info"}:
        return _Detected("swe-if-edit", "edit_num")
    if keys & {"full_response", "if_info"}:
        return _Detected("swe-if", "full_response" if "full_response" in keys else "if_info")
    if keys & {"solution", "completion"}:
        task_id = record.get("task_id")
        if "raw_solution" in keys:
            return _Detected("bigcodebench", "raw_solution")
        if isinstance(task_id, str) and task_id.startswith("BigCodeBench/"):
            return _Detected("bigcodebench", "task_id")
        return _Detected("evalplus", "solution" if "solution" in keys else "completion")
    shown = sorted(keys)[:12]
    return _Detected(None, "response", (
        f"cannot tell the format: the line has none of 'response', 'solution', "
        f"'completion', 'full_response' (its fields: {shown}); {EXPECTED}"
    ))


def detect_format(record: dict[str, Any]) -> str | None:
    """Name the format of one line of a generations file, by its fields.

    Args:
        record: One parsed JSONL record.

    Returns:
        ``prefjudge``, ``evalplus``, ``bigcodebench``, ``swe-if`` or ``swe-if-edit`` (see
        the module docstring), or None when the format cannot be told: a record with
        none of ``response``, ``solution``, ``completion``, ``full_response``,
        ``if_info``, or one with ``response`` and a generator's field but no ``model``.
    """
    if not isinstance(record, dict):
        return None
    return _classify(record).fmt


def model_from_path(path: str | os.PathLike[str]) -> str:
    """The model name a generations file's name gives: its stem.

    Args:
        path: The file.

    Returns:
        The file name without a ``.gz`` ending, then without its last extension, the
        text after its last dot (``gpt-4o_0-instructions.jsonl.gz`` →
        ``gpt-4o_0-instructions``; a name without a dot is kept whole); "" when nothing
        is left (``.jsonl``).
    """
    name = Path(path).name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem, dot, _ = name.rpartition(".")
    return (stem if dot else name).strip()


def read_generations(
    path: str | os.PathLike[str],
    *,
    model: str | None = None,
    tasks: Mapping[str, Task] | None = None,
) -> tuple[list[tuple[int, Generation]], list[InputIssue]]:
    """Read a generations file in any format :data:`FORMATS` names, as generations.

    A drop-in replacement for ``read_records(path, Generation, collect=True)``: the same
    line, JSON, gzip and UTF-8 checks (:func:`prefjudge.io.iter_objects`), the same
    return shape, every problem collected as an issue.

    Args:
        path: JSONL file (optionally gzipped).
        model: The model that wrote the samples; default the file's stem (see the module
            docstring). For prefjudge records it only fills a missing ``model``.
        tasks: Tasks by id, for completion-style samples (the code scored is the task's
            prompt + the completion); without them the completion alone is scored and a
            :class:`SampleFormatWarning` says so once.

    Returns:
        ``(records, issues)``: valid generations with their line numbers, and one issue
        per problem (file, line, field, message).

    Raises:
        InputError: When the file cannot be opened.
    """
    spath = str(path)
    name = model if model is not None else model_from_path(path)
    lines = list(iter_objects(path))
    file_format: tuple[str, int] | None = None  # the format of the first line that has one
    for number, data in lines:
        fmt = None if isinstance(data, InputIssue) else _classify(data).fmt
        if fmt is not None:
            file_format = (fmt, number)
            break
    records: list[tuple[int, Generation]] = []
    issues: list[InputIssue] = []
    seen: Counter[str] = Counter()
    bare_completions = 0
    for number, data in lines:
        if isinstance(data, InputIssue):
            issues.append(data)
            continue
        found = _classify(data)
        fmt = found.fmt
        if fmt is None:
            if file_format is None or found.ambiguous:
                issues.append(InputIssue(spath, number, found.field, found.message))
                continue
            if file_format[0] != "prefjudge":
                issues.append(_missing_sample_field(spath, number, *file_format))
                continue
            fmt = "prefjudge"  # reported field by field, as prefjudge records always were
        elif file_format is not None and fmt != file_format[0]:
            first, line = file_format
            issues.append(InputIssue(spath, number, found.field, (
                f"this line is in the {fmt} format ({FORMATS[fmt]}) but line {line} is in "
                f"the {first} format; one file holds one format"
            )))
            continue
        if fmt == "prefjudge":
            result = _prefjudge(spath, number, data, model)
        elif name == "":
            result = [InputIssue(spath, number, "model", (
                "no model name: the file name gives none; name it with the model argument "
                "(--model)"
            ))]
        else:
            sample = _sample_index(data, seen)
            try:
                built, bare = _convert(fmt, data, name, sample, tasks)
            except FieldProblem as exc:
                issues.append(InputIssue(spath, number, exc.field, f"{exc} ({fmt} format)"))
                continue
            bare_completions += bare
            result = _validated(spath, number, built)
        if isinstance(result, Generation):
            records.append((number, result))
        else:
            issues.extend(result)
    if bare_completions:
        warnings.warn(SampleFormatWarning(
            f"{spath}: {bare_completions} completion-style sample(s) scored as the "
            "completion alone, without the task's prompt (no tasks were given, or not "
            "these tasks): give the tasks (--tasks) to score prompt + completion"
        ), stacklevel=2)
    return records, issues


def _missing_sample_field(spath: str, number: int, fmt: str, line: int) -> InputIssue:
    """A line of a sample file that lacks the field holding the code."""
    if fmt in ("evalplus", "bigcodebench"):
        field, needed = "solution", "'solution' or 'completion'"
    else:
        field, needed = "full_response", "'full_response'"
    return InputIssue(spath, number, field, (
        f"missing: the file is in the {fmt} format (line {line}), whose lines need {needed}; "
        f"{EXPECTED}"
    ))


def _sample_index(data: Mapping[str, Any], seen: Counter[str]) -> int:
    """How many earlier lines had this line's task id (counted before any other check)."""
    task_id = data.get("task_id")
    if not isinstance(task_id, str):
        return 0
    index = seen[task_id]
    seen[task_id] += 1
    return index


def _validated(spath: str, number: int, data: dict[str, Any]) -> Generation | list[InputIssue]:
    try:
        return Generation.model_validate(data)
    except ValidationError as exc:
        return validation_issues(spath, number, exc)


def _prefjudge(
    spath: str, number: int, data: dict[str, Any], model: str | None
) -> Generation | list[InputIssue]:
    """A prefjudge record, validated as ``read_records`` does; ``model`` fills a missing one."""
    if model is not None:
        given = data.get("model")
        if given is None:
            data = {**data, "model": model}
        elif isinstance(given, str) and (
                normalize_model_name(given) != normalize_model_name(model)):
            return [InputIssue(spath, number, "model", (
                f"the line names model {given!r} but the model argument (--model) is "
                f"{model!r}; prefjudge generations name their model on every line "
                "(leave --model out, or give the same name)"
            ))]
    return _validated(spath, number, data)


def _task_prompt(task: Task) -> str:
    """The prompt a completion continues: what EvalPlus / BigCodeBench concatenate."""
    for key in ("complete_prompt", "raw_prompt"):  # BigCodeBench; MBPP+ (EvalPlus release)
        value = task.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return task.prompt


def _code(data: Mapping[str, Any], fmt: str, tasks: Mapping[str, Task] | None,
          task_id: str) -> tuple[str, int, bool]:
    """A sample's response, whether it is code as a whole, and 1 if a completion stands alone.

    A ``raw_solution`` is the model's Markdown reply (code is found in it); a
    ``solution`` or ``completion`` is code, never Markdown.
    """
    if fmt == "bigcodebench" and data.get("raw_solution") is not None:
        return text_field(data, "raw_solution"), 0, False
    if "solution" in data:
        return text_field(data, "solution"), 0, True
    completion = text_field(data, "completion")
    task = (tasks or {}).get(task_id)
    if task is None:
        return completion, 1, True
    return _task_prompt(task) + completion, 0, True


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


def _convert(fmt: str, data: Mapping[str, Any], model: str, sample: int,
             tasks: Mapping[str, Task] | None) -> tuple[dict[str, Any], int]:
    """Build a ``Generation`` dict from a sample line; 1 when a completion stands alone."""
    task_id = text_field(data, "task_id")
    if not task_id:
        raise FieldProblem("task_id", "empty")
    bare = 0
    refs: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] | None = None
    error: str | None = None
    protocol = "single"
    is_code = False
    if fmt in ("evalplus", "bigcodebench"):
        response, bare, is_code = _code(data, fmt, tasks, task_id)
    else:
        response = text_field(data, "full_response")
        refs = _constraints(data)
        status = data.get("status")
        if isinstance(status, str) and status in _FAILED_STATUSES:
            detail = data.get("processing_error") or response or status
            error = f"{status}: {detail}" if detail != status else status
            response = ""
        if fmt == "swe-if-edit":
            protocol = "multi"
            edit_num = data.get("edit_num")
            if isinstance(edit_num, bool) or not isinstance(edit_num, int) or edit_num < 0:
                raise FieldProblem("edit_num", "expected a non-negative integer")
            if error is None:
                if len(refs) != edit_num:
                    raise FieldProblem("if_info.constraints", (
                        f"{len(refs)} constraint(s) but edit_num is {edit_num}; an editing "
                        "record lists the constraints of every edit so far"
                    ))
                turns = _edit_turns(data.get("messages"), refs, response)
    k = len(refs)
    built: dict[str, Any] = {
        "id": f"{task_id}::{protocol}::k{k}::s{sample}",
        "task_id": task_id,
        "model": model,
        "response": response,
        "instructions": refs,
        "source_format": fmt,
        "protocol": protocol,
        "k": k,
        "sample": sample,
    }
    if turns is not None:
        built["turns"] = turns
    if is_code:
        built["response_is_code"] = True
    if error is not None:
        built["error"] = error
    return built, bare
