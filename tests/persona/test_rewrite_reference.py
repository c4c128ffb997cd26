"""The deterministic preservation check runs real reference solutions in the sandbox."""

from __future__ import annotations

from pathlib import Path

from prefjudge.persona.rewrite import sandbox_reference_check, split_prompt
from prefjudge.records import Task
from prefjudge.scoring.tasks import load_tasks

MBPP = "benchmarks/evalplus/MbppPlus-v0.2.0.jsonl.gz"
HUMANEVAL = "benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"


def test_reference_solutions_pass_and_a_broken_one_fails(shared_data: Path) -> None:
    mbpp = list(load_tasks(shared_data / MBPP).values())[:2]
    human = list(load_tasks(shared_data / HUMANEVAL).values())[:1]
    broken = mbpp[0].model_copy(update={
        "canonical_solution": f"def {mbpp[0].entry_point}(*args):\n    return None\n"})
    bare = Task(task_id="bare", prompt="x")
    verdicts = sandbox_reference_check([*mbpp, *human, broken, bare])
    assert verdicts[:3] == ["pass", "pass", "pass"]
    assert verdicts[3].startswith("fail: fail")
    assert verdicts[4] == "skipped: no reference solution"


def test_real_prompts_get_the_right_rewrite_mode(shared_data: Path) -> None:
    mbpp = list(load_tasks(shared_data / MBPP).values())
    human = list(load_tasks(shared_data / HUMANEVAL).values())
    full = [split_prompt(t.prompt) for t in mbpp]
    assert sum(p.mode == "full" for p in full) >= 0.95 * len(mbpp)
    with_examples = [p for p in full if p.mode == "full" and p.examples]
    assert len(with_examples) >= 0.9 * len(mbpp)
    assert all(p.examples.startswith("assert") for p in with_examples)
    assert all(split_prompt(t.prompt).mode == "prefix" for t in human)
