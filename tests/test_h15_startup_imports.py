"""What a pairs-file ``judge`` does not import, and deferred record models behave as eager ones.

Issue 44 (commands that start at once): the judge's start-up modules leave out the task
formats and converters, the markdown parser until a text is counted, and rich's progress
bars when stderr is no terminal; the task and battle records build their validators on
first use (pydantic ``defer_build``), with the same schema, errors and output.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ConfigDict, ValidationError

from prefjudge.records import Battle, InstructionRef, Task
from prefjudge.records.tasks import AugmentedTask, ParamSpec, StdioCase, VerifierSpec

JUDGE_PATH = (
    "prefjudge.cli",
    "prefjudge.judge.run",
    "prefjudge.judge.pairs.inputs",
    "prefjudge.judge.journaled",
    "prefjudge.backends.openai_http",
    "prefjudge.features",
    "prefjudge.cli.reporter",
)
LEFT_OUT = (
    "prefjudge.scoring.task_formats",
    "prefjudge.scoring.tasks",
    "markdown_it",
    "rich.progress",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_judge_start_up_modules_leave_out_tasks_markdown_and_progress() -> None:
    loaded = _loaded_after("\n".join(f"import {name}" for name in JUDGE_PATH))
    assert set(JUDGE_PATH) <= loaded
    assert not loaded & set(LEFT_OUT)


def test_a_pairs_file_resolves_and_loads_without_the_task_formats(tmp_path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    row = {"pair_id": "p1", "task_id": "t1", "instruction": "Add.",
           "response_a": "a", "response_b": "b"}
    pairs.write_text(json.dumps(row) + "\n", encoding="utf-8")
    code = (
        "from prefjudge.judge.pairs.formats.load import open_preference_source\n"
        f"pairs, issues, origin = open_preference_source({str(pairs)!r})\n"
        "assert [p.pair_id for p in pairs] == ['p1'], pairs\n"
    )
    loaded = _loaded_after(code)
    assert "prefjudge.scoring.task_formats" not in loaded
    assert "prefjudge.scoring.tasks" not in loaded


def test_counting_markdown_imports_the_parser_and_counts() -> None:
    loaded = _loaded_after(
        "from prefjudge.features import markdown_counts\n"
        "got = markdown_counts('# T\\n\\n- a\\n- **b**\\n')\n"
        "assert got['header_count']['h1'] == 1 and got['list_count']['unordered'] == 2, got\n"
        "assert got['bold_count']['**'] == 1, got\n"
    )
    assert "markdown_it" in loaded


def _eager(model: type) -> type:
    """A twin of ``model`` of the same name, built at once (``defer_build`` off)."""
    return type(model.__name__, (model,), {
        "model_config": ConfigDict(defer_build=False), "__module__": model.__module__,
        "__qualname__": model.__qualname__, "__doc__": model.__doc__,
    })


DEFERRED = (Task, AugmentedTask, ParamSpec, VerifierSpec, InstructionRef, StdioCase, Battle)


@pytest.mark.parametrize("model", DEFERRED, ids=lambda m: m.__name__)
def test_deferred_records_have_the_eager_schema(model: type) -> None:
    assert model.model_config.get("defer_build") is True
    assert model.model_json_schema() == _eager(model).model_json_schema()


BAD = {
    Task: {"task_id": 3, "prompt": None, "extra_key": 1},
    Battle: {"model_a": "x", "model_b": "x", "winner": "nobody"},
    InstructionRef: {"id": 1, "kwargs": "no", "surplus": True},
    ParamSpec: {},
}


@pytest.mark.parametrize("model", list(BAD), ids=lambda m: m.__name__)
def test_deferred_records_fail_as_the_eager_ones_do(model: type) -> None:
    errors = []
    for cls in (model, _eager(model)):
        with pytest.raises(ValidationError) as caught:
            cls.model_validate(BAD[model])
        errors.append((str(caught.value), caught.value.errors(include_url=False)))
    assert errors[0] == errors[1]


def test_deferred_task_dumps_and_copies_as_an_eager_one() -> None:
    row = {"task_id": "t1", "prompt": "Write f.", "entry_point": "f", "tests": "assert f()",
           "source": "x", "unknown_key": [1, 2]}
    made = Task.model_validate(row)
    twin = _eager(Task).model_validate(row)
    assert made.model_dump_json() == twin.model_dump_json()
    assert made.model_dump() == twin.model_dump()
    copy = made.model_copy(update={"prompt": "Other."})
    assert copy.prompt == "Other." and copy.model_dump()["unknown_key"] == [1, 2]
