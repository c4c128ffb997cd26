"""``judge`` and ``pair`` read generations and tasks as ``score`` does (issue 31, item 4).

Two generation files are read by the reader ``score`` uses (EvalPlus samples included),
``--tasks`` is repeatable and merged by task id, ``--skip-invalid`` skips and lists, and
``pair --tests`` finds the task whose prompt is the instruction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pj_cli import SAMPLE_DIR, flat, invoke, rows
from pj_files import write_jsonl

from prefjudge.scoring.tasks import load_tasks

EVALPLUS = ("benchmarks", "evalplus")
HUMANEVAL_PLUS = "HumanEvalPlus-v0.1.10.jsonl.gz"
MBPP_PLUS = "MbppPlus-v0.2.0.jsonl.gz"
EVALPERF = ("generations", "evalperf")
MODELS = {
    "qwen-14b": "Qwen--Qwen2.5-14B-Instruct_vllm_temp_1.0_evalperf_results.brief.json",
    "qwen-32b": "Qwen--Qwen2.5-32B-Instruct_vllm_temp_1.0_evalperf_results.brief.json",
}
TASKS = ("HumanEval/0", "HumanEval/4", "Mbpp/3", "Mbpp/4")


def evalplus_samples(shared: Path, folder: Path) -> dict[str, Path]:
    """EvalPlus sample files (``{"task_id", "solution"}``) of real model code, one per model."""
    files = {}
    for name, release in MODELS.items():
        solutions = json.loads(shared.joinpath(*EVALPERF, release).read_text())["eval"]
        files[name] = write_jsonl(
            folder / f"{name}.jsonl",
            [{"task_id": t, "solution": solutions[t]["profiled"][0]["solution"]} for t in TASKS],
        )
    return files


def judge_on_both_benchmarks(a: Path, b: Path, benchmarks: Path, out: Path) -> list[dict]:
    """``judge A B --tasks HumanEval+ --tasks MBPP+`` with the evidence judge; its verdicts."""
    result = invoke("judge", a, b, "--tasks", benchmarks / HUMANEVAL_PLUS,
                    "--tasks", benchmarks / MBPP_PLUS, "--method", "evidence",
                    "--criterion", "security", "-o", out)
    assert result.exit_code == 0, result.output
    return rows(out)


def test_evalplus_sample_files_are_judged_with_repeated_tasks(
    shared_data: Path, tmp_path: Path
) -> None:
    samples = evalplus_samples(shared_data, tmp_path)
    benchmarks = shared_data.joinpath(*EVALPLUS)
    out = tmp_path / "verdicts.jsonl"
    verdicts = judge_on_both_benchmarks(samples["qwen-14b"], samples["qwen-32b"], benchmarks, out)
    assert [v["task_id"] for v in verdicts] == list(TASKS)
    assert {(v["model_a"], v["model_b"]) for v in verdicts} == {("qwen-14b", "qwen-32b")}
    assert all(v["status"] == "ok" for v in verdicts)


def prefjudge_generations(path: Path, model: str, tasks: dict[str, Any]) -> Path:
    return write_jsonl(
        path,
        [
            {
                "id": f"{t}::single::k0::s0",
                "task_id": t,
                "model": model,
                "response": f"# {model}",
                "protocol": "single",
                "k": 0,
                "sample": 0,
            }
            for t in tasks
        ],
    )


def test_every_repeated_tasks_option_gives_instructions(shared_data: Path, tmp_path: Path) -> None:
    """``--tasks A --tasks B``: both are read (the last one alone left A's tasks without one)."""
    benchmarks = shared_data.joinpath(*EVALPLUS)
    loaded = load_tasks(benchmarks / HUMANEVAL_PLUS) | load_tasks(benchmarks / MBPP_PLUS)
    wanted = {t: loaded[t].prompt for t in TASKS}
    gen_a = prefjudge_generations(tmp_path / "a.jsonl", "model-a", wanted)
    gen_b = prefjudge_generations(tmp_path / "b.jsonl", "model-b", wanted)
    out = tmp_path / "verdicts.jsonl"
    assert [v["task_id"] for v in judge_on_both_benchmarks(gen_a, gen_b, benchmarks, out)] == \
        list(TASKS)

    from prefjudge.judge.pairs import read_pair_inputs
    from prefjudge.reporting import SilentReporter

    read = read_pair_inputs(
        (str(gen_a), str(gen_b)),
        (str(benchmarks / HUMANEVAL_PLUS), str(benchmarks / MBPP_PLUS)),
        "auto",
        False,
        SilentReporter(),
    )
    assert {p.task_id: p.instruction for p in read.pairs} == wanted
    assert read.files["tasks"] == [benchmarks / HUMANEVAL_PLUS, benchmarks / MBPP_PLUS]


def test_skip_invalid_skips_bad_generation_lines_and_lists_them(tmp_path: Path) -> None:
    tasks = SAMPLE_DIR / "tasks.jsonl"
    ids = [task["task_id"] for task in rows(tasks)[:3]]
    gen_b = prefjudge_generations(tmp_path / "b.jsonl", "model-b", dict.fromkeys(ids))
    good = rows(prefjudge_generations(tmp_path / "a.jsonl", "model-a", dict.fromkeys(ids)))
    bad: list[Any] = [*good[:2], {"task_id": ids[0], "model": "model-a"}, good[2]]
    gen_a = write_jsonl(tmp_path / "a.jsonl", bad)
    out = tmp_path / "verdicts.jsonl"
    args = (
        "judge",
        gen_a,
        gen_b,
        "--tasks",
        tasks,
        "--method",
        "evidence",
        "--criterion",
        "security",
        "-o",
        out,
    )
    stopped = invoke(*args)
    assert stopped.exit_code == 1
    assert f"{gen_a}:3: field 'response'" in flat(stopped.output)
    assert "use --skip-invalid" in flat(stopped.output)
    assert not out.exists()

    skipped = invoke(*args, "--skip-invalid")
    assert skipped.exit_code == 0, skipped.output
    assert f"skipped: {gen_a}:3: field 'response'" in flat(skipped.stderr)
    assert [v["task_id"] for v in rows(out)] == ids


RUNNING_MEAN = (
    "def running_mean(values):\n    out, total = [], 0.0\n"
    "    for i, v in enumerate(values, 1):\n        total += v\n        out.append(total / i)\n"
    "    return out\n"
)


def test_pair_finds_the_task_whose_prompt_is_the_instruction(tmp_path: Path) -> None:
    tasks = SAMPLE_DIR / "tasks.jsonl"
    prompt = rows(tasks)[0]["prompt"]
    good = tmp_path / "good.py"
    good.write_text(RUNNING_MEAN)
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def running_mean(values):\n    return values\n")
    result = invoke(
        "pair",
        good,
        wrong,
        "--instruction",
        f"  {prompt}\n",
        "--method",
        "evidence",
        "--criterion",
        "correctness",
        "--tests",
        tasks,
        "-o",
        "-",
    )
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["task_id"] == "sample/running_mean"
    assert verdict["preferred"] == "A" and verdict["decided_by"] == "evidence:correctness"
    assert "task: sample/running_mean" in flat(result.stderr)


def test_pair_says_to_add_task_id_when_no_task_has_the_instruction(tmp_path: Path) -> None:
    code = tmp_path / "a.py"
    code.write_text(RUNNING_MEAN)
    result = invoke(
        "pair",
        code,
        code,
        "--instruction",
        "Compute running means.",
        "--method",
        "evidence",
        "--criterion",
        "correctness",
        "--tests",
        SAMPLE_DIR / "tasks.jsonl",
    )
    assert result.exit_code == 2
    message = flat(result.output)
    assert "--task-id" in message and "none of the" in message
    assert "sample/running_mean" in message  # an example of the ids to give


@pytest.mark.parametrize("task_id", ["sample/nope"])
def test_pair_refuses_a_task_id_not_among_the_tests(tmp_path: Path, task_id: str) -> None:
    code = tmp_path / "a.py"
    code.write_text(RUNNING_MEAN)
    result = invoke(
        "pair",
        code,
        code,
        "--instruction",
        "x y",
        "--method",
        "evidence",
        "--tests",
        SAMPLE_DIR / "tasks.jsonl",
        "--task-id",
        task_id,
    )
    assert result.exit_code == 2
    assert f"task {task_id!r} is not among" in flat(result.output)


def test_a_task_in_two_tasks_sources_is_a_usage_error(tmp_path: Path) -> None:
    tasks = SAMPLE_DIR / "tasks.jsonl"
    ids = dict.fromkeys(task["task_id"] for task in rows(tasks)[:2])
    gen_a = prefjudge_generations(tmp_path / "a.jsonl", "model-a", ids)
    gen_b = prefjudge_generations(tmp_path / "b.jsonl", "model-b", ids)
    result = invoke(
        "judge",
        gen_a,
        gen_b,
        "--tasks",
        tasks,
        "--tasks",
        tasks,
        "--method",
        "evidence",
        "--criterion",
        "security",
        "-o",
        tmp_path / "v.jsonl",
    )
    assert result.exit_code == 2
    assert "appears in more than one --tasks file" in flat(result.output)


def test_two_sample_files_named_alike_are_warned_of(tmp_path: Path) -> None:
    """EvalPlus samples name no model: the file name does, so two ``samples.jsonl`` meet."""
    tasks = SAMPLE_DIR / "tasks.jsonl"
    ids = [task["task_id"] for task in rows(tasks)[:2]]
    files = []
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        files.append(
            write_jsonl(
                tmp_path / side / "samples.jsonl",
                [{"task_id": t, "solution": f"def f():\n    return '{side}'\n"} for t in ids],
            )
        )
    result = invoke(
        "judge",
        *files,
        "--tasks",
        tasks,
        "--method",
        "evidence",
        "--criterion",
        "security",
        "-o",
        tmp_path / "v.jsonl",
    )
    assert result.exit_code == 0, result.output
    assert "both hold generations of model 'samples'" in flat(result.stderr)
    assert "rename one file" in flat(result.stderr)
