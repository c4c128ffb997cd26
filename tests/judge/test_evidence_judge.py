"""The evidence and hybrid judges: correctness and instruction facts on real pairs, the
weighing of kinds in order, what reaches rank, and the hybrid path with a scripted judge.

Security and efficiency facts have their own files (test_facts_security.py,
test_facts_efficiency.py); here they appear only through the judge that weighs them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import run_cli
from pj_scripted_backend import ScriptedBackend, user_text

from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.judge.facts.judge import CriterionError, parse_criterion, weigh
from prefjudge.judge.pairs import open_preference_source
from prefjudge.records import Fact, InstructionRef, Pair, Verdict
from prefjudge.scoring.sources import open_task_source

EVALPLUS = ("HumanEvalPlus-v0.1.10.jsonl.gz", "MbppPlus-v0.2.0.jsonl.gz")


@pytest.fixture(scope="module")
def evalplus_tasks(shared_data: Path) -> dict:
    tasks = {}
    for name in EVALPLUS:
        loaded, _ = open_task_source(shared_data / "benchmarks" / "evalplus" / name)
        tasks.update(loaded)
    return tasks


@pytest.fixture(scope="module")
def correctness_pairs(shared_data: Path) -> list[Pair]:
    pairs, _, _ = open_preference_source(
        shared_data / "preferences" / "codeprefbench" / "correctness-alignment.jsonl.gz")
    return pairs


def _judge(pairs: list[Pair], **settings: object) -> list[Verdict]:
    return list(judge_pairs(pairs, None, JudgeSettings(method="evidence", **settings)))  # type: ignore[arg-type]


# -- correctness on real CodePrefBench pairs ------------------------------------------------


def test_a_pair_is_decided_by_the_response_that_passes_its_tests(
    correctness_pairs: list[Pair], evalplus_tasks: dict
) -> None:
    pair = correctness_pairs[0]  # HumanEval/1: the label is the response that passes
    assert pair.criterion == "correctness"
    [verdict] = _judge([pair], tests=evalplus_tasks)
    assert verdict.status == "ok" and verdict.method == "evidence"
    assert verdict.preferred == pair.label
    assert verdict.decided_by == "evidence:correctness"
    fact = verdict.facts[0]
    statuses = {fact.detail["status_a"], fact.detail["status_b"]}
    assert "pass" in statuses and statuses != {"pass"}
    assert f"{pair.label} passes its tests" in fact.fact
    assert verdict.cost.model_calls == 0 and verdict.battle() is not None


def test_two_responses_that_both_pass_are_a_tie_on_correctness(
    correctness_pairs: list[Pair], evalplus_tasks: dict
) -> None:
    pair = correctness_pairs[0]
    good = pair.response_a if pair.label == "A" else pair.response_b
    same = pair.model_copy(update={"pair_id": "same", "response_a": good, "response_b": good})
    [verdict] = _judge([same], tests=evalplus_tasks, criterion="correctness")
    assert verdict.preferred == "tie" and verdict.winner == "tie"
    assert verdict.facts[0].outcome == "tie" and verdict.facts[0].fact == "both pass their tests"
    assert verdict.decided_by == "evidence:correctness"


def test_tests_that_cannot_be_judged_give_an_error_not_a_tie(
    correctness_pairs: list[Pair], evalplus_tasks: dict
) -> None:
    pair = correctness_pairs[0]
    task = evalplus_tasks[pair.task_id]
    broken = task.model_copy(update={"canonical_solution": "raise SystemExit(3)\n"})
    [verdict] = _judge([pair], tests={pair.task_id: broken})
    assert verdict.status == "error" and verdict.preferred is None and verdict.winner is None
    assert verdict.facts[0].outcome == "error"
    assert "correctness evidence" in (verdict.error or "")
    assert verdict.battle() is None


def test_a_task_without_tests_is_insufficient_and_no_battle(correctness_pairs: list[Pair]) -> None:
    [verdict] = _judge(correctness_pairs[:1], tests={}, criterion="correctness")
    assert verdict.facts[0].outcome == "insufficient"
    assert "--tests" in verdict.facts[0].fact
    assert verdict.preferred == "tie" and verdict.decided_by == "evidence:none"
    assert verdict.battle() is None  # nothing was compared: not a tie battle


# -- instructions ---------------------------------------------------------------------------

FOLLOWS = "def add(a, b):\n    return a + b\n"
LONG_COMMENT = "a comment that makes this line too long " * 3
MISSES = f"def add(a, b):\n    return a + b  # {LONG_COMMENT}\n"


def _instruction_pair(a: str, b: str) -> Pair:
    return Pair(pair_id="ins", task_id="t",
                instruction="Write add; lines of at most 79 characters.",
                response_a=a, response_b=b,
                instructions=[InstructionRef(id="style_3", params={"line_length": 79})])


def test_the_response_that_follows_more_instructions_wins() -> None:
    [verdict] = _judge([_instruction_pair(MISSES, FOLLOWS)], criterion="instructions")
    assert verdict.preferred == "B", verdict.facts
    assert verdict.decided_by == "evidence:instructions"
    assert "A misses style_3" in verdict.facts[0].fact
    [tied] = _judge([_instruction_pair(FOLLOWS, FOLLOWS)], criterion="instructions")
    assert tied.preferred == "tie" and tied.facts[0].outcome == "tie"


# -- weighing kinds in order ----------------------------------------------------------------


def _fact(kind: str, outcome: str) -> Fact:
    return Fact(kind=kind, outcome=outcome, fact=f"{kind} {outcome}")  # type: ignore[arg-type]


def test_the_first_decisive_kind_decides_and_an_error_stops_the_weighing() -> None:
    assert weigh([_fact("correctness", "tie"), _fact("efficiency", "B")]) == (
        "B", "evidence:efficiency", None)
    assert weigh([_fact("correctness", "insufficient"), _fact("security", "A")])[:2] == (
        "A", "evidence:security")
    preferred, by, error = weigh([_fact("correctness", "error"), _fact("security", "A")])
    assert preferred is None and by == "evidence:correctness" and "correctness" in error
    assert weigh([_fact("correctness", "insufficient")]) == ("tie", "evidence:none", None)
    assert weigh([_fact("correctness", "tie"), _fact("security", "insufficient")])[:2] == (
        "tie", "evidence:correctness")


def test_criteria_parse_in_order_and_unknown_kinds_are_refused() -> None:
    assert parse_criterion("correctness, efficiency") == ("correctness", "efficiency")
    with pytest.raises(CriterionError, match="style"):
        parse_criterion("correctness,style")


# -- hybrid: evidence first, the scripted judge for the rest --------------------------------


def test_hybrid_sends_only_undecided_pairs_to_the_judge_with_the_facts(
    correctness_pairs: list[Pair], evalplus_tasks: dict
) -> None:
    decided = correctness_pairs[0]
    good = decided.response_a if decided.label == "A" else decided.response_b
    undecided = decided.model_copy(update={"pair_id": "both-pass", "response_a": good,
                                           "response_b": good + "\n# same\n"})

    def reply(request):  # the monolithic judge prefers B in both orders
        text = user_text(request)
        assert "correctness: both pass their tests" in text  # the facts reach the prompt
        swapped = text.index("# same") < text.index("## Answer B")
        return {"reason": "scripted", "verdict": "A" if swapped else "B"}

    backend = ScriptedBackend(reply)
    settings = JudgeSettings(method="hybrid", fallback="monolithic", tests=evalplus_tasks,
                             criterion="correctness")
    verdicts = list(judge_pairs([decided, undecided], backend, settings))  # type: ignore[arg-type]
    assert len(backend.requests) == 2  # only the undecided pair, in both orders
    first, second = verdicts
    assert first.method == "hybrid" and first.decided_by == "evidence:correctness"
    assert first.cost.model_calls == 0 and first.preferred == decided.label
    assert second.method == "hybrid" and second.decided_by == "llm"
    assert second.preferred == "B" and second.cost.requests == 2
    assert second.facts[0].outcome == "tie"


# -- the command line -----------------------------------------------------------------------


def test_judge_eval_reports_evidence_per_split_beside_the_human_figures(
    tmp_path: Path, shared_data: Path
) -> None:
    cpb = shared_data / "preferences" / "codeprefbench"
    tests = [arg for name in EVALPLUS
             for arg in ("--tests", str(shared_data / "benchmarks" / "evalplus" / name))]
    out = tmp_path / "eval"
    args = ["judge-eval", str(cpb / "correctness-alignment.jsonl.gz"),
            str(cpb / "security-alignment.jsonl.gz"), "--method", "evidence", "--limit", "8",
            *tests, "-o", str(out), "--bootstrap", "50"]
    result = run_cli(*args)
    assert "accuracy per split" in result.stdout and "84.9 %" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["human_reference"]["human_accuracy"]["security"] == pytest.approx(0.597)
    split = summary["by_split"]["evidence"]["correctness"]
    assert split["n"] == 8 and split["accuracy_all_half"] >= 0.9
    assert split["decided_by"]["counts"].get("evidence:correctness", 0) >= 7
    assert summary["by_split"]["evidence"]["security"]["n"] == 8
    assert summary["methods"]["evidence"]["cost"]["total"]["model_calls"] == 0
    verdicts = [json.loads(line) for line in (out / "verdicts-evidence.jsonl").open()]
    assert {v["pair_id"].split(":", 1)[0] for v in verdicts} == {"correctness", "security"}
    assert "judge bias" in result.stdout
    rerun = run_cli(*args)
    assert "16 verdicts already in" in rerun.stderr


def test_a_check_that_could_not_run_is_left_out_and_all_left_out_is_an_error() -> None:
    from prefjudge.judge.facts.instructions import instruction_fact
    from prefjudge.records import CheckResult

    ok_a = CheckResult(id="style_3", status="pass")
    ok_b = CheckResult(id="style_3", status="fail")
    broken_a = CheckResult(id="doc_1", status="error", reason="verifier crashed")
    broken_b = CheckResult(id="doc_1", status="pass")
    fact = instruction_fact([ok_a, broken_a], [ok_b, broken_b])
    assert fact.outcome == "A" and "could not run: doc_1" in fact.fact
    only_broken = instruction_fact([broken_a], [broken_b])
    assert only_broken.outcome == "error" and only_broken.detail["left_out"] == ["doc_1"]
