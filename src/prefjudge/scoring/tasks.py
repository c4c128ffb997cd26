"""Load benchmark tasks from local files into :class:`~prefjudge.records.Task`.

Accepted, as distributed (``.jsonl`` or ``.jsonl.gz``), the format told apart by the
fields of the records, never by the file name:

- BigCodeBench (``instruct_prompt``, ``complete_prompt``, ``canonical_solution``,
  ``test``, ``entry_point``, ``libs``): the prompt is the instruction, the reference is
  ``complete_prompt + canonical_solution``, tests are ``unittest`` ``TestCases``;
- HumanEval (``prompt``, ``canonical_solution``, ``test``, ``entry_point``):
  ``check(candidate)`` tests, reference ``prompt + canonical_solution``;
- HumanEval+ and MBPP+ (EvalPlus: ``base_input``, ``plus_input``, ``atol``; MBPP+ also
  has ``assertion``): differential tests against the reference;
- LiveCodeBench ``code_generation_lite`` (``question_content``, ``public_test_cases``,
  ``private_test_cases``, ``starter_code``, ``metadata``): see :func:`_livecodebench`;
- the project's own task JSONL (records shaped like ``Task``).

The same converters read the public hub releases through
:func:`prefjudge.scoring.sources.load_hub` (the ``datasets`` library, imported only
there); see :data:`HUB_DATASETS` for the names.
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import io
import os
import pickle
import warnings
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from prefjudge.io import (
    FieldProblem,
    InputError,
    InputIssue,
    JsonValueError,
    iter_objects,
    parse_json,
    text_field,
    validation_issues,
)
from prefjudge.records import StdioCase, Task

BIGCODEBENCH_FIELDS = (
    "task_id",
    "instruct_prompt",
    "complete_prompt",
    "canonical_solution",
    "test",
    "entry_point",
)
EVALPLUS_FIELDS = (
    "task_id",
    "prompt",
    "entry_point",
    "canonical_solution",
    "base_input",
    "plus_input",
)
HUMANEVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


def detect_format(record: dict[str, Any]) -> str | None:
    """Name the benchmark a record comes from, by its fields.

    Args:
        record: One parsed JSONL record.

    Returns:
        ``livecodebench``, ``bigcodebench``, ``mbppplus``, ``humanevalplus``,
        ``humaneval``, ``mbppplus_hub`` (the hub release of MBPP+, which lacks the
        EvalPlus inputs), ``prefjudge`` (the project's own task format), or None when it
        is none of them.
    """
    keys = set(record)
    if {"question_content", "public_test_cases"} <= keys:
        return "livecodebench"
    if {"instruct_prompt", "complete_prompt"} <= keys:
        return "bigcodebench"
    if {"base_input", "plus_input"} <= keys:
        return "mbppplus" if "assertion" in keys else "humanevalplus"
    if {"prompt", "canonical_solution", "test", "entry_point"} <= keys:
        return "humaneval"
    if {"task_id", "prompt", "code", "test_list", "test"} <= keys:
        return "mbppplus_hub"
    if "test_format" in keys or ("task_id" in keys and "prompt" in keys):
        return "prefjudge"
    return None


def _inputs(record: dict[str, Any], field: str) -> list[Any]:
    value = record.get(field)
    if value is None or value == {}:
        return []  # MBPP+ has one task whose plus_input is an empty object
    if not isinstance(value, list) or not all(isinstance(item, list) for item in value):
        raise FieldProblem(field, "expected a list of argument lists")
    return value


def parse_libs(value: Any) -> list[str]:
    """BigCodeBench ``libs``: a list, or (in some versions) the string repr of one."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
            raise FieldProblem("libs", f"not a list literal: {value[:80]!r}") from exc
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise FieldProblem("libs", "expected a list of library names")
    return sorted(set(value))


def _bigcodebench(record: dict[str, Any]) -> Task:
    fields = {name: text_field(record, name) for name in BIGCODEBENCH_FIELDS}
    return Task(
        task_id=fields["task_id"],
        prompt=fields["instruct_prompt"],
        entry_point=fields["entry_point"],
        test_format="bigcodebench",
        tests=fields["test"],
        canonical_solution=fields["complete_prompt"] + fields["canonical_solution"],
        libs=parse_libs(record.get("libs", [])),
        source="bigcodebench",
        metadata={
            "complete_prompt": fields["complete_prompt"],
            "code_prompt": record.get("code_prompt", ""),
        },
    )


def _humaneval(record: dict[str, Any]) -> Task:
    fields = {name: text_field(record, name) for name in HUMANEVAL_FIELDS}
    return Task(
        task_id=fields["task_id"],
        prompt=fields["prompt"],
        entry_point=fields["entry_point"],
        test_format="humaneval",
        tests=fields["test"],
        canonical_solution=fields["prompt"] + fields["canonical_solution"],
        source="humaneval",
    )


def _mbpp_prompt_text(raw: str) -> str:
    text = raw.strip()
    if text.startswith('"""') and text.endswith('"""') and len(text) >= 6:
        text = text[3:-3]
    return text.strip()


def _evalplus(record: dict[str, Any], dataset: str) -> Task:
    fields = {name: text_field(record, name) for name in EVALPLUS_FIELDS[:4]}
    atol = record.get("atol", 0)
    if isinstance(atol, bool) or not isinstance(atol, (int, float)):
        raise FieldProblem("atol", "expected a number")
    metadata: dict[str, Any] = {"evalplus_dataset": dataset}
    if isinstance(record.get("contract"), str):
        metadata["contract"] = record["contract"]
    prompt = fields["prompt"]
    if dataset == "mbpp":
        metadata["raw_prompt"] = prompt
        metadata["assertion"] = text_field(record, "assertion")
        prompt = _mbpp_prompt_text(prompt)
    return Task(
        task_id=fields["task_id"],
        prompt=prompt,
        entry_point=fields["entry_point"],
        test_format="evalplus",
        tests=record["assertion"] if dataset == "mbpp" else str(record.get("test", "")),
        canonical_solution=fields["prompt"] + fields["canonical_solution"],
        base_inputs=_inputs(record, "base_input"),
        plus_inputs=_inputs(record, "plus_input"),
        atol=float(atol),
        source="mbppplus" if dataset == "mbpp" else "humanevalplus",
        metadata=metadata,
    )


LCB_STDIO_NOTE = (
    "Read the input from standard input and write the answer to standard output. "
    "Write a complete Python program."
)
LCB_FUNCTIONAL_NOTE = (
    "Complete the following starter code (a LeetCode-style class Solution method):"
)
LCB_FUNCTIONAL_REASON = (
    "LiveCodeBench functional (LeetCode-style) problem: the sandbox has no adapter that "
    "calls a Solution method with the JSON-encoded arguments, so it has no runnable tests "
    "here; its cases are kept in metadata['lcb_functional_cases']"
)


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Unpickles plain data only: any class or function reference is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a test-case blob")


def decode_lcb_cases(value: Any, field: str = "private_test_cases") -> list[dict[str, Any]]:
    """Decode LiveCodeBench test cases, plain or compressed.

    The hub release stores ``public_test_cases`` as a JSON string and
    ``private_test_cases`` as ``base64(zlib(pickle(json_string)))``; local exports may
    hold either, or an already-parsed list. The pickle is read with an unpickler that
    refuses every class and function reference, so only plain strings and containers
    can come out of it.

    Args:
        value: The field's value.
        field: Field name, for error messages.

    Returns:
        The cases, each a dict with ``input``, ``output`` and ``testtype``.
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except JsonValueError as exc:
            if exc.line == 0:  # valid JSON syntax the parser could not take (too deep, ...)
                raise FieldProblem(field, str(exc)) from None
            try:
                raw = zlib.decompress(base64.b64decode(value.encode("ascii"), validate=True))
                inner = _NoGlobalsUnpickler(io.BytesIO(raw)).load()
                value = parse_json(inner) if isinstance(inner, (str, bytes)) else inner
            except Exception as exc:  # a corrupt pickle can raise almost anything
                raise FieldProblem(
                    field, f"neither JSON nor base64+zlib+pickle test cases ({exc})"
                ) from exc
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("input"), str) and isinstance(c.get("output"), str)
        for c in value
    ):
        raise FieldProblem(field, "expected a list of {input, output} string objects")
    return value


def _lcb_metadata(record: dict[str, Any]) -> dict[str, Any]:
    raw = record.get("metadata", {})
    if isinstance(raw, str):
        try:
            raw = parse_json(raw) if raw.strip() else {}
        except JsonValueError as exc:
            raise FieldProblem("metadata", str(exc)) from exc
    if not isinstance(raw, dict):
        raise FieldProblem("metadata", "expected a JSON object")
    return raw


def _livecodebench(record: dict[str, Any]) -> Task:
    """LiveCodeBench ``code_generation_lite`` record to a Task.

    stdin/stdout problems (every case ``testtype == "stdin"``) become ``test_format
    "stdio"`` tasks with public then private cases as :class:`StdioCase` (the prompt asks
    for a complete program). Functional problems (``testtype == "functional"``: a
    ``class Solution`` method from ``starter_code``, arguments one JSON value per input
    line) get ``test_format "none"``: the sandbox cannot run them yet, and a task with no
    tests is never scored as passing (``func`` is null). Their entry point is the method
    name (``metadata.func_name``) and their cases are kept in ``metadata``.
    """
    content = text_field(record, "question_content")
    question_id = record.get("question_id")
    if not isinstance(question_id, (str, int)) or question_id == "":
        raise FieldProblem("question_id", "missing")
    public = decode_lcb_cases(record.get("public_test_cases"), "public_test_cases")
    private = decode_lcb_cases(record.get("private_test_cases"), "private_test_cases")
    cases = public + private
    starter = record.get("starter_code") or ""
    if not isinstance(starter, str):
        raise FieldProblem("starter_code", "expected a string")
    lcb_meta = _lcb_metadata(record)
    testtypes = sorted({str(c.get("testtype", "stdin")) for c in cases})
    metadata: dict[str, Any] = {
        key: record[key]
        for key in ("question_title", "platform", "contest_id", "contest_date", "difficulty")
        if key in record
    }
    metadata.update(
        {"starter_code": starter, "lcb_metadata": lcb_meta, "lcb_testtypes": testtypes,
         "public_cases": len(public), "private_cases": len(private)}
    )
    task_id = f"LiveCodeBench/{question_id}"
    if not cases:
        raise FieldProblem("public_test_cases", "no test cases")
    if testtypes == ["stdin"]:
        return Task(
            task_id=task_id,
            prompt=f"{content.rstrip()}\n\n{LCB_STDIO_NOTE}",
            test_format="stdio",
            stdio_cases=[StdioCase(input=c["input"], output=c["output"]) for c in cases],
            source="livecodebench",
            metadata=metadata,
        )
    if testtypes != ["functional"]:
        raise FieldProblem("public_test_cases", f"mixed test types {testtypes}")
    prompt = content.rstrip()
    if starter.strip():
        prompt += f"\n\n{LCB_FUNCTIONAL_NOTE}\n```python\n{starter.rstrip()}\n```"
    metadata["not_runnable"] = LCB_FUNCTIONAL_REASON
    metadata["lcb_functional_cases"] = [
        {"input": c["input"], "output": c["output"]} for c in cases
    ]
    func_name = lcb_meta.get("func_name")
    return Task(
        task_id=task_id,
        prompt=prompt,
        entry_point=func_name if isinstance(func_name, str) else None,
        test_format="none",
        source="livecodebench",
        metadata=metadata,
    )


def _mbppplus_hub(record: dict[str, Any]) -> Task:
    """The hub release of MBPP+ (``evalplus/mbppplus``): no EvalPlus inputs, no entry point.

    Its ``test`` is a script that calls the function by name, which no sandbox adapter
    runs, so the task gets ``test_format "none"`` with the reason in ``metadata``; use the
    EvalPlus release file (``MbppPlus-v0.2.0.jsonl.gz``) to score MBPP+ functionally.
    """
    fields = {name: text_field(record, name) for name in ("prompt", "code", "test")}
    raw_id = record.get("task_id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
        raise FieldProblem("task_id", "expected a string or an integer")
    task_id = str(raw_id)
    if not task_id.startswith("Mbpp/"):
        task_id = f"Mbpp/{task_id}"
    return Task(
        task_id=task_id,
        prompt=fields["prompt"],
        test_format="none",
        tests=fields["test"],
        canonical_solution=fields["code"],
        source="mbppplus",
        metadata={
            "evalplus_dataset": "mbpp",
            "not_runnable": "hub release of MBPP+ lacks base/plus inputs and the entry "
            "point; load MbppPlus-v0.2.0.jsonl.gz (EvalPlus release) to run its tests",
        },
    )


CONVERTERS: dict[str, Callable[[dict[str, Any]], Task]] = {
    "bigcodebench": _bigcodebench,
    "humaneval": _humaneval,
    "humanevalplus": lambda record: _evalplus(record, "humaneval"),
    "mbppplus": lambda record: _evalplus(record, "mbpp"),
    "livecodebench": _livecodebench,
    "mbppplus_hub": _mbppplus_hub,
    "prefjudge": Task.model_validate,
}


def _convert(
    path: str, number: int, record: Any, fmt: str | None
) -> tuple[Task | None, list[InputIssue]]:
    if not isinstance(record, dict):
        return None, [InputIssue(path, number, "", "expected a JSON object")]
    if fmt is None:
        return None, [
            InputIssue(
                path,
                number,
                "",
                "cannot tell the benchmark from the fields "
                f"{sorted(record)[:12]}; expected BigCodeBench, HumanEval, "
                "HumanEval+, MBPP+, LiveCodeBench or prefjudge task records",
            )
        ]
    try:
        return CONVERTERS[fmt](record), []
    except FieldProblem as exc:
        return None, [InputIssue(path, number, exc.field, f"{exc} ({fmt} format)")]
    except ValidationError as exc:
        return None, validation_issues(path, number, exc)


def load_tasks(path: str | os.PathLike[str]) -> dict[str, Task]:
    """Load every task of a benchmark file, detecting its format.

    Args:
        path: BigCodeBench, HumanEval, HumanEval+, MBPP+, LiveCodeBench or prefjudge
            task JSONL (optionally gzipped).

    Returns:
        Tasks by ``task_id``, in file order.

    Raises:
        InputError: With every problem found (file, line, field): lines that are not
            JSON objects, missing or mistyped fields, duplicate task ids, no tasks.
    """
    return tasks_from_records(iter_objects(path), str(path))


def tasks_from_records(
    records: Iterable[tuple[int, dict[str, Any] | InputIssue]], where: str
) -> dict[str, Task]:
    """Convert benchmark records (format detected from the first one) into tasks.

    Args:
        records: ``(line number, record or issue)`` pairs, as :func:`iter_objects` gives.
        where: The source named in error messages (a path or ``hub:NAME[SPLIT]``).

    Returns:
        Tasks by ``task_id``, in order.

    Raises:
        InputError: With every problem found (see :func:`load_tasks`).
    """
    tasks: dict[str, Task] = {}
    first_line: dict[str, int] = {}
    issues: list[InputIssue] = []
    fmt: str | None = None
    for number, record in records:
        if isinstance(record, InputIssue):
            issues.append(record)
            continue
        if fmt is None and isinstance(record, dict):
            fmt = detect_format(record)
        task, found = _convert(where, number, record, fmt)
        issues.extend(found)
        if task is None:
            continue
        if task.task_id in tasks:
            issues.append(
                InputIssue(
                    where,
                    number,
                    "task_id",
                    f"duplicate task_id "
                    f"{task.task_id!r} (first on line {first_line[task.task_id]})",
                )
            )
            continue
        tasks[task.task_id] = task
        first_line[task.task_id] = number
    if not tasks and not issues:
        issues.append(InputIssue(where, 0, "", "no tasks in the file"))
    if issues:
        raise InputError(issues)
    return tasks


HUB_DATASETS: dict[str, str] = {
    "bigcode/bigcodebench": "BigCodeBench; splits are versions, e.g. 'v0.1.4'",
    "openai/openai_humaneval": "HumanEval; split 'test'",
    "evalplus/humanevalplus": "HumanEval+ (check()-style tests); split 'test'",
    "evalplus/mbppplus": "MBPP+ without EvalPlus inputs (no runnable tests); split 'test'",
    "livecodebench/code_generation_lite": (
        "LiveCodeBench; split 'test', version_tag='release_v5' and "
        "trust_remote_code=True (a loading script: datasets < 4)"
    ),
}


class HubUnavailableError(RuntimeError):
    """The hub cannot be used: ``datasets`` is not installed or the load failed."""


def imported_modules(source: str) -> set[str]:
    """Top-level modules ``source`` imports (absolute imports only; empty if unparsable)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested too deeply too
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".", 1)[0])
    return names


def missing_libraries(task: Task) -> list[str]:
    """Libraries the task needs that this interpreter cannot import.

    Args:
        task: A task; its ``libs`` and the modules its reference solution and tests
            import are checked (BigCodeBench tests import libraries its ``libs`` omit).

    Returns:
        Sorted names of the top-level modules that are not installed.
    """
    needed = {lib.split(".", 1)[0] for lib in task.libs}
    needed |= imported_modules(task.canonical_solution or "") | imported_modules(task.tests)
    missing = []
    for name in sorted(needed):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing
