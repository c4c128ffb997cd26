"""Task and sample formats are registries: a format registered from a test alone is read.

The toy formats below live in this file only. Registering them is all it takes for
``prefjudge score --tasks FILE`` (and the library reader ``score`` and ``persona compare``
go through, :func:`load_task_sources`) to read a file in the toy task format, for
``prefjudge score`` to read generations in the toy sample format, and for the toy hub
dataset to be known by name. The names every other place lists (``HUB_DATASETS``, the
hub list of ``sources``, ``FORMATS``, the converters, the known names of messages) are
the registries' names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pj_cli import flat, invoke, rows
from pj_files import write_jsonl

from prefjudge.io import FieldProblem, InputError, text_field
from prefjudge.records import StdioCase, Task
from prefjudge.scoring import formats, sources, tasks
from prefjudge.scoring.sample_formats import (
    SampleFormat,
    SampleParts,
    expected_samples,
    register_sample_format,
    sample_format_names,
    unregister_sample_format,
)
from prefjudge.scoring.source_types import HubDataset
from prefjudge.scoring.task_formats import (
    TaskFormat,
    register_task_format,
    task_format_names,
    task_formats,
    unregister_task_format,
)
from prefjudge.scoring.task_sources import load_task_sources

QUIZ = [
    {"quiz": "add", "ask": "Read two integers and print their sum.",
     "checks": [["1 2\n", "3\n"], ["5 7\n", "12\n"]]},
    {"quiz": "echo", "ask": "Print the line you read.", "checks": [["hi\n", "hi\n"]]},
]
ANSWERS = [
    {"quiz": "add", "program": "a, b = map(int, input().split())\nprint(a + b)\n"},
    {"quiz": "echo", "program": "print('bye')\n"},
]


def quiz_task(record: dict[str, Any]) -> Task:
    """The toy task format: ``quiz``, ``ask`` and stdin/stdout ``checks``."""
    checks = record.get("checks")
    if not isinstance(checks, list) or not checks:
        raise FieldProblem("checks", "expected a non-empty list of [input, output] pairs")
    return Task(
        task_id=f"Quiz/{text_field(record, 'quiz')}",
        prompt=text_field(record, "ask"),
        test_format="stdio",
        stdio_cases=[StdioCase(input=given, output=wanted) for given, wanted in checks],
        source="quiz",
    )


def quiz_answer(data: Mapping[str, Any], task_id: str, _tasks: object) -> SampleParts:
    """The toy sample format: a ``program`` answering one quiz."""
    return SampleParts(text_field(data, "program"), is_code=True)


QUIZ_HUB = HubDataset("toy-owner/quiz-bench", "tasks", ("quizbench",), split="test",
                      note="a toy benchmark")


@pytest.fixture
def quiz_formats() -> Iterator[None]:
    """The toy task and sample formats, registered for one test."""
    register_task_format(TaskFormat(
        name="quiz", title="Quiz", detect=lambda row: {"quiz", "ask"} <= row.keys(),
        convert=quiz_task, hub=(QUIZ_HUB,), test_formats=("stdio",),
    ))
    register_sample_format(SampleFormat(
        name="quiz-answers", description="toy answers ('quiz' with 'program')",
        expected="quiz answers ('program')",
        detect=lambda row: "program" if "program" in row else None, convert=quiz_answer,
        marks=("program",), missing=("program", "'program'"),
    ))
    try:
        yield
    finally:
        unregister_task_format("quiz")
        unregister_sample_format("quiz-answers")


def test_score_reads_a_task_format_registered_from_the_test(
    quiz_formats: None, tmp_path: Path
) -> None:
    quiz = write_jsonl(tmp_path / "quiz.jsonl", QUIZ)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({**a, "task_id": f"Quiz/{a['quiz']}"}) + "\n"
                               for a in ANSWERS))
    out = tmp_path / "scores.jsonl"
    invoke("score", answers, "--tasks", quiz, "--model", "toy", "-o", out,
           "--bootstrap", "0", ok=True)
    scored = {r["task_id"]: r for r in rows(out)}
    assert scored["Quiz/add"]["func"]["status"] == "pass"  # the sandbox ran the toy cases
    assert scored["Quiz/echo"]["func"]["status"] == "fail"
    assert {r["source_format"] for r in scored.values()} == {"quiz-answers"}

    loaded = load_task_sources([str(quiz)])  # what score and persona compare read through
    assert list(loaded.tasks) == ["Quiz/add", "Quiz/echo"]
    assert loaded.tasks["Quiz/add"].stdio_cases[1].output == "12\n"
    assert loaded.paths == [quiz]


def test_a_bad_row_of_a_registered_format_is_located_as_any_other(
    quiz_formats: None, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "quiz.jsonl", [QUIZ[0], {"quiz": "x", "ask": "?"}])
    with pytest.raises(InputError) as excinfo:
        tasks.load_tasks(path)
    [issue] = excinfo.value.issues
    assert (issue.line, issue.field) == (2, "checks")
    assert issue.message.endswith("(quiz format)")


def read_quiz_text(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A toy file format that is not JSONL: ``quiz|ask|input|output`` lines."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        quiz, ask, given, wanted = line.split("|")
        yield number, {"quiz": quiz, "ask": ask, "checks": [[given + "\n", wanted + "\n"]]}


def test_a_format_may_claim_whole_files_and_read_them_itself(tmp_path: Path) -> None:
    path = tmp_path / "bench.quiz"
    path.write_text("add|Print the sum.|1 2|3\necho|Echo.|hi|hi\n")
    with pytest.raises(InputError):  # read as JSONL while no format claims it
        tasks.load_tasks(path)
    register_task_format(TaskFormat(
        "quiz-text", "Quiz", lambda row: False, quiz_task,
        detect_file=lambda file: file.suffix == ".quiz", read_file=read_quiz_text,
    ))
    try:
        loaded = tasks.load_tasks(path)
    finally:
        unregister_task_format("quiz-text")
    assert list(loaded) == ["Quiz/add", "Quiz/echo"]
    assert loaded["Quiz/add"].stdio_cases[0].input == "1 2\n"


def test_a_registered_format_is_in_every_derived_list_and_leaves_it_again(
    tmp_path: Path,
) -> None:
    assert "quiz" not in task_format_names() and QUIZ_HUB.repo not in tasks.HUB_DATASETS
    with pytest.raises(sources.UnknownSourceError) as excinfo:
        sources.resolve_source("quizbench", "tasks")
    assert "toy-owner/quiz-bench" not in str(excinfo.value)
    unknown = write_jsonl(tmp_path / "quiz.jsonl", QUIZ)
    with pytest.raises(InputError, match="expected BigCodeBench, HumanEval, HumanEval\\+, "
                                         "MBPP\\+, LiveCodeBench or prefjudge task records"):
        tasks.load_tasks(unknown)

    register_task_format(TaskFormat("quiz", "Quiz", lambda row: {"quiz", "ask"} <= row.keys(),
                                    quiz_task, hub=(QUIZ_HUB,)))
    try:
        assert tasks.detect_format(QUIZ[0]) == "quiz" and "quiz" in tasks.CONVERTERS
        assert tasks.HUB_DATASETS[QUIZ_HUB.repo] == "a toy benchmark"
        assert sources.resolve_source("QuizBench", "tasks") == QUIZ_HUB  # no network
        assert QUIZ_HUB in sources.HUB_SOURCES
        with pytest.raises(sources.UnknownSourceError) as excinfo:
            sources.resolve_source("quizbenh", "tasks")
        assert "did you mean 'quizbench'?" in flat(str(excinfo.value))
        assert "quizbench (toy-owner/quiz-bench)" in str(excinfo.value)
        with pytest.raises(InputError, match="LiveCodeBench, prefjudge or Quiz task records"):
            tasks.load_tasks(write_jsonl(tmp_path / "other.jsonl", [{"foo": 1}]))
        with pytest.raises(ValueError, match="registered already"):
            register_task_format(task_formats()[-1])
    finally:
        unregister_task_format("quiz")
    assert "quiz" not in tasks.CONVERTERS and QUIZ_HUB not in sources.HUB_SOURCES


def test_the_registries_names_are_the_names_listed_everywhere() -> None:
    names = task_format_names()
    assert names == ("bigcodebench", "humaneval", "humanevalplus", "mbppplus", "mbppplus_hub",
                     "livecodebench", "prefjudge")
    assert tuple(tasks.CONVERTERS) == names
    hub = [entry.repo for fmt in task_formats() for entry in fmt.hub]
    assert list(tasks.HUB_DATASETS) == hub
    assert [e.repo for e in sources.HUB_SOURCES if e.kind == "tasks"] == hub
    assert [e.repo for e in sources.HUB_SOURCES if e.kind == "pairs"] == [
        e.repo for e in sources.PAIR_HUB_SOURCES]
    for entry in sources.HUB_SOURCES:  # every alias and id resolves to its entry
        for name in (entry.repo, *entry.aliases):
            assert sources.resolve_source(name, entry.kind) == entry
    with pytest.raises(sources.UnknownSourceError) as excinfo:
        sources.resolve_source("no-such-benchmark", "tasks")
    assert all(repo in str(excinfo.value) for repo in hub)

    assert tuple(formats.FORMATS) == sample_format_names() == (
        "prefjudge", "evalplus", "bigcodebench", "swe-if", "swe-if-edit")
    assert expected_samples() == (
        "expected prefjudge generations ('response'), EvalPlus or BigCodeBench samples "
        "('task_id' with 'solution' or 'completion') or SWE-IF output ('full_response', "
        "'if_info')")


def test_the_registries_import_no_numeric_library() -> None:
    code = ("import sys, prefjudge.scoring.task_formats, prefjudge.scoring.sample_formats; "
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'choix', 'datasets') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
