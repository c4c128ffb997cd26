"""Personas with a scripted model: profiles, rewrite modes, checks and retries, comparison.

The scripted model sees the rendered prompts; the sandbox check and the whole study with
a real model are in tests/test_persona_reference.py and tests/backends/test_persona_real.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pj_cli import invoke
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend, shown, user_text

from prefjudge.backends import Request, Sampling
from prefjudge.persona.compare import ComparisonItem, compare
from prefjudge.persona.profile import (
    GENERIC_USER,
    PersonaError,
    build_profile,
    builtin_personas,
    load_dimensions,
    load_persona,
    persona_yaml,
)
from prefjudge.persona.rewrite import Rewriter, degenerate, split_prompt
from prefjudge.records import Task

MBPP = Task(task_id="Mbpp/4", entry_point="heap_queue_largest", test_format="evalplus",
            prompt="Write a function to find the n largest integers from a given list.\n"
                   "assert heap_queue_largest([25, 35, 22], 2) == [35, 25]")
HUMANEVAL = Task(task_id="HumanEval/2", entry_point="truncate_number", test_format="humaneval",
                 prompt='\n\ndef truncate_number(number: float) -> float:\n    """ Return the '
                        'decimal part.\n    >>> truncate_number(3.5)\n    0.5\n    """\n')


def step(request: Request) -> str:
    return request.id.rsplit(":", 1)[1]


def rewriting_model(*, equivalent: Any = True, drop_name_first: bool = False) -> Any:
    def reply(request: Request) -> Any:
        s = step(request)
        if s == "rewrite_changes":
            return {k: [f"{k} change"] for k in ("expertise", "verbosity", "tone", "mentions",
                                                 "avoids")}
        if s == "rewrite_compose":
            name = re.search(r"function `(\w+)`", user_text(request)).group(1)
            if drop_name_first and request.sample == 0:
                return {"prompt": "hey, can u help me find the biggest numbers in my list?"}
            return {"prompt": f"hey, I'm learning Python, can you write {name} for the n "
                              "largest numbers in a list?"}
        if s == "rewrite_prefix":
            return {"prefix": "I'm new to this, please finish my function:"}
        if s == "preserve":
            ok = equivalent(request) if callable(equivalent) else equivalent
            return {"reason": "same task" if ok else "adds a requirement", "same_goal": ok,
                    "same_solutions": ok}
        raise AssertionError(s)

    return reply


def test_builtin_personas_load_and_cover_the_four_users() -> None:
    assert builtin_personas() == ["advanced_engineer", "ai_researcher", "beginner",
                                  "intermediate"]
    dims = {d.id for d in load_dimensions()}
    assert {"correctness", "clarity", "conciseness"} <= dims
    for name in builtin_personas():
        persona = load_persona(name)
        assert persona.name == name and set(persona.output.priorities) <= dims


def test_bad_persona_files_name_the_file_and_field(tmp_path: Path) -> None:
    data = yaml.safe_load(persona_yaml(load_persona("beginner")))
    data["input"]["expertise"] = "wizard"
    path = tmp_path / "me.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PersonaError, match=r"me\.yaml: field input\.expertise"):
        load_persona(path)
    data["input"]["expertise"] = "beginner"
    data["output"]["priorities"]["vibes"] = 3
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PersonaError, match=r"output\.priorities: unknown dimension.*vibes"):
        load_persona(path)
    with pytest.raises(PersonaError, match="unknown persona 'nobody'"):
        load_persona("nobody")


def test_profile_from_a_description_is_validated_and_round_trips(tmp_path: Path) -> None:
    ids = [d.id for d in load_dimensions()]

    def reply(request: Request) -> Any:
        assert "I teach Python to high-school students" in user_text(request)
        schema = request.json_schema()
        assert "priorities" in json.dumps(schema) and all(i in json.dumps(schema) for i in ids)
        return {"input": {"expertise": "intermediate", "verbosity": "moderate",
                          "tone": "patient", "mentions": ["the class"], "avoids": []},
                "output": {"values": ["code students can read"], "dislikes": ["tricks"],
                           "explanation": "thorough", "code_style": ["comments"],
                           "priorities": dict.fromkeys(ids, 3)}}

    persona = build_profile("I teach Python to high-school students.", "teacher",
                            ScriptedBackend(reply), Sampling())
    path = tmp_path / "teacher.yaml"
    path.write_text(persona_yaml(persona))
    assert load_persona(path) == persona


def test_split_prompt_modes() -> None:
    mbpp = split_prompt(MBPP.prompt)
    assert mbpp.mode == "full"
    assert mbpp.text.startswith("Write a function") and "assert" not in mbpp.text
    assert mbpp.examples == "assert heap_queue_largest([25, 35, 22], 2) == [35, 25]"
    assert split_prompt(HUMANEVAL.prompt).mode == "prefix"
    assert split_prompt("Read n from stdin and print n squared.").examples == ""


def test_full_rewrite_keeps_examples_verbatim_and_prefix_keeps_code() -> None:
    backend = ScriptedBackend(rewriting_model())
    reference_calls: list[list[str]] = []

    def reference(tasks: list[Task]) -> list[str]:
        reference_calls.append([t.task_id for t in tasks])
        return ["pass"] * len(tasks)

    out = Rewriter(backend, load_persona("beginner"), Sampling(),
                   reference_check=reference).rewrite([MBPP, HUMANEVAL])
    mbpp, human = out
    assert mbpp.accepted and human.accepted and mbpp.attempts == human.attempts == 1
    assert mbpp.task.prompt.startswith("hey, I'm learning Python")
    assert mbpp.task.prompt.endswith("\nassert heap_queue_largest([25, 35, 22], 2) == [35, 25]")
    assert human.task.prompt.endswith(HUMANEVAL.prompt.lstrip("\n"))
    assert human.task.prompt.startswith("I'm new to this")
    meta = mbpp.task.metadata["persona"]
    assert meta["name"] == "beginner" and meta["mode"] == "full"
    assert meta["original_prompt"] == MBPP.prompt and meta["reference_check"] == "pass"
    assert meta["changes"]["tone"] == ["tone change"] and meta["preservation"]["same_goal"]
    assert reference_calls == [["Mbpp/4", "HumanEval/2"]]
    assert [step(r) for r in backend.requests] == [
        "rewrite_changes", "rewrite_prefix", "rewrite_compose", "preserve", "preserve"]
    # the persona's input preferences reach the rewrite prompts
    assert "Expertise: beginner" in user_text(backend.requests[0])


def test_a_rewrite_that_drops_the_entry_point_is_retried_with_a_new_sample() -> None:
    backend = ScriptedBackend(rewriting_model(drop_name_first=True))
    task = Task(task_id="t", entry_point="count_vowels", prompt="Write a function that "
                "counts the vowels in a string.")
    [outcome] = Rewriter(backend, load_persona("beginner"), Sampling(temperature=0.0),
                         max_attempts=3).rewrite([task])
    assert outcome.accepted and outcome.attempts == 2
    assert "does not name the entry point 'count_vowels'" in outcome.reasons[0]
    assert "count_vowels" in outcome.task.prompt
    composes = [r for r in backend.requests if step(r) == "rewrite_compose"]
    assert [r.sample for r in composes] == [0, 1]
    assert composes[1].sampling.temperature == 0.7  # a retry must be able to differ
    assert outcome.task.metadata["persona"]["attempts"] == 2


def test_non_equivalent_rewrites_are_rejected_with_reasons() -> None:
    backend = ScriptedBackend(rewriting_model(equivalent=False))
    [outcome] = Rewriter(backend, load_persona("advanced_engineer"), Sampling(),
                         max_attempts=2).rewrite([MBPP])
    assert not outcome.accepted and outcome.attempts == 2
    assert outcome.task == MBPP  # the original is kept for the record
    assert len(outcome.reasons) == 2
    assert all("judged not equivalent" in r and "adds a requirement" in r
               for r in outcome.reasons)


def test_example_lines_keep_the_entry_point_named_even_when_the_text_drops_it() -> None:
    backend = ScriptedBackend(rewriting_model(drop_name_first=True))
    [outcome] = Rewriter(backend, load_persona("beginner"), Sampling()).rewrite([MBPP])
    assert outcome.accepted and outcome.attempts == 1
    assert "heap_queue_largest" not in outcome.task.prompt.splitlines()[0]
    assert outcome.task.prompt.splitlines()[-1].startswith("assert heap_queue_largest(")


def test_degenerate_rewrites_are_rejected() -> None:
    def looping(request: Request) -> Any:
        if step(request) == "rewrite_compose":
            return {"prompt": "heap_queue_largest" + ".json" * 200}
        return rewriting_model()(request)

    [outcome] = Rewriter(ScriptedBackend(looping), load_persona("beginner"), Sampling(),
                         max_attempts=1).rewrite([MBPP])
    assert not outcome.accepted
    assert outcome.reasons == ["attempt 1: the rewrite is degenerate (repetitive text)"]
    assert not degenerate("hey, I'm learning Python, can you write heap_queue_largest for "
                          "the n largest numbers in a list? My teacher gave me an example.")


def test_rewrites_too_short_to_restate_the_task_are_rejected() -> None:
    def terse(request: Request) -> Any:
        if step(request) == "rewrite_compose":
            return {"prompt": "heap_queue_largest"}
        return rewriting_model()(request)

    [outcome] = Rewriter(ScriptedBackend(terse), load_persona("beginner"), Sampling(),
                         max_attempts=1).rewrite([MBPP])
    assert not outcome.accepted
    assert outcome.reasons == ["attempt 1: the rewrite is too short to carry the task: 1 words "
                               "for 13 in the original"]


def test_a_failing_reference_solution_rejects_the_rewrite() -> None:
    backend = ScriptedBackend(rewriting_model())
    [outcome] = Rewriter(backend, load_persona("beginner"), Sampling(), max_attempts=1,
                         reference_check=lambda ts: ["fail: fail: wrong"] * len(ts)
                         ).rewrite([MBPP])
    assert not outcome.accepted
    assert outcome.reasons == ["attempt 1: reference solution: fail: fail: wrong"]


def comparing_model(request: Request) -> Any:
    """Prefers the answer that explains itself on every dimension but conciseness."""
    a, b = "# explained" in shown(request, "A"), "# explained" in shown(request, "B")
    explained = "A" if a and not b else "B"
    dims = re.findall(r"^(\w+): ", user_text(request).split("## Dimensions")[1], re.M)
    return {"verdicts": {
        d: {"reason": "r",
            "verdict": ("B" if explained == "A" else "A") if d == "conciseness" else explained}
        for d in dims
    }}


def test_compare_judges_every_dimension_in_both_orders_as_the_user() -> None:
    backend = ScriptedBackend(comparing_model)
    items = [ComparisonItem("t1", "sum a list", "x = 1  # explained", "x = 1", "m1", "m2",
                            "persona"),
             ComparisonItem("t2", "sum a list", "y = 2", "y = 2  # explained", "m1", "m2",
                            "persona")]
    dims = load_dimensions()
    first, second = compare(items, load_persona("beginner"), dims, backend, Sampling())
    assert first.status == "ok" and first.persona == "beginner"
    outcome = {d.dimension: d.outcome for d in first.dimensions}
    assert outcome["clarity"] == "A" and outcome["conciseness"] == "B"
    assert {d.dimension: d.outcome for d in second.dimensions}["clarity"] == "B"
    assert [d.dimension for d in first.dimensions] == [d.id for d in dims]
    assert first.cost.requests == 2 and len(backend.requests) == 4
    assert "first-year computer-science student" in user_text(backend.requests[0])
    schema = backend.requests[0].json_schema()
    assert schema["$defs"]["DimensionVerdicts"]["required"] == [d.id for d in dims]
    generic = compare(items[:1], None, dims, ScriptedBackend(comparing_model), Sampling())[0]
    assert generic.persona is None


def test_position_bias_becomes_ties_and_errors_stay_errors() -> None:
    def biased(request: Request) -> Any:
        if request.id.startswith("bad:"):
            return "{"
        dims = re.findall(r"^(\w+): ", user_text(request).split("## Dimensions")[1], re.M)
        return {"verdicts": {d: {"reason": "", "verdict": "A"} for d in dims}}

    items = [ComparisonItem("ok", "i", "a", "b", "m1", "m2", "original"),
             ComparisonItem("bad", "i", "a", "b", "m1", "m2", "original")]
    good, bad = compare(items, None, load_dimensions(), ScriptedBackend(biased), Sampling())
    assert {d.outcome for d in good.dimensions} == {"tie"}
    assert all(d.forward == "A" and d.swapped == "B" for d in good.dimensions)
    assert bad.status == "error" and bad.dimensions == []
    assert bad.error.startswith("compare (forward): invalid_output")
    backend = ScriptedBackend(biased)
    compare(items[:1], None, load_dimensions(), backend, Sampling())
    assert GENERIC_USER in user_text(backend.requests[0])


def test_persona_list_and_flips_commands(tmp_path: Path) -> None:
    listed = invoke("persona", "list")
    assert listed.exit_code == 0 and "ai_researcher" in listed.output
    rows = []
    for i in range(12):
        for condition, winner in (("original", "A"), ("persona", "B")):
            rows.append({"task_id": f"t{i}", "condition": condition, "persona": "beginner",
                         "model_a": "m1", "model_b": "m2", "dimensions": [
                             {"dimension": "clarity", "forward": winner, "swapped": winner,
                              "outcome": winner}]})
    path = write_jsonl(tmp_path / "cmp.jsonl", rows)
    result = invoke("persona", "flips", str(path), "--bootstrap", "200")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "cmp.flips.json").read_text())
    assert "clarity" in summary["flipped"] and "clarity" in summary["significant_flips"]
    assert (tmp_path / "cmp.flips.png").stat().st_size > 1000
    assert (tmp_path / "cmp.flips.csv").read_text().startswith("dimension,")
    path.write_text('{"task_id": "t"}\n')
    bad = invoke("persona", "flips", str(path))
    assert bad.exit_code == 1 and "cmp.jsonl:1: field 'model_a'" in bad.output
