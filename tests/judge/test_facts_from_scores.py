"""The evidence judge takes facts from ``prefjudge score`` records where they are its own.

Real parts throughout: ``score`` runs the sample tasks' tests in the sandbox and the
instruction checks with Ruff, ``judge`` reads its records; the sandbox's one entry point
(``run_one``) and the judge's Ruff batch are counted. A side's test outcome is reused when
its record matches (same response, same code, same harness, limits and tasks); its checks
only under the judge's own profile; a changed response, a failed generation's record or no
record at all is found again -- and every verdict equals the one judged without scores.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pj_cli import SAMPLE_DIR
from pj_files import write_jsonl

import prefjudge.sandbox.functional as functional
from prefjudge.judge.facts import instructions as instruction_module
from prefjudge.judge.facts.from_scores import ScoreFacts, known_sides
from prefjudge.judge.run import JudgeFileSettings, judge_file
from prefjudge.records import Pair
from prefjudge.reporting import SilentReporter, StageError
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.run import ScoreSettings, score_file

TASKS = SAMPLE_DIR / "tasks.jsonl"
INSTRUCTIONS = [{"id": "style_3", "params": {}}, {"id": "doc_1", "params": {}}]
GOOD = {
    "sample/running_mean": (
        "def running_mean(values):\n    out, total = [], 0.0\n"
        "    for i, v in enumerate(values):\n        total += v\n"
        "        out.append(total / (i + 1))\n    return out\n"),
    "sample/is_palindrome": (
        "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
        "    return t == t[::-1]\n"),
}
BAD = {
    "sample/running_mean": "def running_mean(values):\n    return []\n",
    "sample/is_palindrome": (
        "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]"
        "  # a comment that makes this line far longer than seventy-nine characters\n"
        "    return t == t[::-1]\n"),
}


def generations(path: Path, model: str, codes: dict[str, str]) -> Path:
    return write_jsonl(path, [
        {"id": f"{task}::single::k2::s0", "task_id": task, "model": model,
         "response": f"Here it is:\n\n```python\n{code}```\n", "instructions": INSTRUCTIONS,
         "protocol": "single", "k": 2, "sample": 0}
        for task, code in codes.items()])


class Counted:
    """Sandboxed test runs (the sandbox's one entry point) and responses checked by Ruff."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tests = 0
        self.checked = 0
        real_run, real_verify = functional.run_one, instruction_module.verify_batch

        def run_one(*args: Any, **kwargs: Any) -> Any:
            self.tests += 1
            return real_run(*args, **kwargs)

        def verify_batch(items: list, **kwargs: Any) -> Any:
            self.checked += len(items)
            return real_verify(items, **kwargs)

        monkeypatch.setattr(functional, "run_one", run_one)
        monkeypatch.setattr(instruction_module, "verify_batch", verify_batch)

    def reset(self) -> None:
        self.tests = self.checked = 0


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two models' generations, scored under each profile (real sandbox, real Ruff)."""
    folder = tmp_path_factory.mktemp("scored")
    files = {"a": generations(folder / "a.jsonl", "m1", GOOD),
             "b": generations(folder / "b.jsonl", "m2", BAD)}
    for side in ("a", "b"):
        for profile in ("strict", "reference"):
            out = folder / f"scores-{side}-{profile}.jsonl"
            score_file(ScoreSettings(files[side], output=out, tasks=(str(TASKS),),
                                     profile=profile), SilentReporter())
            files[f"{side}-{profile}"] = out
    return files


def judge(files: dict[str, Path], out: Path, scores: tuple[Path, ...] = (),
          inputs: tuple[Path, Path] | None = None) -> list[dict[str, Any]]:
    a, b = inputs or (files["a"], files["b"])
    judge_file(JudgeFileSettings(
        inputs=(str(a), str(b)), output=out, method="evidence", tasks=(str(TASKS),),
        tests=(str(TASKS),), criterion="correctness,instructions", scores=scores,
    ), None, SilentReporter())
    return [json.loads(line) for line in out.read_text().splitlines()]


def outcomes(verdicts: list[dict[str, Any]]) -> list[tuple]:
    """What decides: winner, path and every fact but its source."""
    return [(v["pair_id"], v["winner"], v["decided_by"],
             [{k: f[k] for k in ("kind", "outcome", "fact", "detail")} for f in v["facts"]])
            for v in verdicts]


def sources(verdicts: list[dict[str, Any]]) -> Counter:
    return Counter((f["kind"], f.get("source", "")) for v in verdicts for f in v["facts"])


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    return Counted(monkeypatch)


@pytest.fixture
def plain(scored: dict[str, Path], tmp_path: Path, counted: Counted) -> list[dict[str, Any]]:
    """The verdicts judged without scores (every fact found here)."""
    verdicts = judge(scored, tmp_path / "plain.jsonl")
    # 2 pairs x 2 sides tested; the instructions weighed on the pair both pass (2 sides)
    assert (counted.tests, counted.checked) == (4, 2)
    assert all("source" not in f for v in verdicts for f in v["facts"])  # JSON as before
    counted.reset()
    return verdicts


def test_matching_records_give_every_fact_and_the_same_verdicts(
        scored: dict[str, Path], tmp_path: Path, counted: Counted, plain: list) -> None:
    verdicts = judge(scored, tmp_path / "v.jsonl",
                     (scored["a-strict"], scored["b-strict"]))
    assert (counted.tests, counted.checked) == (0, 0)
    assert outcomes(verdicts) == outcomes(plain)
    assert {v["winner"] for v in verdicts} == {"model_a"}  # not vacuous: facts decided
    said = "A: scores scores-a-strict.jsonl; B: scores scores-b-strict.jsonl"
    assert set(sources(verdicts)) <= {("correctness", said), ("instructions", said)}
    assert sources(verdicts)[("correctness", said)] == 2


def test_checks_of_another_profile_are_made_again_tests_are_not(
        scored: dict[str, Path], tmp_path: Path, counted: Counted, plain: list) -> None:
    both = (scored["a-reference"], scored["b-reference"])
    verdicts = judge(scored, tmp_path / "v.jsonl", both)
    assert (counted.tests, counted.checked) == (0, 2)  # checked again under strict
    assert outcomes(verdicts) == outcomes(plain)
    assert ("instructions", "") in sources(verdicts)
    facts = ScoreFacts.load(both, (str(TASKS),))
    pair = pair_of(scored, "sample/is_palindrome")
    assert facts.check_results(pair, "A", "strict") is None
    assert facts.check_results(pair, "A", "reference") is not None
    assert facts.test_result(pair, "A") is not None


def pair_of(files: dict[str, Path], task: str, response_b: str | None = None) -> Pair:
    rows = {side: next(json.loads(line) for line in files[side].read_text().splitlines()
                       if json.loads(line)["task_id"] == task) for side in ("a", "b")}
    return Pair(pair_id=f"{task}::single::k2::s0:m1:m2", task_id=task, instruction="x",
                response_a=rows["a"]["response"],
                response_b=rows["b"]["response"] if response_b is None else response_b,
                model_a="m1", model_b="m2", instructions=INSTRUCTIONS,
                protocol="single", k=2, sample=0)


def test_a_changed_response_is_found_again(
        scored: dict[str, Path], tmp_path: Path, counted: Counted) -> None:
    rows = [json.loads(line) for line in scored["b"].read_text().splitlines()]
    rows[0]["response"] = rows[0]["response"].replace("return []", "return [0.0]")
    changed = write_jsonl(tmp_path / "b.jsonl", rows)
    plain = judge(scored, tmp_path / "plain.jsonl", inputs=(scored["a"], changed))
    counted.reset()
    verdicts = judge(scored, tmp_path / "v.jsonl", (scored["a-strict"], scored["b-strict"]),
                     inputs=(scored["a"], changed))
    assert (counted.tests, counted.checked) == (1, 0)  # B of the changed pair only
    assert outcomes(verdicts) == outcomes(plain)
    first = verdicts[0]["facts"][0]
    assert first["source"] == "A: scores scores-a-strict.jsonl; B: judged here"


def test_an_error_record_or_none_is_found_again(
        scored: dict[str, Path], tmp_path: Path, counted: Counted, plain: list) -> None:
    rows = [json.loads(line) for line in scored["b-strict"].read_text().splitlines()]
    rows[0].update(status="error", error="the model call failed",
                   instruction_results=[], func=None)
    broken = write_jsonl(tmp_path / "scores-b.jsonl", rows[:1])  # the second: no record
    verdicts = judge(scored, tmp_path / "v.jsonl", (scored["a-strict"], broken))
    assert (counted.tests, counted.checked) == (2, 1)  # B of both pairs
    assert outcomes(verdicts) == outcomes(plain)
    assert {f.get("source") for v in verdicts for f in v["facts"]} == {
        "A: scores scores-a-strict.jsonl; B: judged here"}


def test_test_outcomes_need_the_judges_limits_harness_and_tasks(
        scored: dict[str, Path], tmp_path: Path) -> None:
    pair = pair_of(scored, "sample/running_mean")
    facts = ScoreFacts.load((scored["a-strict"],), (str(TASKS),))
    assert facts.test_result(pair, "A").value.status == "pass"
    assert facts.test_result(pair, "A", SandboxLimits(timeout_s=30)) is None  # other limits
    assert facts.test_result(pair, "B") is None  # model m2 is not in this file
    other_tasks = write_jsonl(tmp_path / "tasks.jsonl", [json.loads(TASKS.read_text()
                                                                   .splitlines()[0])])
    assert ScoreFacts.load((scored["a-strict"],), (str(other_tasks),)).test_result(
        pair, "A") is None  # the score's tasks are not the judge's
    merged = tmp_path / "merged.jsonl"  # no journal binding: no test outcome, checks yes
    merged.write_text(scored["a-strict"].read_text() + scored["b-strict"].read_text())
    facts = ScoreFacts.load((merged,), (str(TASKS),))
    assert facts.test_result(pair, "A") is None
    assert facts.check_results(pair, "B", "strict").source == "scores merged.jsonl"
    found = known_sides(facts, [pair], profile="strict")
    assert set(found) == {(pair.pair_id, "A", "checks"), (pair.pair_id, "B", "checks")}


def test_scores_apply_to_the_methods_that_find_facts(
        scored: dict[str, Path], tmp_path: Path) -> None:
    from prefjudge.judge.settings import JudgeOptionError

    with pytest.raises(JudgeOptionError, match="--scores"):
        judge_file(JudgeFileSettings(
            inputs=(str(scored["a"]), str(scored["b"])), output=tmp_path / "v.jsonl",
            method="monolithic", tasks=(str(TASKS),), scores=(scored["a-strict"],),
        ), None, SilentReporter())
    with pytest.raises(StageError, match=r"nothing\.jsonl"):
        judge(scored, tmp_path / "w.jsonl", (tmp_path / "nothing.jsonl",))


def test_a_ray_shard_carries_the_results_looked_up_on_the_driver(
        scored: dict[str, Path], counted: Counted) -> None:
    from prefjudge.records import Fact
    from prefjudge.scale.judge_shard import JudgeShard, shard_facts
    from prefjudge.scoring.task_sources import load_task_sources

    tasks = load_task_sources([str(TASKS)]).tasks
    pairs = [pair_of(scored, task) for task in GOOD]
    facts = ScoreFacts.load((scored["a-strict"], scored["b-strict"]), (str(TASKS),))
    known = known_sides(facts, pairs, profile="strict")
    assert len(known) == 2 * 2 * 2  # tests and checks of both sides of both pairs
    shard = JudgeShard(index=0, pairs=pairs, tasks={p.task_id: tasks[p.task_id] for p in pairs},
                       criterion="correctness,instructions", known=known)
    found = [[Fact.model_validate_json(line) for line in lines] for lines in shard_facts(shard)]
    assert (counted.tests, counted.checked) == (0, 0)
    assert [[f.outcome for f in pair] for pair in found] == [["A"], ["tie", "A"]]
    assert all(f.source.startswith("A: scores scores-a-strict.jsonl") for p in found for f in p)
