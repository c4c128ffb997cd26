"""The LiveCodeBench ``code_generation_lite`` task format, from files or the hub.

Rows have ``question_content``, ``public_test_cases``, ``private_test_cases``,
``starter_code`` and ``metadata``; see :func:`livecodebench_task`. The hub dataset
``livecodebench/code_generation_lite`` is read from its ``test*.jsonl`` files (its loading
script needs ``datasets`` < 4); the subset is the version tag: ``release_v1`` ...
``release_v6`` (every problem up to that release), ``release_latest``, or ``v1`` ... ``v6``
(one release's problems); default ``release_v5``.
"""

from __future__ import annotations

import base64
import io
import pickle
import zlib
from collections.abc import Mapping
from typing import Any

from prefjudge.io import FieldProblem, JsonValueError, parse_json, text_field
from prefjudge.records import StdioCase, Task
from prefjudge.scoring.source_types import HubDataset
from prefjudge.scoring.task_formats.registry import task_format


def _lcb_subsets() -> dict[str, tuple[str, ...]]:
    files = ("test.jsonl", *(f"test{n}.jsonl" for n in range(2, 7)))
    subsets = {f"release_v{n}": files[:n] for n in range(1, 7)}
    subsets["release_latest"] = files
    subsets.update({f"v{n}": (files[n - 1],) for n in range(1, 7)})
    return subsets


HUB = HubDataset(
    "livecodebench/code_generation_lite",
    "tasks",
    ("livecodebench", "lcb"),
    split="test",
    subsets=_lcb_subsets(),
    subset="release_v5",
    note="LiveCodeBench; subset = version tag (release_v1 ... release_v6, v1 ... v6)",
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


def _is_livecodebench(record: Mapping[str, Any]) -> bool:
    return {"question_content", "public_test_cases"} <= record.keys()


@task_format(
    name="livecodebench",
    title="LiveCodeBench",
    detect=_is_livecodebench,
    order=10,
    hub=(HUB,),
    test_formats=("stdio", "none"),
)
def livecodebench_task(record: dict[str, Any]) -> Task:
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
