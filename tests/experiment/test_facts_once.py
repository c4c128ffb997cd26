"""Each fact once per generation: ``run`` with an evidence judge tests each generation once.

A three-model experiment (4 sample tasks x k in {0, 1}: 8 generations a model, 24 in all),
answered by the fake OpenAI server with real code -- right for some tasks, wrong for
others -- and judged by ``evidence`` on ``correctness,instructions``. Every sandboxed test
run goes through the sandbox's one entry point (``prefjudge.sandbox.functional.run_one``),
counted here: exactly one per generation, all in the score stages, none in the three judge
stages, which take each side's outcome from its score record. Judging the same pairs again
without the score files (what every judge stage did before: 2 runs a pair) gives the same
verdicts, and the facts name where they came from.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pj_cli import SAMPLE_DIR, invoke
from pj_experiment import FAKE_EXPERIMENT

import prefjudge.sandbox.functional as functional
from prefjudge.judge.facts import correctness, kinds
from prefjudge.judge.run import JudgeFileSettings, judge_file
from prefjudge.reporting import SilentReporter

RIGHT = {
    "running_mean": "def running_mean(values):\n    out, total = [], 0.0\n"
                    "    for i, v in enumerate(values):\n        total += v\n"
                    "        out.append(total / (i + 1))\n    return out\n",
    "lowercase word": "import re\n\n\ndef task_func(text):\n    counts = {}\n"
                      "    for word in re.findall('[a-z]+', text.lower()):\n"
                      "        counts[word] = counts.get(word, 0) + 1\n    return counts\n",
    "is_palindrome": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
                     "    return t == t[::-1]\n",
    "flattens": "def task_func(nested):\n    out = []\n    for item in nested:\n"
                "        out += task_func(item) if isinstance(item, list) else [item]\n"
                "    return out\n",
}
WRONG = "def {name}(*args):\n    return None\n"
# which tasks each model gets right (by a word of the task's prompt)
MODELS = {"fake-a": set(RIGHT), "fake-b": {"running_mean", "lowercase word"},
          "fake-c": {"is_palindrome", "flattens", "running_mean"}}

EXPERIMENT = FAKE_EXPERIMENT.replace('name = "fake"', 'name = "once"').replace(
    '[judge]\nmethod = "monolithic"\nbackend = "openai"\nmodel = "fake-judge"\n'
    'base_url = "{url}"\n',
    '[[models]]\nname = "model-c"\nbackend = "openai"\nmodel = "fake-c"\n'
    'base_url = "{url}"\n\n[judge]\nmethod = "evidence"\n'
    'criterion = "correctness,instructions"\n')


def reply(body: dict[str, Any]) -> str:
    """Each model's code for the task its prompt names: right or wrong, as MODELS says."""
    text = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    key = next(word for word in RIGHT if word in text)
    name = "task_func" if key in ("lowercase word", "flattens") else key
    code = RIGHT[key] if key in MODELS[body["model"]] else WRONG.format(name=name)
    if body["model"] == "fake-c":  # a line Ruff's line-length check flags
        code = f"# {'this comment makes the first line far too long for the check ' * 2}\n{code}"
    return f"Here is the code.\n\n```python\n{code}```\n"


class Runs:
    """Sandboxed test runs (all, and the judge's) and efficiency measurements, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tests = self.judge_tests = self.measured = 0
        real_run_one, real_functional = functional.run_one, correctness.run_functional
        real_efficiency = kinds.efficiency_facts

        def run_one(*args: Any, **kwargs: Any) -> Any:
            self.tests += 1
            return real_run_one(*args, **kwargs)

        def run_functional(jobs: Any, **kwargs: Any) -> Any:
            self.judge_tests += len(jobs)
            return real_functional(jobs, **kwargs)

        def efficiency_facts(pairs: Any, *args: Any, **kwargs: Any) -> Any:
            self.measured += len(pairs)
            return real_efficiency(pairs, *args, **kwargs)

        monkeypatch.setattr(functional, "run_one", run_one)
        monkeypatch.setattr(correctness, "run_functional", run_functional)
        monkeypatch.setattr(kinds, "efficiency_facts", efficiency_facts)


def outcomes(path: Path) -> list[tuple]:
    """Every verdict's pair, winner, path and facts (their source aside)."""
    verdicts = [json.loads(line) for line in path.read_text().splitlines()]
    return [(v["pair_id"], v["winner"], v["decided_by"],
             [{k: f[k] for k in ("kind", "outcome", "fact", "detail")} for f in v["facts"]])
            for v in verdicts]


def timed(call: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


@pytest.mark.slow
def test_each_generation_is_tested_once_in_a_three_model_run(
        fake_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_server.reply = reply
    (tmp_path / "e").mkdir()
    path = tmp_path / "e" / "once.toml"
    path.write_text(EXPERIMENT.format(results=tmp_path / "e" / "results",
                                      tasks=SAMPLE_DIR / "tasks.jsonl", url=fake_server.url))
    runs = Runs(monkeypatch)
    invoke("run", path, ok=True)
    root = tmp_path / "e" / "results" / "once"
    generations = {p.stem: p for p in sorted((root / "generations").glob("*.jsonl"))}
    made = sum(len(p.read_text().splitlines()) for p in generations.values())
    assert len(generations) == 3 and made == 3 * 4 * 2
    # one sandboxed test run per generation, all in the score stages; none in the judge's
    assert (runs.tests, runs.judge_tests) == (made, 0), vars(runs)
    assert runs.measured == 0  # correctness,instructions: no cost is measured
    in_run = dict(vars(runs))

    judged = sorted((root / "judgments").glob("*__*.jsonl"))
    assert len(judged) == 3
    tasks = str(root / "augmented.jsonl")
    plain = {"runs": 0, "wall": 0.0, "cpu": 0.0}
    scored = {"runs": 0, "wall": 0.0, "cpu": 0.0}
    winners = set()
    for out in judged:
        a, b = out.stem.split("__")
        settings = JudgeFileSettings(
            inputs=(str(generations[a]), str(generations[b])), method="evidence",
            tasks=(tasks,), tests=(tasks,), criterion="correctness,instructions",
            output=tmp_path / f"plain-{out.name}")
        again = replace(settings, output=tmp_path / f"again-{out.name}",
                        scores=(root / "scores" / f"{a}.jsonl", root / "scores" / f"{b}.jsonl"))
        for done, judging in ((plain, settings), (scored, again)):
            before = runs.tests
            _, wall, cpu = timed(lambda s=judging: judge_file(s, None, SilentReporter()))
            done["runs"] += runs.tests - before
            done["wall"] += wall
            done["cpu"] += cpu
        # the verdicts judged without scores, and again with them, are the run's
        assert outcomes(settings.output) == outcomes(out) == outcomes(again.output)
        winners |= {verdict[1] for verdict in outcomes(out)}

        facts = [f for v in map(json.loads, out.read_text().splitlines()) for f in v["facts"]]
        said = f"A: scores {a}.jsonl; B: scores {b}.jsonl"
        assert {f["source"] for f in facts if f["kind"] == "correctness"} == {said}
        # score checks instructions under the reference profile, the judge under strict:
        # those facts are the judge's own, found here (the source is not written)
        assert any(f["kind"] == "instructions" for f in facts)
        assert all("source" not in f for f in facts if f["kind"] == "instructions")
    assert {"model_a", "model_b"} <= winners  # not vacuous: the facts separate models
    assert plain["runs"] == 3 * 8 * 2 and scored["runs"] == 0  # before: 2 runs a pair
    print(f"sandbox test runs in `run`: {in_run}; generations: {made}; "
          f"judging the 3 files without scores: {plain}; with them: {scored}",
          file=sys.stderr)
