"""The augment and generate use cases, called directly (no click): records, outcomes, notes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pj_scripted_backend import ScriptedBackend, user_turns

from prefjudge.backends import BackendError, Request, Result
from prefjudge.io import read_existing
from prefjudge.records import AugmentedTask
from prefjudge.reporting import Advance, SilentReporter, StageError
from prefjudge.scoring.sources import SourceError
from prefjudge.testbed.augment.run import AugmentSettings, augment_file
from prefjudge.testbed.generation import GenerateSettings, generate_file, read_augmented
from prefjudge.testbed.protocols import NO_SYSTEM_PROMPT

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_TASKS = ROOT / "datasets" / "sample" / "tasks.jsonl"
N_SAMPLE = sum(1 for line in SAMPLE_TASKS.read_text().splitlines() if line.strip())


class RecordingReporter(SilentReporter):
    """A silent reporter that also keeps its progress bars: ``[description, total, done]``."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[list[Any]] = []

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Advance]:
        bar: list[Any] = [description, total, 0]
        self.bars.append(bar)

        def advance(n: int) -> None:
            bar[2] += n

        yield advance

    def texts(self, level: str) -> list[str]:
        return [message for kind, message in self.messages if kind == level]


def selector_reply(request: Request) -> str:
    """A selector model that always picks doc_4 and style_3 (a valid line length)."""
    del request
    return json.dumps(
        {
            "instructions": [
                {"id": "doc_4", "params": []},
                {"id": "style_3", "params": [{"name": "line_length", "value": 79}]},
            ]
        }
    )


def augmented_sample(folder: Path, limit: int = 3, k: int = 2) -> Path:
    out = folder / "aug.jsonl"
    augment_file(AugmentSettings(str(SAMPLE_TASKS), out, k=k, limit=limit), None, SilentReporter())
    return out


# --------------------------------------------------------------------------- augment


def test_augment_rule_writes_resumes_and_summarises(tmp_path: Path) -> None:
    out = tmp_path / "aug.jsonl"
    settings = AugmentSettings(source=str(SAMPLE_TASKS), output=out, k=2, seed=0)
    reporter = RecordingReporter()
    outcome = augment_file(settings, None, reporter)
    records = [AugmentedTask.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(records) == N_SAMPLE == outcome.tasks == outcome.written
    assert all(len(r.instructions) == 2 and r.selector == "rule" for r in records)
    assert (outcome.resumed, outcome.selector_calls) == (0, 0)
    assert outcome.summary_file == tmp_path / "aug.summary.json"
    written = json.loads(outcome.summary_file.read_text())
    assert written == json.loads(json.dumps(outcome.summary))
    assert written["tasks_file"] == str(SAMPLE_TASKS) and written["instructions"] == 2 * N_SAMPLE
    assert reporter.messages == [] and reporter.bars == []

    again = RecordingReporter()
    outcome = augment_file(settings, None, again)
    assert (outcome.written, outcome.resumed) == (0, N_SAMPLE)
    assert again.texts("note") == [f"resuming: {N_SAMPLE} tasks already in {out}, 0 to do"]
    assert len(out.read_text().splitlines()) == N_SAMPLE


def test_augment_llm_selector_uses_the_given_backend(tmp_path: Path) -> None:
    backend = ScriptedBackend(selector_reply, model_id="selector-model")
    out = tmp_path / "aug.jsonl"
    settings = AugmentSettings(str(SAMPLE_TASKS), out, selector="llm", k=2, limit=3)
    reporter = RecordingReporter()
    outcome = augment_file(settings, backend, reporter)
    assert outcome.selector_calls == 3 == len(backend.requests)
    assert reporter.bars == [["selector calls", 3, 3]]
    records = read_existing(out)
    assert {r["selector"] for r in records} == {"llm:selector-model"}
    assert all({i["id"] for i in r["instructions"]} == {"doc_4", "style_3"} for r in records)
    binding = json.loads(out.with_name(out.name + ".journal.json").read_text())
    assert binding["settings"]["model"]["model"] == "selector-model"
    assert binding["settings"]["sampling"]["max_tokens"] == 512
    # the rule selector never asks the model, and binds no model
    rule_out = tmp_path / "rule.jsonl"
    augment_file(AugmentSettings(str(SAMPLE_TASKS), rule_out, limit=3), backend, SilentReporter())
    assert len(backend.requests) == 3
    assert (
        "model"
        not in json.loads(rule_out.with_name("rule.jsonl.journal.json").read_text())["settings"]
    )


def test_augment_failures_are_stage_errors(tmp_path: Path) -> None:
    out = tmp_path / "aug.jsonl"
    with pytest.raises(StageError, match="llm selector needs a model"):
        augment_file(
            AugmentSettings(str(SAMPLE_TASKS), out, selector="llm"), None, SilentReporter()
        )
    with pytest.raises(StageError) as missing:
        augment_file(AugmentSettings(str(tmp_path / "nope.jsonl"), out), None, SilentReporter())
    assert isinstance(missing.value.__cause__, SourceError)  # the command names TASKS
    augment_file(AugmentSettings(str(SAMPLE_TASKS), out, seed=7, limit=2), None, SilentReporter())
    with pytest.raises(StageError, match="setting seed: 7 then, 8 now"):
        augment_file(AugmentSettings(str(SAMPLE_TASKS), out, seed=8), None, SilentReporter())
    assert len(out.read_text().splitlines()) == 2


# --------------------------------------------------------------------------- generate


def test_generate_writes_every_record_and_resumes(tmp_path: Path) -> None:
    augmented = augmented_sample(tmp_path)
    out = tmp_path / "gens.jsonl"
    settings = GenerateSettings(augmented, out, ks=(0, 1, 2))
    backend = ScriptedBackend(model_id="gen-model")
    reporter = RecordingReporter()
    outcome = generate_file(settings, backend, reporter)
    records = read_existing(out)
    assert len(records) == 3 * 2 * 3
    assert dict(outcome.written) == {"single": 9, "multi": 9} and outcome.failed == 0
    assert outcome.model_name == "gen-model" and {r["model"] for r in records} == {"gen-model"}
    multi = next(r for r in records if r["id"].endswith("::multi::k2::s0"))
    assert multi["response"] == "reply 3" and len(multi["turns"]) == 3
    # single k = 0 and multi turn 1 are the same request: sent once
    assert reporter.bars == [["model turns", 9 + 9, 9 + 9]] and len(backend.requests) == 3 * 5
    assert reporter.texts("note") == [f"wrote {out}: 9 multi-turn, 9 single-turn"]
    assert reporter.texts("warn") == []
    binding = json.loads(out.with_name("gens.jsonl.journal.json").read_text())
    assert binding["settings"]["name"] == "gen-model" and binding["settings"]["framing"] == (
        "reference"
    )

    again = RecordingReporter()
    outcome = generate_file(settings, backend, again)
    assert outcome.summary == "nothing new" and outcome.resumed == 18
    assert again.texts("note") == [
        f"resuming {out}: 18 record(s) there, 0 generation(s) to go",
        f"wrote {out}: nothing new",
    ]
    assert len(backend.requests) == 15


def test_generate_failed_calls_skipped_k_and_retries(tmp_path: Path) -> None:
    augmented = augmented_sample(tmp_path, k=1)
    out = tmp_path / "gens.jsonl"
    settings = GenerateSettings(
        augmented,
        out,
        protocols=("multi",),
        ks=(0, 1, 3),
        model_name="named",
        framing="numbered",
        system_prompt=NO_SYSTEM_PROMPT,
    )
    failing = ScriptedBackend(lambda request: None if user_turns(request) == 2 else "ok")
    reporter = RecordingReporter()
    outcome = generate_file(settings, failing, reporter)
    assert outcome.failed == 3 and outcome.skipped == tuple(
        (task.task_id, 3) for task in read_augmented(augmented, (0,))
    )
    assert reporter.texts("warn") == [
        "skipped k=3 for 3 task(s) with fewer than 3 instructions",
        "3 generation(s) failed: empty response with an 'error' field; their turns say why",
    ]
    records = read_existing(out)
    assert {r["model"] for r in records} == {"named"}
    assert sorted(bool(r["error"]) for r in records) == [False] * 3 + [True] * 3

    retry = RecordingReporter()
    outcome = generate_file(
        replace(settings, retry_errors=True),
        ScriptedBackend(),
        retry,
    )
    assert outcome.retried == 3 and outcome.failed == 0 and dict(outcome.written) == {"multi": 3}
    assert retry.texts("note")[0] == "retrying 3 failed generation(s)"
    assert not any(r["error"] for r in read_existing(out))


class BrokenAfterFirstCall(ScriptedBackend):
    """A backend that stops working after its first batch (e.g. the server went away)."""

    def generate(self, requests: Sequence[Request], *, on_result: Any = None) -> list[Result]:
        if self.calls:
            raise BackendError("the server went away")
        return super().generate(requests, on_result=on_result)


class EmbeddedScripted(ScriptedBackend):
    kind = "embedded"


def test_generate_errors_and_notes(tmp_path: Path) -> None:
    augmented = augmented_sample(tmp_path)
    out = tmp_path / "gens.jsonl"
    settings = GenerateSettings(augmented, out, ks=(0, 1))
    with pytest.raises(StageError, match=r"went away \(records written so far are kept\)"):
        generate_file(settings, BrokenAfterFirstCall(), SilentReporter())
    kept = {r["id"].split("::", 1)[1] for r in read_existing(out)}  # round 1 was written
    assert kept == {"single::k0::s0", "single::k1::s0", "multi::k0::s0"}

    # an output made with the earlier framing: the refusal says how to resume it
    old = tmp_path / "old.jsonl"
    numbered = GenerateSettings(
        augmented, old, ks=(0,), framing="numbered", system_prompt=NO_SYSTEM_PROMPT
    )
    generate_file(numbered, ScriptedBackend(), SilentReporter())
    with pytest.raises(StageError) as refused:
        generate_file(
            GenerateSettings(augmented, old, ks=(0,)), ScriptedBackend(), SilentReporter()
        )
    assert "--framing numbered --system-prompt none" in str(refused.value)

    reporter = RecordingReporter()
    generate_file(
        GenerateSettings(augmented, tmp_path / "e.jsonl", ks=(0,)), EmbeddedScripted(), reporter
    )
    assert any("smoke model" in text for text in reporter.texts("warn"))

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(StageError, match="no tasks"):
        generate_file(
            GenerateSettings(empty, tmp_path / "x.jsonl"), ScriptedBackend(), SilentReporter()
        )
