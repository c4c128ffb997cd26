"""Prompt framing of ``prefjudge generate``: the SWE-IF reference system prompts and wording.

The reference is ``maszhongming/SWE-IF``, ``swe_if/code_generator.py`` at commit
767d1908cb37c24f0af77b15146eec035720dea0 (``_get_generation_system_prompt``,
``_create_generation_prompt``, ``_process_editing_instance``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pj_cli import WIDE, invoke
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend
from test_protocols import REFS, TAX, users

from prefjudge.backends import Message, Request, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.io import read_existing
from prefjudge.journal import binding_path
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, Task
from prefjudge.scoring.tasks import load_tasks
from prefjudge.testbed.protocols import (
    NO_SYSTEM_PROMPT,
    REFERENCE_HEADER_MANY,
    REFERENCE_HEADER_ONE,
    REFERENCE_SYSTEM_PROMPT,
    SINGLE_TURN_HEADER,
    SYSTEM_PROMPT_FILES,
    ProtocolRunner,
    SystemPrompt,
    framing_settings,
    multi_turn_prompts,
    prompt_benchmark,
    read_prompt_file,
    reference_system_prompt,
    single_turn_prompt,
    text_sha256,
)

# SHA-256 of the two strings returned by CodeGenerator._get_generation_system_prompt at the
# reference commit, computed from the reference file (not from the data files checked here)
REFERENCE_SHA256 = {
    "bigcodebench": "62c47017164d77a25bff451bb10e0cc6f4a8758e623e24d6716a19d2628f3b85",
    "livecodebench": "64888e73f8867b96a3d8471e61474acd4f4b424408ff4a92b9a3b0fb85a4dd66",
}
REFERENCE_COMMIT = "767d1908cb37c24f0af77b15146eec035720dea0"
BCB = reference_system_prompt("bigcodebench")
LCB = reference_system_prompt("livecodebench")


def augmented(task_id: str, source: str = "prefjudge", n: int = 3) -> AugmentedTask:
    return AugmentedTask(task_id=task_id, prompt=f"Write f for {task_id}.\n", source=source,
                         instructions=REFS[:n])


# --------------------------------------------------------------------------- system prompts


@pytest.mark.parametrize("benchmark", ["bigcodebench", "livecodebench"])
def test_reference_system_prompts_are_byte_identical(benchmark: str) -> None:
    path = data_dir("rubrics") / "prompts" / SYSTEM_PROMPT_FILES[benchmark]
    text = read_prompt_file(path)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == REFERENCE_SHA256[benchmark]
    assert reference_system_prompt(benchmark) == text  # type: ignore[arg-type]
    header = path.read_text("utf-8").split("-->", 1)[0]
    for name in ("maszhongming/SWE-IF", "swe_if/code_generator.py", REFERENCE_COMMIT):
        assert name in header


def test_the_two_reference_texts_differ_where_the_reference_does() -> None:
    assert BCB != LCB
    assert "complete and runnable code solution for every request" in BCB
    assert "functional Python solutions" in LCB
    assert BCB.endswith("**complete, runnable code** in every response, even if no changes "
                        "are needed from the previous version.")
    assert LCB.endswith("**complete Python functions** in every response, even if no changes "
                        "are needed from the previous version.")


def test_read_prompt_file_strips_only_the_header_and_one_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "p.md"
    path.write_text("<!-- where from -->\n  Be brief.\n\n", encoding="utf-8")
    assert read_prompt_file(path) == "  Be brief.\n"
    path.write_text("No header, no final newline", encoding="utf-8")
    assert read_prompt_file(path) == "No header, no final newline"
    path.write_text("<!-- never closed\nBe brief.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="never closed"):
        read_prompt_file(path)
    path.write_text("<!-- only a header -->\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        read_prompt_file(path)


@pytest.mark.parametrize(
    ("task_id", "source", "expected"),
    [
        ("BigCodeBench/13", "bigcodebench", "bigcodebench"),
        ("HumanEval/0", "humaneval", "bigcodebench"),
        ("HumanEval/0", "humanevalplus", "bigcodebench"),
        ("Mbpp/2", "mbppplus", "bigcodebench"),
        ("LiveCodeBench/abc301_a", "livecodebench", "livecodebench"),
        ("abc301_a", "LiveCodeBench", "livecodebench"),  # the source decides, any spelling
        ("3213", "live_code_bench-v6", "livecodebench"),
        ("LiveCodeBench/abc301_a", "prefjudge", "livecodebench"),  # default source: the id
        ("livecodebench/3213", "", "livecodebench"),
        ("LiveCodeBench/x", "humaneval", "bigcodebench"),  # a named source wins over the id
        ("T/1", "prefjudge", "bigcodebench"),
        ("LiveCodeBenchmarks", "prefjudge", "bigcodebench"),
    ],
)
def test_prompt_benchmark(task_id: str, source: str, expected: str) -> None:
    assert prompt_benchmark(Task(task_id=task_id, source=source)) == expected


def test_prompt_benchmark_of_loaded_tasks(tmp_path: Path) -> None:
    """The loaders' tasks: LiveCodeBench gets its own prompt, BigCodeBench the other."""
    lcb = {"question_id": "abc301_a", "question_content": "Read N and print N.",
           "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n",
                                             "testtype": "stdin"}]),
           "private_test_cases": "", "starter_code": "", "metadata": "{}"}
    bcb = {"task_id": "BigCodeBench/1", "instruct_prompt": "Write task_func.",
           "complete_prompt": "def task_func():\n", "canonical_solution": "    return 1\n",
           "test": "", "entry_point": "task_func"}
    for record, expected in ((lcb, "livecodebench"), (bcb, "bigcodebench")):
        path = write_jsonl(tmp_path / f"{expected}.jsonl", [record])
        (loaded,) = load_tasks(path).values()
        assert prompt_benchmark(loaded) == expected
        assert REFERENCE_SYSTEM_PROMPT.for_task(loaded) == (
            LCB if expected == "livecodebench" else BCB)


def test_system_prompt_option_values(tmp_path: Path) -> None:
    lcb, bcb = Task(task_id="LiveCodeBench/1"), Task(task_id="BigCodeBench/1")
    assert SystemPrompt.parse("reference") == REFERENCE_SYSTEM_PROMPT
    assert (REFERENCE_SYSTEM_PROMPT.for_task(lcb), REFERENCE_SYSTEM_PROMPT.for_task(bcb)) == (
        LCB, BCB)
    assert SystemPrompt.parse("none") == NO_SYSTEM_PROMPT
    assert NO_SYSTEM_PROMPT.for_task(lcb) is None and NO_SYSTEM_PROMPT.for_task(bcb) is None
    mine = tmp_path / "mine.md"
    mine.write_text("<!-- my prompt -->\nYou write Python.\n", encoding="utf-8")
    spec = SystemPrompt.parse(str(mine))
    assert spec.mode == "file" and spec.path == str(mine)
    assert spec.for_task(lcb) == spec.for_task(bcb) == "You write Python."
    # the shipped file given as a path is the reference text, for every task
    shipped = data_dir("rubrics") / "prompts" / SYSTEM_PROMPT_FILES["livecodebench"]
    assert SystemPrompt.parse(str(shipped)).for_task(bcb) == LCB
    for bad, message in ((tmp_path / "missing.md", "no such file"), (tmp_path, "folder")):
        with pytest.raises(ValueError, match=message):
            SystemPrompt.parse(str(bad))
    (tmp_path / "empty.md").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        SystemPrompt.parse(str(tmp_path / "empty.md"))


def test_framing_settings() -> None:
    tasks = [augmented("BigCodeBench/1", "bigcodebench"), augmented("HumanEval/1", "humaneval")]
    mixed = [*tasks, augmented("LiveCodeBench/1", "livecodebench")]
    assert framing_settings("numbered", NO_SYSTEM_PROMPT, tasks) == {}  # the earlier runs
    assert framing_settings("reference", REFERENCE_SYSTEM_PROMPT, tasks) == {
        "framing": "reference", "system_prompt": "reference",
        "system_prompt_sha256": [REFERENCE_SHA256["bigcodebench"]],
    }
    assert framing_settings("reference", REFERENCE_SYSTEM_PROMPT, mixed)[
        "system_prompt_sha256"] == sorted(REFERENCE_SHA256.values())
    assert framing_settings("numbered", REFERENCE_SYSTEM_PROMPT, tasks)["framing"] == "numbered"
    assert framing_settings("reference", NO_SYSTEM_PROMPT, tasks) == {
        "framing": "reference", "system_prompt": "none", "system_prompt_sha256": []}
    assert framing_settings("reference", SystemPrompt("file", "X", "x.md"), mixed)[
        "system_prompt_sha256"] == [text_sha256("X")]


# --------------------------------------------------------------------------- user prompts


def test_reference_framing_one_instruction() -> None:
    prompt = single_turn_prompt("Do X.\n", REFS[:1], TAX)
    assert prompt == (  # the prompt's own newline, then the reference's "\n\n"
        "Do X.\n" "\n\nAdditionally, ensure your code meets the following requirement: "
        + TAX.prompt(REFS[0])
    )
    assert prompt == single_turn_prompt("Do X.\n", REFS[:1], TAX, framing="reference")
    assert REFERENCE_HEADER_ONE + " " in prompt


def test_reference_framing_three_instructions() -> None:
    prompt = single_turn_prompt("Do X.\n", REFS[:3], TAX)
    assert prompt == (
        "Do X.\n" "\n\nAdditionally, ensure your code meets the following requirements:"
        f"\n1. {TAX.prompt(REFS[0])}\n2. {TAX.prompt(REFS[1])}\n3. {TAX.prompt(REFS[2])}"
    )
    assert prompt.count(REFERENCE_HEADER_MANY) == 1


def test_reference_framing_keeps_the_prompt_as_given() -> None:
    """The reference does not strip the task prompt: its trailing whitespace stays."""
    prompt = single_turn_prompt("Do X.\n```\n  \n", REFS[:1], TAX)
    assert prompt.startswith("Do X.\n```\n  \n\n\nAdditionally, ensure")
    numbered = single_turn_prompt("Do X.\n```\n  \n", REFS[:1], TAX, framing="numbered")
    assert numbered == f"Do X.\n```\n\n{SINGLE_TURN_HEADER}\n1. {TAX.prompt(REFS[0])}"


@pytest.mark.parametrize("framing", ["reference", "numbered"])
def test_no_instruction_is_the_plain_prompt(framing: str) -> None:
    assert single_turn_prompt("Do X.\n  ", [], TAX, framing=framing) == "Do X.\n  "  # type: ignore[arg-type]


def test_unknown_framing_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown framing"):
        single_turn_prompt("P", REFS[:1], TAX, framing="bulleted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown framing"):
        ProtocolRunner(ScriptedBackend(), [], framing="bulleted")  # type: ignore[arg-type]


def test_multi_turn_is_the_edit_prompt_alone() -> None:
    prompts = multi_turn_prompts("Do X.\n", REFS, TAX)
    assert prompts == ["Do X.\n", *(TAX.prompt(r, multi_turn=True) for r in REFS)]
    assert not any("Additionally" in p or SINGLE_TURN_HEADER in p for p in prompts)


# --------------------------------------------------------------------------- the runner


def run(tasks: list[AugmentedTask], **kwargs) -> tuple[ScriptedBackend, dict]:
    backend = ScriptedBackend()
    runner = ProtocolRunner(backend, tasks, protocols=["single", "multi"], ks=range(4),
                            **kwargs)
    return backend, {g.id: g for g in runner.run()}


def test_system_message_is_first_in_every_request_of_both_protocols() -> None:
    tasks = [augmented("BigCodeBench/1", "bigcodebench"),
             augmented("LiveCodeBench/2", "livecodebench"), augmented("HumanEval/3", "humaneval")]
    expected = {"BigCodeBench/1": BCB, "LiveCodeBench/2": LCB, "HumanEval/3": BCB}
    backend, gens = run(tasks)
    assert len(gens) == 3 * 2 * 4
    assert len(backend.requests) == 3 * (4 + 3)  # single k0 is multi turn 1: sent once
    for req in backend.requests:
        task_id = req.id.split("::")[0]
        assert req.messages[0].role == "system"
        assert req.messages[0].content == expected[task_id]
        assert [m.role for m in req.messages[1:]] == ["user", "assistant"] * (users(req) - 1) + [
            "user"]
    for gen in gens.values():
        assert gen.model_extra == {
            "framing": "reference",
            "system_prompt_sha256": text_sha256(expected[gen.task_id]),
        }
        assert all(turn.prompt != expected[gen.task_id] for turn in gen.turns)
    single = gens["BigCodeBench/1::single::k2::s0"].turns[0].prompt
    assert single == single_turn_prompt(tasks[0].prompt, REFS[:2], TAX)
    assert single.startswith("Write f for BigCodeBench/1.\n\n\nAdditionally, ensure your code "
                             "meets the following requirements:\n1. ")
    multi = [t.prompt for t in gens["LiveCodeBench/2::multi::k3::s0"].turns]
    assert multi == multi_turn_prompts(tasks[1].prompt, REFS, TAX)


def test_no_system_prompt_and_numbered_framing_is_the_earlier_behaviour() -> None:
    backend, gens = run([augmented("BigCodeBench/1", "bigcodebench")],
                        framing="numbered", system_prompt=NO_SYSTEM_PROMPT)
    assert all(m.role != "system" for req in backend.requests for m in req.messages)
    assert gens["BigCodeBench/1::single::k1::s0"].turns[0].prompt == (
        f"Write f for BigCodeBench/1.\n\n{SINGLE_TURN_HEADER}\n1. {TAX.prompt(REFS[0])}")
    assert {g.model_extra["system_prompt_sha256"] for g in gens.values()} == {None}
    assert {g.model_extra["framing"] for g in gens.values()} == {"numbered"}


def test_a_file_system_prompt_goes_to_every_task() -> None:
    spec = SystemPrompt("file", "You write Python.", "mine.md")
    backend, _ = run([augmented("LiveCodeBench/1", "livecodebench"), augmented("T/2")],
                     system_prompt=spec)
    assert {req.messages[0].content for req in backend.requests} == {"You write Python."}


def test_resume_continues_only_conversations_with_the_same_system_prompt() -> None:
    t = augmented("BigCodeBench/1", "bigcodebench")
    first = ScriptedBackend()
    done = {g.id: g for g in ProtocolRunner(first, [t], protocols=["multi"], ks=[1]).run()}
    same = ScriptedBackend()
    list(ProtocolRunner(same, [t], protocols=["multi"], ks=[1, 2], done=done).run())
    assert len(same.requests) == 1  # turn 3 only
    other = ScriptedBackend()
    list(ProtocolRunner(other, [t], protocols=["multi"], ks=[1, 2], done=done,
                        system_prompt=NO_SYSTEM_PROMPT).run())
    assert len(other.requests) == 3  # the conversation is made again from turn 1
    assert all(m.role != "system" for req in other.requests for m in req.messages)


def test_the_cache_key_covers_the_system_message() -> None:
    backend = create_backend(BackendConfig(kind="openai", model="m", no_cache=True,
                                           base_url="http://127.0.0.1:9/v1"))
    try:
        user = Message(role="user", content="P")
        requests = [Request(id="a", messages=(user,)),
                    Request(id="a", messages=(Message(role="system", content=BCB), user)),
                    Request(id="a", messages=(Message(role="system", content=LCB), user))]
        keys = {backend._call(req).key for req in requests}
    finally:
        backend.close()
    assert len(keys) == 3


# --------------------------------------------------------------------------- the command


def write_tasks(path: Path) -> Path:
    tasks = [augmented("BigCodeBench/1", "bigcodebench"),
             augmented("LiveCodeBench/2", "livecodebench")]
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    return path


@pytest.fixture
def scripted(monkeypatch) -> ScriptedBackend:
    from prefjudge.cli import generate_cmd

    backend = ScriptedBackend()
    monkeypatch.setattr(generate_cmd, "create_backend", lambda config: backend)
    return backend


def generate(*args: object) -> object:
    return invoke("generate", *args, "--no-cache")


def test_cli_default_is_the_reference_framing(tmp_path: Path, scripted: ScriptedBackend) -> None:
    tasks = write_tasks(tmp_path / "aug.jsonl")
    out = tmp_path / "gens.jsonl"
    result = generate(tasks, "--k", "0..2", "-o", out)
    assert result.exit_code == 0, result.output
    by_task = {"BigCodeBench/1": BCB, "LiveCodeBench/2": LCB}
    for req in scripted.requests:
        assert req.messages[0].role == "system"
        assert req.messages[0].content == by_task[req.id.split("::")[0]]
    records = {r["id"]: r for r in read_existing(out)}
    assert records["BigCodeBench/1::single::k1::s0"]["turns"][0]["prompt"].endswith(
        f"\n\n{REFERENCE_HEADER_ONE} {TAX.prompt(REFS[0])}")
    assert records["LiveCodeBench/2::multi::k2::s0"]["system_prompt_sha256"] == (
        REFERENCE_SHA256["livecodebench"])
    assert {r["framing"] for r in records.values()} == {"reference"}
    settings = json.loads(binding_path(out).read_text())["settings"]
    assert settings["framing"] == "reference" and settings["system_prompt"] == "reference"
    assert settings["system_prompt_sha256"] == sorted(REFERENCE_SHA256.values())

    # resuming with another framing or system prompt is refused, naming the setting
    for extra, setting in ((["--framing", "numbered"], "setting framing"),
                           (["--system-prompt", "none"], "setting system_prompt")):
        calls = len(scripted.calls)
        refused = generate(tasks, "--k", "0..2", "-o", out, *extra)
        assert refused.exit_code == 1, refused.output
        text = " ".join(refused.output.split())
        assert setting in text and "--force-new" in text and "--framing and --system-prompt" in text
        assert len(scripted.calls) == calls
    again = generate(tasks, "--k", "0..2", "-o", out)
    assert again.exit_code == 0 and "nothing new" in again.output


def test_cli_numbered_and_no_system_prompt_resume_earlier_outputs(
    tmp_path: Path, scripted: ScriptedBackend
) -> None:
    tasks = write_tasks(tmp_path / "aug.jsonl")
    out = tmp_path / "gens.jsonl"
    old = ["--k", "0..1", "-o", out, "--framing", "numbered", "--system-prompt", "none"]
    made = generate(tasks, *old)
    assert made.exit_code == 0, made.output
    settings = json.loads(binding_path(out).read_text())["settings"]
    assert not {"framing", "system_prompt", "system_prompt_sha256"} & set(settings)
    assert all(m.role != "system" for req in scripted.requests for m in req.messages)
    assert read_existing(out)[0]["framing"] == "numbered"
    single = next(r for r in read_existing(out) if r["id"] == "BigCodeBench/1::single::k1::s0")
    assert SINGLE_TURN_HEADER in single["turns"][0]["prompt"]

    # the new default refuses such an output and says how to resume it
    refused = generate(tasks, "--k", "0..1", "-o", out)
    assert refused.exit_code == 1
    text = " ".join(refused.output.split())
    assert 'setting framing: "(not set)" then, "reference" now' in text
    assert "--framing numbered --system-prompt none" in text and "--force-new" in text
    resumed = generate(tasks, *old)
    assert resumed.exit_code == 0 and "nothing new" in resumed.output
    fresh = generate(tasks, "--k", "0..1", "-o", out, "--force-new")
    assert fresh.exit_code == 0, fresh.output
    assert {r["framing"] for r in read_existing(out)} == {"reference"}


def test_cli_system_prompt_file_and_bad_values(tmp_path: Path, scripted: ScriptedBackend) -> None:
    tasks = write_tasks(tmp_path / "aug.jsonl")
    mine = tmp_path / "system.md"
    mine.write_text("You write Python.\n", encoding="utf-8")
    out = tmp_path / "gens.jsonl"
    result = generate(tasks, "--k", "0", "--protocol", "single", "-o", out,
                      "--system-prompt", mine)
    assert result.exit_code == 0, result.output
    assert {req.messages[0].content for req in scripted.requests} == {"You write Python."}
    settings = json.loads(binding_path(out).read_text())["settings"]
    assert settings["system_prompt"] == "file"
    assert settings["system_prompt_sha256"] == [text_sha256("You write Python.")]
    mine.write_text("You write Rust.\n", encoding="utf-8")
    changed = generate(tasks, "--k", "0", "--protocol", "single", "-o", out,
                       "--system-prompt", mine)
    assert changed.exit_code == 1 and "setting system_prompt_sha256" in changed.output
    missing = generate(tasks, "--system-prompt", tmp_path / "nope.md", "-o", tmp_path / "x.jsonl")
    assert missing.exit_code == 2 and "no such file" in missing.output
    bad = generate(tasks, "--framing", "bulleted", "-o", tmp_path / "x.jsonl")
    assert bad.exit_code == 2 and "bulleted" in bad.output


def test_cli_help_names_the_options() -> None:
    result = invoke("generate", "--help", env=WIDE)
    text = " ".join(result.output.split())
    assert "--framing [reference|numbered]" in text
    assert "--system-prompt reference|none|PATH" in text
    assert text.count("[default: reference]") == 2


# --------------------------------------------------------------------------- over HTTP


def test_the_openai_backend_sends_the_system_message_first(fake_server, tmp_path: Path) -> None:
    """Through the HTTP backend: the body's first message, and the cache keeps them apart."""
    tasks = write_tasks(tmp_path / "aug.jsonl")
    cache = tmp_path / "cache.sqlite"
    base = ["generate", str(tasks), "--k", "0..1", "--backend", "openai", "--base-url",
            fake_server.url, "--model", "fake", "--cache", str(cache), "--max-concurrency", "1"]
    result = invoke(*base, "-o", str(tmp_path / "a.jsonl"))
    assert result.exit_code == 0, result.output
    assert fake_server.calls == 2 * (2 + 1)  # per task: single k0 (= multi t1), k1, multi t2
    firsts = [body["messages"][0] for body in fake_server.bodies]
    assert {m["role"] for m in firsts} == {"system"}
    assert {m["content"] for m in firsts} == {BCB, LCB}
    # the same prompts without the system message are other cache entries: asked again
    result = invoke(*base, "-o", str(tmp_path / "b.jsonl"),
                    "--system-prompt", "none")
    assert result.exit_code == 0, result.output
    assert fake_server.calls == 12
    assert all(m["role"] != "system" for body in fake_server.bodies[6:]
               for m in body["messages"])
    # and with it again, all from the cache
    result = invoke(*base, "-o", str(tmp_path / "c.jsonl"))
    assert result.exit_code == 0, result.output
    assert fake_server.calls == 12


# --------------------------------------------------------------------------- a real model


@pytest.mark.vllm
def test_reference_framing_real_model(vllm_server, tmp_path: Path) -> None:
    """SmolLM2-135M behind the real vLLM server answers reference-framed requests."""
    pytest.importorskip("openai")
    tasks = tmp_path / "aug.jsonl"
    tasks.write_text(augmented("BigCodeBench/1", "bigcodebench", n=1).model_dump_json() + "\n")
    out = tmp_path / "gens.jsonl"
    result = invoke(
        "generate", str(tasks), "--k", "0..1", "-o", str(out), "--backend", "openai",
        "--base-url", vllm_server.url, "--model", vllm_server.model, "--max-tokens", "8",
        "--cache", str(tmp_path / "cache.sqlite"),
    )
    assert result.exit_code == 0, result.output
    records = read_existing(out)
    assert len(records) == 4
    for rec in records:
        assert rec["error"] is None, rec["error"]
        assert rec["response"].strip()
        assert rec["system_prompt_sha256"] == REFERENCE_SHA256["bigcodebench"]
