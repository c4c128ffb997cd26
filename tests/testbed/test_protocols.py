"""Prompt assembly and the generation loop of the interaction protocols (scripted backend)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cli import invoke
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend
from pj_scripted_backend import user_turns as users

from prefjudge.backends import Backend, Request
from prefjudge.io import read_existing
from prefjudge.records import AugmentedTask, InstructionRef
from prefjudge.scoring.taxonomy import load_taxonomy
from prefjudge.testbed.protocols import (
    SINGLE_TURN_HEADER,
    ProtocolGeneration,
    ProtocolRunner,
    generation_id,
    multi_turn_prompts,
    parse_k,
    reference_system_prompt,
    single_turn_prompt,
)

TAX = load_taxonomy()
REFS = [
    InstructionRef(id="style_1"),
    InstructionRef(id="style_2"),
    InstructionRef(id="style_3"),
]

SYSTEM = reference_system_prompt("bigcodebench")  # what tasks of no known benchmark get


def task(task_id: str = "T/1", n: int = 3) -> AugmentedTask:
    return AugmentedTask(task_id=task_id, prompt=f"Write f for {task_id}.\n", instructions=REFS[:n])


def by_id(gens: list[ProtocolGeneration]) -> dict[str, ProtocolGeneration]:
    return {g.id: g for g in gens}


def test_scripted_backend_is_a_backend() -> None:
    assert isinstance(ScriptedBackend(), Backend)


@pytest.mark.parametrize(("text", "expected"), [
    ("0..5", [0, 1, 2, 3, 4, 5]), ("3", [3]), ("1,3,5", [1, 3, 5]), ("5, 0..2", [0, 1, 2, 5]),
])
def test_parse_k(text: str, expected: list[int]) -> None:
    assert parse_k(text) == expected


@pytest.mark.parametrize("text", ["", "a", "3..1", "-1", "1..", "1,,2"])
def test_parse_k_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_k(text)


def test_single_turn_prompt_exact_numbered() -> None:
    prompt = single_turn_prompt("Do X.\n", REFS[:2], TAX, framing="numbered")
    assert prompt == (
        "Do X.\n\n" + SINGLE_TURN_HEADER + "\n"
        f"1. {TAX.prompt(REFS[0])}\n2. {TAX.prompt(REFS[1])}"
    )
    assert single_turn_prompt("Do X.\n", [], TAX, framing="numbered") == "Do X.\n"


def test_params_are_rendered() -> None:
    spec = next(s for s in TAX if s.params)
    param = spec.params[0]
    value = next(v for v in param.recommended if v != param.default) if param.recommended else (
        param.default)
    ref = InstructionRef(id=spec.id, params={param.name: value})
    assert single_turn_prompt("P", [ref], TAX).endswith(TAX.prompt(ref))
    assert multi_turn_prompts("P", [ref], TAX)[1] == TAX.prompt(ref, multi_turn=True)


def test_multi_turn_prompts() -> None:
    assert multi_turn_prompts("Do X.", REFS, TAX) == [
        "Do X.", *(TAX.prompt(r, multi_turn=True) for r in REFS)
    ]


def test_single_protocol_messages_and_records() -> None:
    backend = ScriptedBackend(model_id="scripted-model")
    t = task()
    gens = list(ProtocolRunner(backend, [t], protocols=["single"], ks=[0, 2]).run())
    assert len(backend.calls) == 1  # one batch
    sent = {req.id: req for req in backend.requests}
    assert [m.role for req in sent.values() for m in req.messages] == ["system", "user"] * 2
    assert {req.messages[0].content for req in sent.values()} == {SYSTEM}
    got = by_id(gens)
    k2 = got["T/1::single::k2::s0"]
    assert k2.turns[0].prompt == single_turn_prompt(t.prompt, REFS[:2], TAX)
    assert k2.instructions == REFS[:2] and k2.k == 2 and k2.protocol == "single"
    assert k2.response == "reply 1" and k2.error is None and k2.model == "scripted-model"
    assert len(k2.turns) == 1 and k2.turns[0].instruction is None
    assert got["T/1::single::k0::s0"].turns[0].prompt == t.prompt
    assert got["T/1::single::k0::s0"].instructions == []


def test_multi_protocol_history_grows() -> None:
    backend = ScriptedBackend()
    t = task()
    gens = by_id(list(ProtocolRunner(backend, [t], protocols=["multi"], ks=range(4)).run()))
    # one conversation of 4 turns serves k = 0..3: four rounds of one request each
    assert [len(call) for call in backend.calls] == [1, 1, 1, 1]
    prompts = multi_turn_prompts(t.prompt, REFS, TAX)
    last = backend.calls[-1][0]
    assert [(m.role, m.content) for m in last.messages] == [
        ("system", SYSTEM),
        ("user", prompts[0]), ("assistant", "reply 1"),
        ("user", prompts[1]), ("assistant", "reply 2"),
        ("user", prompts[2]), ("assistant", "reply 3"),
        ("user", prompts[3]),
    ]
    for k in range(4):
        gen = gens[generation_id("T/1", "multi", k)]
        assert len(gen.turns) == k + 1
        assert gen.response == f"reply {k + 1}"
        assert gen.instructions == REFS[:k]
        assert [turn.instruction for turn in gen.turns] == [None, *REFS[:k]]
        assert [turn.index for turn in gen.turns] == list(range(1, k + 2))


def test_turns_are_batched_across_tasks_and_duplicates_sent_once() -> None:
    backend = ScriptedBackend()
    tasks = [task("A/1"), task("B/2"), task("C/3")]
    progress = []
    runner = ProtocolRunner(backend, tasks, protocols=["single", "multi"], ks=[0, 1, 2])
    gens = list(runner.run(on_result=progress.append))
    assert len(gens) == runner.total_generations == 18
    # round 1: single k0 == multi turn 1 (same prompt), single k1, single k2 -> 3 per task
    assert [len(call) for call in backend.calls] == [9, 3, 3]
    assert len(progress) == runner.total_calls == 3 * (3 + 3)
    assert len({g.id for g in gens}) == 18


def test_k_above_instruction_count_is_skipped() -> None:
    backend = ScriptedBackend()
    runner = ProtocolRunner(backend, [task(n=1)], protocols=["single", "multi"], ks=[0, 1, 2])
    gens = list(runner.run())
    assert runner.skipped == [("T/1", 2)]
    assert sorted(g.id for g in gens) == sorted(
        generation_id("T/1", p, k) for p in ("single", "multi") for k in (0, 1)
    )


def test_failed_call_is_recorded_not_dropped() -> None:
    def reply(req: Request) -> str | None:
        return None if users(req) == 2 else "ok"  # the multi-turn second turn fails

    backend = ScriptedBackend(reply, failure="boom")
    gens = by_id(list(ProtocolRunner(backend, [task()], protocols=["multi"], ks=range(4)).run()))
    assert len(gens) == 4
    assert gens["T/1::multi::k0::s0"].error is None
    assert gens["T/1::multi::k0::s0"].response == "ok"
    for k in (1, 2, 3):
        gen = gens[generation_id("T/1", "multi", k)]
        assert gen.response == "" and gen.error and "turn 2" in gen.error
        assert len(gen.turns) == 2 and gen.turns[1].error == "boom"
        assert gen.turns[1].response == ""
    assert len(backend.calls) == 2  # later turns of the failed conversation not attempted


def test_samples_have_distinct_ids_and_sample_index() -> None:
    backend = ScriptedBackend()
    gens = list(ProtocolRunner(backend, [task()], protocols=["single"], ks=[1], samples=2).run())
    assert sorted(g.id for g in gens) == ["T/1::single::k1::s0", "T/1::single::k1::s1"]
    assert sorted(req.sample for req in backend.requests) == [0, 1]


def test_resume_makes_no_repeated_calls() -> None:
    tasks = [task("A/1"), task("B/2")]
    first = ScriptedBackend()
    done = {g.id: g.model_dump(mode="json")
            for g in ProtocolRunner(first, tasks, protocols=["single", "multi"], ks=[0, 2]).run()}
    again = ScriptedBackend()
    runner = ProtocolRunner(again, tasks, protocols=["single", "multi"], ks=[0, 2], done=done)
    assert list(runner.run()) == [] and again.calls == []
    # k = 1 is new: single needs one call per task; multi continues from the k = 2 turns
    more = ScriptedBackend()
    runner = ProtocolRunner(more, tasks, protocols=["single", "multi"], ks=[0, 1, 2], done=done)
    new = by_id(list(runner.run()))
    assert sorted(new) == sorted(generation_id(t, p, 1) for t in ("A/1", "B/2")
                                 for p in ("single", "multi"))
    assert [len(call) for call in more.calls] == [2]
    assert all("::single::" in req.id for req in more.requests)
    assert [t.model_dump(mode="json") for t in new["A/1::multi::k1::s0"].turns] == (
        done["A/1::multi::k2::s0"]["turns"][:2])


def test_resume_continues_a_conversation() -> None:
    first = ScriptedBackend()
    done = {g.id: g for g in ProtocolRunner(first, [task()], protocols=["multi"], ks=[1]).run()}
    more = ScriptedBackend()
    gens = list(ProtocolRunner(more, [task()], protocols=["multi"], ks=[1, 3], done=done).run())
    assert [g.id for g in gens] == ["T/1::multi::k3::s0"]
    assert len(more.calls) == 2  # turns 3 and 4 only
    assert len(more.calls[0][0].messages) == 6  # system + 3 user turns + 2 replies


def test_cli_generate_writes_scoreable_records(tmp_path: Path, monkeypatch) -> None:
    from prefjudge.cli import generate_cmd
    from prefjudge.scoring.score import prepare_job

    augmented = tmp_path / "augmented.jsonl"
    write_jsonl(augmented, [task(f"T/{i}") for i in range(2)])
    backend = ScriptedBackend()
    monkeypatch.setattr(generate_cmd, "create_backend", lambda config: backend)
    out = tmp_path / "gens.jsonl"
    args = ["generate", str(augmented), "--k", "0..2", "-o", str(out), "--no-cache"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    records = read_existing(out)
    assert len(records) == 2 * 2 * 3
    assert {r["protocol"] for r in records} == {"single", "multi"}
    job = prepare_job(out, {})
    assert len(job.generations) == 12
    assert job.keys == [f"{r['model']}::{r['id']}" for r in records]
    calls = len(backend.calls)
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert len(backend.calls) == calls and len(read_existing(out)) == 12
    assert "resuming" in result.output


def test_cli_rejects_bad_k_and_bad_instructions(tmp_path: Path) -> None:
    augmented = tmp_path / "augmented.jsonl"
    bad = task().model_copy(update={"instructions": [InstructionRef(id="nope_9")]})
    write_jsonl(augmented, [bad])
    result = invoke("generate", str(augmented), "--k", "x")
    assert result.exit_code == 2 and "bad k" in result.output
    result = invoke("generate", str(augmented), "--k", "1",
                    "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 1 and "nope_9" in result.output
