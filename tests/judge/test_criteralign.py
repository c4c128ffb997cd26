"""CriterAlign and the baselines with a scripted judge: stage logic, swaps, ties, costs.

The scripted judge sees the rendered prompts exactly as a model would, so these tests
also pin down prompt assembly (order swaps, guidance slots, evidence). Real-model runs of
the same code are in tests/backends/test_judge_real.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pj_scripted_backend import ScriptedBackend, criterion_ids, shown, stage_of, user_text

from prefjudge.backends import Request
from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.judge.criteralign import normalize_criteria
from prefjudge.records import Pair

GOOD = "def f(xs):\n    # GOOD: handles the empty list\n    return sum(xs) if xs else 0\n"
BAD = "def f(xs):\n    return xs[0] + sum(xs[1:])\n"
CRITERIA = ["Handles the empty list", "1. Handles the empty list.", "Has a docstring",
            "Names variables clearly", "   "]


def pair(pid: str = "p1", good_first: bool = True, **extra: Any) -> Pair:
    a, b = (GOOD, BAD) if good_first else (BAD, GOOD)
    return Pair(pair_id=pid, task_id=pid, instruction="Write f(xs) returning the sum.",
                response_a=a, response_b=b, label="A" if good_first else "B", **extra)


def side_with_good(request: Request) -> str:
    a, b = "GOOD" in shown(request, "A"), "GOOD" in shown(request, "B")
    return "A" if a and not b else "B" if b and not a else "tie"


def fair_judge(tie_ids: tuple[str, ...] = ()) -> Any:
    """Prefers the GOOD response on every criterion, wherever it is shown."""

    def reply(request: Request) -> Any:
        stage = stage_of(request)
        if stage == "criteria":
            return {"criteria": CRITERIA}
        if stage in ("judging", "refined judging"):
            return {"verdicts": {
                cid: {"reason": "looked at the empty case",
                      "verdict": "tie" if cid in tie_ids else side_with_good(request)}
                for cid in criterion_ids(request)
            }}
        if stage == "refine":
            tied = re.findall(r"^(c\d+): ", user_text(request).split("## Tied criteria")[1], re.M)
            return {"splits": {t: [f"{t} finer one", f"{t} finer two"] for t in tied}}
        if stage in ("synthesis", "monolithic"):
            body = {"reason": "the GOOD one handles the empty list",
                    "verdict": side_with_good(request)}
            if stage == "synthesis":
                body["decisive"] = ["c1"]
            return body
        if stage == "pointwise":
            text = re.search(r"## Answer\n(`{3,})\n(.*?)\n\1", user_text(request), re.S).group(2)
            return {"scores": {cid: {"reason": "r", "score": 5 if "GOOD" in text else 2}
                               for cid in criterion_ids(request)}}
        raise AssertionError(stage)

    return reply


def biased_judge(request: Request) -> Any:
    """Always prefers whatever is shown first."""
    stage = stage_of(request)
    if stage == "criteria":
        return {"criteria": CRITERIA}
    if stage == "judging":
        return {"verdicts": {c: {"reason": "", "verdict": "A"} for c in criterion_ids(request)}}
    return {"reason": "first is best", "verdict": "A", "decisive": []}


def settings(**kw: Any) -> JudgeSettings:
    return JudgeSettings(min_criteria=2, max_criteria=20, **kw)


@pytest.mark.parametrize("good_first", [True, False])
def test_fair_judge_picks_the_good_response_in_both_orders(good_first: bool) -> None:
    backend = ScriptedBackend(fair_judge())
    [v] = judge_pairs([pair(good_first=good_first)], backend, settings())
    expected = "A" if good_first else "B"
    assert v.status == "ok" and v.preferred == expected
    assert v.winner == ("model_a" if good_first else "model_b")
    assert v.orders == {"forward": expected, "swapped": expected}
    assert v.position_consistent is True
    # "Handles the empty list" and "1. Handles the empty list." are one criterion; blank dropped
    assert [c.criterion.text for c in v.criteria] == CRITERIA[:1] + CRITERIA[2:4]
    assert all(c.outcome == expected for c in v.criteria)
    assert v.inconsistency_rate == 0.0 and v.decisive == ["c1"]
    # 1 criteria + 2 judging + 2 synthesis; no ties, so no refinement
    assert v.cost.requests == 5 and v.cost.model_calls == 5 and v.cost.errors == 0
    assert [stage_of(r) for r in backend.requests] == [
        "criteria", "judging", "judging", "synthesis", "synthesis"]


def test_swapped_prompts_really_swap_the_responses() -> None:
    backend = ScriptedBackend(fair_judge())
    list(judge_pairs([pair()], backend, settings()))
    forward, swapped = backend.stage("judging")
    assert forward.id.endswith(":forward") and swapped.id.endswith(":swapped")
    assert shown(forward, "A") == GOOD.rstrip() and shown(swapped, "A") == BAD.rstrip()
    # the synthesis in the swapped order sees the verdicts relabelled too
    synth_swapped = backend.stage("synthesis")[1]
    assert "Answer B better" in user_text(synth_swapped)
    assert "Answer A better" in user_text(backend.stage("synthesis")[0])


def test_position_bias_is_caught_by_the_swap() -> None:
    backend = ScriptedBackend(biased_judge)
    [v] = judge_pairs([pair()], backend, settings(refine=True))
    assert v.status == "ok"
    assert v.orders == {"forward": "A", "swapped": "B"}
    assert v.preferred == "tie" and v.winner == "tie" and v.position_consistent is False
    assert v.inconsistency_rate == 1.0
    assert all(c.outcome is None for c in v.criteria)  # no verdict survived the swap
    assert "no criterion verdict survived" in user_text(backend.stage("synthesis")[0])
    assert backend.stage("refine") == []  # nothing tied, nothing refined


def test_tied_criteria_are_refined_and_the_sub_criteria_judged_in_both_orders() -> None:
    backend = ScriptedBackend(fair_judge(tie_ids=("c2",)))
    [v] = judge_pairs([pair()], backend, settings())
    [refine] = backend.stage("refine")
    assert "c2: Has a docstring" in user_text(refine)
    assert "c1:" not in user_text(refine).split("## Tied criteria")[1]
    assert len(backend.stage("refined judging")) == 2
    subs = [c for c in v.criteria if c.criterion.parent == "c2"]
    assert [c.criterion.id for c in subs] == ["c2.1", "c2.2"]
    assert all(c.outcome == "A" for c in subs)
    assert v.refined == 1
    assert v.cost.requests == 8  # 1 + 2 + 1 refine + 2 refined judging + 2 synthesis


def test_max_refine_and_no_refine_bound_stage_four() -> None:
    backend = ScriptedBackend(fair_judge(tie_ids=("c1", "c2", "c3")))
    [v] = judge_pairs([pair()], backend, settings(max_refine=1))
    assert v.refined == 1 and len({c.criterion.parent for c in v.criteria} - {None}) == 1
    backend = ScriptedBackend(fair_judge(tie_ids=("c1",)))
    [v] = judge_pairs([pair()], backend, settings(refine=False))
    assert backend.stage("refine") == [] and v.refined == 0


def test_an_invalid_reply_is_an_error_with_its_stage_not_a_tie() -> None:
    def broken(request: Request) -> Any:
        return "not json at all" if stage_of(request) == "criteria" else fair_judge()(request)

    backend = ScriptedBackend(broken)
    [v] = judge_pairs([pair()], backend, settings())
    assert v.status == "error" and v.winner is None and v.preferred is None
    assert v.error.startswith("criteria: invalid_output")
    assert "not json at all" in v.error
    assert len(backend.requests) == 1  # later stages never ran for this pair
    assert v.cost.requests == 1 and v.cost.errors == 1


def test_one_failing_pair_does_not_sink_the_others() -> None:
    def broken_for_p2(request: Request) -> Any:
        if request.id.startswith("p2:") and stage_of(request) == "synthesis":
            return '{"verdict": "maybe"}'
        return fair_judge()(request)

    backend = ScriptedBackend(broken_for_p2)
    v1, v2, v3 = judge_pairs([pair("p1"), pair("p2"), pair("p3", good_first=False)], backend,
                             settings(), chunk_size=2)
    assert (v1.status, v1.preferred) == ("ok", "A")
    assert v2.status == "error" and v2.error.startswith("synthesis (forward)")
    assert (v3.status, v3.preferred) == ("ok", "B")
    assert v2.criteria and v2.inconsistency_rate == 0.0  # what was computed is kept
    assert [v.cost.requests for v in (v1, v2, v3)] == [5, 5, 5]


def test_a_reply_missing_a_criterion_is_invalid_not_silently_partial() -> None:
    def forgetful(request: Request) -> Any:
        body = fair_judge()(request)
        if request.id.endswith("judging:swapped"):
            body["verdicts"].pop("c2")
        return body

    [v] = judge_pairs([pair()], ScriptedBackend(forgetful), settings())
    assert v.status == "error" and v.error.startswith("judging (swapped): invalid_output")
    assert "c2" in v.error


def test_monolithic_asks_twice_and_ties_on_disagreement() -> None:
    backend = ScriptedBackend(fair_judge())
    [v] = judge_pairs([pair(good_first=False)], backend, settings(method="monolithic"))
    assert v.method == "monolithic" and v.preferred == "B" and v.position_consistent
    assert v.criteria == [] and v.cost.requests == 2
    [v] = judge_pairs([pair()], ScriptedBackend(biased_judge), settings(method="monolithic"))
    assert v.preferred == "tie" and v.position_consistent is False


def test_pointwise_scores_each_response_alone_and_compares_totals() -> None:
    backend = ScriptedBackend(fair_judge())
    [v] = judge_pairs([pair(good_first=False)], backend, settings(method="pointwise"))
    assert v.method == "pointwise" and v.preferred == "B"
    assert v.scores == {"A": 6.0, "B": 15.0}
    assert v.position_consistent is None and v.cost.requests == 3
    for request in backend.stage("pointwise"):
        assert "## Answer A" not in user_text(request)  # never sees the other response


def test_guidance_goes_into_the_marked_slot_of_each_stage(tmp_path) -> None:
    from prefjudge.judge.guidance import load_guidance, render_lessons

    (tmp_path / "categories").mkdir()
    (tmp_path / "global.md").write_text(render_lessons("Global", {
        "criteria": ["LESSON-CRIT"], "judging": ["LESSON-JUDGE"], "final": ["LESSON-FINAL"]}))
    (tmp_path / "categories" / "lbpp.md").write_text(render_lessons("Category: lbpp", {
        "final": ["LESSON-LBPP"]}))
    (tmp_path / "manifest.json").write_text('{"train_pair_ids": []}')
    guidance = load_guidance(tmp_path)
    backend = ScriptedBackend(fair_judge(tie_ids=("c1",)))
    v, _ = judge_pairs([pair(category="lbpp"), pair("p2", category="other")], backend,
                      settings(guidance=guidance))
    assert v.guidance == guidance.label and guidance.label.startswith(tmp_path.name + "@")
    wanted = {"criteria": "LESSON-CRIT", "refine": "LESSON-CRIT", "judging": "LESSON-JUDGE",
              "refined judging": "LESSON-JUDGE", "synthesis": "LESSON-FINAL"}
    for request in backend.requests:
        text = user_text(request)
        stage = stage_of(request)
        assert wanted[stage] in text
        assert sum(f"LESSON-{x}" in text for x in ("CRIT", "JUDGE", "FINAL")) == 1
        lbpp_only = stage == "synthesis" and request.id.startswith("p1:")
        assert ("LESSON-LBPP" in text) == lbpp_only


def test_without_guidance_the_slot_is_empty() -> None:
    backend = ScriptedBackend(fair_judge())
    list(judge_pairs([pair()], backend, settings()))
    assert not any("Guidance learned" in user_text(r) for r in backend.requests)
    assert not any("{{" in user_text(r) for r in backend.requests)


def test_evidence_is_shown_per_side_and_swapped_with_the_responses() -> None:
    p = pair(evidence_a=["unit tests: pass"], evidence_b=["unit tests: fail — IndexError"])
    backend = ScriptedBackend(fair_judge())
    [v] = judge_pairs([p], backend, settings(evidence=True))
    assert v.evidence is True
    forward, swapped = backend.stage("judging")
    fwd = user_text(forward).split("## Facts")[1]
    swp = user_text(swapped).split("## Facts")[1]
    assert fwd.index("unit tests: pass") < fwd.index("IndexError")
    assert swp.index("IndexError") < swp.index("unit tests: pass")
    assert "## Facts" not in user_text(backend.stage("criteria")[0])  # not a criteria input
    backend = ScriptedBackend(fair_judge())
    [v] = judge_pairs([p], backend, settings())
    assert v.evidence is False and not any("## Facts" in user_text(r) for r in backend.requests)


def test_schemas_require_every_criterion_id_exactly_once() -> None:
    backend = ScriptedBackend(fair_judge())
    list(judge_pairs([pair()], backend, settings()))
    schema = backend.stage("judging")[0].json_schema()
    verdicts = schema["$defs"]["CriterionVerdicts"]
    assert verdicts["required"] == ["c1", "c2", "c3"]
    assert verdicts["additionalProperties"] is False
    assert schema["$defs"]["Judgement"]["required"] == ["reason", "verdict"]


def test_duplicate_pair_ids_and_unknown_methods_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate pair ids"):
        list(judge_pairs([pair(), pair()], ScriptedBackend(fair_judge()), settings()))
    with pytest.raises(ValueError, match="unknown method"):
        list(judge_pairs([pair()], ScriptedBackend(fair_judge()), settings(method="vibes")))


def test_normalize_criteria_strips_numbering_and_caps() -> None:
    out = normalize_criteria(["1) Fast", "- fast.", "Clear names", "", "Docs"], limit=2)
    assert [(c.id, c.text) for c in out] == [("c1", "Fast"), ("c2", "Clear names")]
