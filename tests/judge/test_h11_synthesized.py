"""Performance inputs from a generator a model writes ("synthesizing a synthesizer", EvalPerf).

The first tests need no sandbox: the prompt is the template filled with the task, and a
reply's code is found (and only parsed, never run) with a scripted client. The others run
the real sandbox and the real reference of Mbpp/644 (``reverse_Array_Upto_K``): hostile
generators are refused with a reason and never run outside the sandbox; a good one gives
inputs that pass the same acceptance as scaled ones and come back from their record. The
last asks the real tiny model served by vLLM and checks the path's honest outcome.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefjudge.backends.contract import Request, Result, Sampling
from prefjudge.judge.facts.perf_inputs import synthesized
from prefjudge.judge.facts.perf_inputs.accept import MAX_INPUT_CHARS, REF_BUDGET_S
from prefjudge.judge.facts.perf_inputs.scaling import input_digest
from prefjudge.judge.facts.perf_inputs.synthesized import (
    Synthesis,
    from_record,
    generator_request,
    ladder_scales,
    load_template,
    parse_generator,
    run_generator,
    synthesize,
    synthesized_perf_inputs,
)
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.sandbox.references import reference_outputs
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)
GOOD = """\
import random


def perf_input(scale: int) -> list:
    rng = random.Random(scale)
    n = 10 * scale
    return [[rng.randint(-1000, 1000) for _ in range(n)], n // 2]
"""
SMALL_TASK = Task(task_id="HumanEval/0", prompt="def twice(x):\n    '''Twice x.'''\n",
                  entry_point="twice", test_format="evalplus",
                  canonical_solution="def twice(x):\n    return 2 * x\n",
                  base_inputs=[[1], [2], [3]], plus_inputs=[[10**6]])


class Scripted:
    """A client that answers every request with the same text (for prompt and parse tests)."""

    def __init__(self, text: str | None, error: str | None = None) -> None:
        self.model_id = "scripted"
        self.text, self.error = text, error
        self.finish = "stop"
        self.asked: list[Request] = []

    def generate(self, requests):
        self.asked.extend(requests)
        return [Result(request_id=r.id, model=self.model_id, text=self.text, error=self.error,
                       finish_reason=self.finish) for r in requests]


def reply(code: str) -> str:
    return f"Here is a generator.\n\n```python\n{code}```\nIt grows with scale.\n"


def no_sandbox(payload, limits):
    raise AssertionError("the sandbox must not be asked for anything here")


# -- the prompt and the reply (no sandbox) -------------------------------------------------------


def test_the_prompt_is_the_template_filled_with_the_task():
    system, _ = load_template()
    request = generator_request(SMALL_TASK, None, Sampling(max_tokens=64))
    assert request.id == "perf-input:HumanEval/0" and request.sampling.max_tokens == 64
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == system and "synthesizing a synthesizer" in system
    text = request.messages[1].content
    assert "{{" not in text and "`twice`" in text and "def twice(x)" in text
    assert "- `[1]`" in text and "- `[2]`" in text and str(MAX_INPUT_CHARS) in text
    assert "def perf_input(scale: int) -> list:" in text


def test_a_template_with_an_unknown_or_missing_placeholder_is_refused(tmp_path, monkeypatch):
    (tmp_path / "prompts").mkdir()
    bad = tmp_path / "prompts" / synthesized.TEMPLATE
    bad.write_text("system\n=== user ===\n{{prompt}} {{entry_point}} {{examples}} {{max_char}}")
    monkeypatch.setattr(synthesized, "data_dir", lambda name: tmp_path)
    with pytest.raises(ValueError, match="max_char"):
        load_template()
    bad.write_text("no separator {{prompt}}")
    with pytest.raises(ValueError, match="no line"):
        load_template()


def test_the_code_is_found_in_a_reply_and_only_parsed(tmp_path):
    marker = tmp_path / "ran"
    code = (f"open({str(marker)!r}, 'w').write('x')\n\n\n"
            "def perf_input(scale):\n    return [scale]\n")
    source, why = parse_generator(reply(code))
    assert source == code and why == ""
    assert not marker.exists()  # parsed, never run
    # a Python block first, whatever comes before it; plain code without fences too
    two = "```\nprint('notes')\n```\n" + reply("def perf_input(scale):\n    return [1]\n")
    assert parse_generator(two)[0] == "def perf_input(scale):\n    return [1]\n"
    assert parse_generator("def perf_input(s):\n    return [s]")[0] is not None
    # a reply cut short inside its block still gives the code written so far
    assert parse_generator("```python\ndef perf_input(s):\n    return [s]\n")[0] is not None


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ("I cannot help with that.", "the reply (no code block)"),
    (reply("def other(scale):\n    return [scale]\n"), "none of its 1 code block(s)"),
    (reply("def perf_input(scale):\n    return [scale\n"), "none of its 1 code block(s)"),
    (reply("def perf_input():\n    return [1]\n"), "none of its 1 code block(s)"),
])
def test_a_reply_without_a_usable_generator_gives_none_and_why(text, why):
    source, reason = parse_generator(text)
    assert source is None and why in reason


def test_a_failed_call_or_a_reply_without_code_never_reaches_the_sandbox():
    failed = synthesize(SMALL_TASK, Scripted(None, "request_failed: 503"), no_sandbox, None)
    assert failed.perf is None and "the model's call failed: request_failed: 503" in failed.reason
    client = Scripted("Sure! Just use big numbers.")
    found = synthesize(SMALL_TASK, client, no_sandbox, None)
    assert found.perf is None and found.source is None and "no code block" in found.reason
    assert found.model == "scripted" and len(found.prompt_sha256) == 64
    assert [r.id for r in client.asked] == ["perf-input:HumanEval/0"]
    assert found.record() is None
    assert synthesized_perf_inputs(SMALL_TASK, client, no_sandbox, None) is None
    # a reply cut at its token limit inside the code says so
    cut = Scripted("```python\ndef perf_input(scale):\n    return [[1] * scale,")
    cut.finish = "length"
    found = synthesize(SMALL_TASK, cut, no_sandbox, None)
    assert found.perf is None and found.reason.endswith("(the reply was cut at its token limit)")


# -- real sandboxes, real reference -------------------------------------------------------------


@pytest.fixture(scope="module")
def task(shared_data: Path) -> Task:
    tasks = load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")
    return tasks["Mbpp/644"]


@pytest.fixture(scope="module")
def reference(task, pool):
    return reference_outputs(task, LIMITS, pool.run)


HOSTILE = {
    "loops forever": ("def perf_input(scale):\n    while True:\n        pass\n",
                      "at scale 1: exceeded 2 s of CPU"),
    "returns a set": ("def perf_input(scale):\n    return [{1, 2, 3}, 1]\n",
                      "not plain JSON data"),
    "returns an object": ("def perf_input(scale):\n    return [object(), 1]\n",
                          "not plain JSON data"),
    "returns no list": ("def perf_input(scale):\n    return 7\n",
                        "returned a int, not a list of arguments"),
    "returns too much": ("def perf_input(scale):\n    return [list(range(10**5 * scale)), 1]\n",
                         f"more than {MAX_INPUT_CHARS}"),
    "floods stdout": ("import os\n\ndef perf_input(scale):\n    while True:\n"
                      "        os.write(1, b'x' * 10**5)\n", "output limit exceeded"),
    "is not deterministic": ("import random\n\ndef perf_input(scale):\n"
                             "    return [[random.random() for _ in range(9)], 3]\n",
                             "not deterministic"),
}


@pytest.mark.shared_data
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_generator_is_refused_with_its_reason(kind, task, pool):
    code, why = HOSTILE[kind]
    found = synthesize(task, Scripted(reply(code)), pool.run, None)
    assert found.perf is None and found.source == code
    assert why in found.reason, found.reason
    assert "0 scale(s) accepted" in found.reason


@pytest.mark.shared_data
def test_a_generator_that_touches_files_outside_runs_only_in_the_sandbox(task, pool, tmp_path):
    secret, marker = tmp_path / "secret.txt", tmp_path / "written"
    secret.write_text("do not read")
    code = (f"open({str(marker)!r}, 'w').write('x')\n\n\ndef perf_input(scale):\n"
            f"    return [[open({str(secret)!r}).read()], 1]\n")
    client = Scripted(reply(code))
    found = synthesize(task, client, pool.run, None)
    assert found.perf is None and "failed at import" in found.reason
    assert "FileNotFoundError" in found.reason or "PermissionError" in found.reason
    assert not marker.exists()  # neither here nor through the sandbox
    reading = code.split("\n", 1)[1]  # only the read, at the call
    found = synthesize(task, Scripted(reply(reading)), pool.run, None)
    assert found.perf is None and "at scale 1: raised" in found.reason


@pytest.mark.shared_data
def test_inputs_the_reference_refuses_are_not_accepted(task, pool):
    # k larger than the list breaks the task's contract (0 < k <= len(input))
    code = "def perf_input(scale):\n    return [list(range(scale)), scale + 1]\n"
    found = synthesize(task, Scripted(reply(code)), pool.run, None)
    assert found.perf is None
    assert "fails or runs too long on the scale-1 input" in found.reason


@pytest.mark.shared_data
def test_a_good_generator_gives_accepted_inputs_that_come_back_from_their_record(
        task, reference, pool):
    client = Scripted(reply(GOOD))
    found = synthesize(task, client, pool.run, reference)
    perf = found.perf
    assert perf is not None, found.reason
    assert perf.strategy == "model" and perf.seed == ("model", 0)
    factors = [step.factor for step in perf.steps]
    assert len(factors) >= 3 and factors == ladder_scales()[:len(factors)]
    for step, inp in zip(perf.steps, perf.inputs, strict=True):
        assert step.sha256 == input_digest(inp) and 0 < step.ref_cpu_s <= REF_BUDGET_S
        assert len(inp[0]) == 10 * step.factor and 0 < inp[1] <= len(inp[0])  # the contract
        assert len(json.dumps(inp)) <= MAX_INPUT_CHARS
    # the ladder stopped where the generator's input grew too long, and says so
    assert f"more than {MAX_INPUT_CHARS}" in found.reason
    # the dearest of the task's own inputs was among the examples the model was shown
    prompt = client.asked[0].messages[1].content
    assert "[[1, 2, 3, 4, 5, 6], 4]" in prompt
    # reproducible: the record names the model and keeps the generator; it runs again
    record = json.loads(json.dumps(found.record()))
    assert record["model"] == "scripted" and record["generator"] == GOOD
    again = from_record(task, record, pool.run)
    assert again is not None and again.inputs == perf.inputs and again.steps == perf.steps
    record["steps"][-1][3] = "0" * 64
    assert from_record(task, record, pool.run) is None
    record["generator"] = GOOD.replace("10 * scale", "11 * scale")
    assert from_record(task, record, pool.run) is None  # its digest no longer matches
    # the inputs run as any task's do: the reference gives outputs on the measured steps
    scaled = perf.task(task, perf.measured())
    assert len(reference_outputs(scaled, LIMITS, pool.run).lines) == len(perf.measured())


@pytest.mark.shared_data
def test_the_generator_runs_at_every_ladder_scale_until_its_input_is_too_long(pool):
    generated = run_generator(GOOD, ladder_scales(), pool.run)
    assert generated.scales == (1, 4, 16, 64, 256, 1024) and not generated.environment
    assert generated.problem.startswith("at scale 4096: returned")


# -- the real tiny model ----------------------------------------------------------------------


@pytest.mark.vllm
@pytest.mark.shared_data
def test_the_served_tiny_model_goes_the_whole_path(vllm_server, task, reference, pool):
    pytest.importorskip("openai")
    from prefjudge.backends.openai_http import OpenAIBackend

    with OpenAIBackend(model=vllm_server.model, base_url=vllm_server.url) as backend:
        found = synthesize(task, backend, pool.run, reference, Sampling(max_tokens=256))
    assert isinstance(found, Synthesis) and found.model == backend.model_id
    assert found.reply is not None  # the model answered
    if found.perf is None:  # the usual outcome for a 135M model: none, with the reason
        assert found.reason and found.record() is None
        assert (found.source is None) == ("perf_input(scale)" in found.reason)
    else:
        assert found.perf.strategy == "model" and len(found.perf.steps) >= 2
        assert all(step.ref_cpu_s <= REF_BUDGET_S for step in found.perf.steps)
        assert from_record(task, found.record(), pool.run) is not None
