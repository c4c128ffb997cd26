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

The formats are those of :mod:`prefjudge.scoring.sample_formats`, each a module that
registers itself; :data:`FORMATS` and the formats messages expect are derived from that
registry, and a format registered there is read here with no other change.

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
from prefjudge.live_views import LiveMapping
from prefjudge.records import Generation, Task, generation_id, normalize_model_name
from prefjudge.scoring.sample_formats import (
    SampleConverter,
    SampleFormat,
    expected_samples,
    sample_detection_order,
    sample_formats,
    sample_marks,
)

FORMATS: Mapping[str, str] = LiveMapping(
    lambda: {fmt.name: fmt.description for fmt in sample_formats()}
)
"""Every format :func:`read_generations` reads, by name, with the fields that mark it."""


class SampleFormatWarning(UserWarning):
    """Something about how a sample file was read that the user should know (said once)."""


@dataclass(frozen=True)
class _Detected:
    """The format of one line, or why it cannot be told, and the field that decided."""

    fmt: SampleFormat | None
    field: str
    message: str = ""
    ambiguous: bool = False


def _classify(record: Mapping[str, Any]) -> _Detected:
    for fmt in sample_detection_order():
        field = fmt.detect(record)
        if field is None:
            continue
        problem = fmt.ambiguous(record) if fmt.ambiguous is not None else None
        if problem:
            return _Detected(None, field, problem, ambiguous=True)
        return _Detected(fmt, field)
    marks = sample_marks()
    shown = sorted(record)[:12]
    return _Detected(None, marks[0], (
        f"cannot tell the format: the line has none of {', '.join(map(repr, marks))} "
        f"(its fields: {shown}); {expected_samples()}"
    ))


def detect_format(record: dict[str, Any]) -> str | None:
    """Name the format of one line of a generations file, by its fields.

    Args:
        record: One parsed JSONL record.

    Returns:
        ``prefjudge``, ``evalplus``, ``bigcodebench``, ``swe-if`` or ``swe-if-edit`` (see
        the module docstring; or another registered format), or None when the format
        cannot be told: a record with none of ``response``, ``solution``, ``completion``,
        ``full_response``, ``if_info``, or one with ``response`` and a generator's field
        but no ``model``.
    """
    if not isinstance(record, dict):
        return None
    fmt = _classify(record).fmt
    return fmt.name if fmt is not None else None


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
    lines = list(iter_objects(path))
    reader = _Reader(str(path), model, model if model is not None else model_from_path(path),
                     tasks, _file_format(lines))
    records: list[tuple[int, Generation]] = []
    issues: list[InputIssue] = []
    for number, data in lines:
        result = data if isinstance(data, InputIssue) else reader.line(number, data)
        if isinstance(result, Generation):
            records.append((number, result))
        elif isinstance(result, InputIssue):
            issues.append(result)
        else:
            issues.extend(result)
    if reader.bare_completions:
        warnings.warn(SampleFormatWarning(
            f"{reader.spath}: {reader.bare_completions} completion-style sample(s) scored as the "
            "completion alone, without the task's prompt (no tasks were given, or not "
            "these tasks): give the tasks (--tasks) to score prompt + completion"
        ), stacklevel=2)
    return records, issues


def _file_format(lines: list[tuple[int, Any]]) -> tuple[SampleFormat, int] | None:
    """The format of the file's first line that has one, and that line's number."""
    for number, data in lines:
        fmt = None if isinstance(data, InputIssue) else _classify(data).fmt
        if fmt is not None:
            return fmt, number
    return None


class _Reader:
    """Reads the lines of one generations file (the state one file's lines share)."""

    def __init__(self, spath: str, model: str | None, name: str,
                 tasks: Mapping[str, Task] | None,
                 file_format: tuple[SampleFormat, int] | None) -> None:
        self.spath, self.model, self.name, self.tasks = spath, model, name, tasks
        self.file_format = file_format
        self.seen: Counter[str] = Counter()
        self.bare_completions = 0

    def line(self, number: int, data: dict[str, Any]) -> Generation | list[InputIssue]:
        """One line's generation, or its issues."""
        fmt = self._format(number, data)
        if isinstance(fmt, InputIssue):
            return [fmt]
        if fmt.convert is None:
            return _prefjudge(self.spath, number, data, self.model)
        if self.name == "":
            return [InputIssue(self.spath, number, "model", (
                "no model name: the file name gives none; name it with the model argument "
                "(--model)"
            ))]
        sample = _sample_index(data, self.seen)
        try:
            built, bare = _build(fmt.name, fmt.convert, data, self.name, sample, self.tasks)
        except FieldProblem as exc:
            return [InputIssue(self.spath, number, exc.field, f"{exc} ({fmt.name} format)")]
        self.bare_completions += bare
        return _validated(self.spath, number, built)

    def _format(self, number: int, data: dict[str, Any]) -> SampleFormat | InputIssue:
        """The line's format, or the issue saying why it has none the file allows."""
        found = _classify(data)
        if found.fmt is None:
            if self.file_format is None or found.ambiguous:
                return InputIssue(self.spath, number, found.field, found.message)
            first, line = self.file_format
            if first.convert is not None:
                return _missing_sample_field(self.spath, number, first, line)
            return first  # reported field by field, as prefjudge records always were
        if self.file_format is not None and found.fmt.name != self.file_format[0].name:
            first, line = self.file_format
            return InputIssue(self.spath, number, found.field, (
                f"this line is in the {found.fmt.name} format ({found.fmt.description}) but "
                f"line {line} is in the {first.name} format; one file holds one format"
            ))
        return found.fmt


def _missing_sample_field(spath: str, number: int, fmt: SampleFormat, line: int) -> InputIssue:
    """A line of a sample file that lacks the field holding the code."""
    field, needed = fmt.missing
    return InputIssue(spath, number, field, (
        f"missing: the file is in the {fmt.name} format (line {line}), whose lines need "
        f"{needed}; {expected_samples()}"
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


def _build(fmt: str, convert: SampleConverter, data: Mapping[str, Any], model: str,
           sample: int, tasks: Mapping[str, Task] | None) -> tuple[dict[str, Any], int]:
    """Build a ``Generation`` dict from a sample line; 1 when a completion stands alone."""
    task_id = text_field(data, "task_id")
    if not task_id:
        raise FieldProblem("task_id", "empty")
    parts = convert(data, task_id, tasks)
    k = len(parts.instructions)
    built: dict[str, Any] = {
        "id": generation_id(task_id, parts.protocol, k, sample),
        "task_id": task_id,
        "model": model,
        "response": parts.response,
        "instructions": parts.instructions,
        "source_format": fmt,
        "protocol": parts.protocol,
        "k": k,
        "sample": sample,
    }
    if parts.turns is not None:
        built["turns"] = parts.turns
    if parts.is_code:
        built["response_is_code"] = True
    if parts.error is not None:
        built["error"] = parts.error
    return built, parts.bare
