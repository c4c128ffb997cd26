"""The persona study end to end with a real (tiny) model on MBPP+ and HumanEval+ tasks.

rewrite (with the sandbox reference check) → generate for two "models" on the original
and the persona prompts → user-aware comparison → flip table. SmolLM2-135M stands in for
every model (served once for the session by the real vLLM server fixture), so the point
is that every stage runs for real and the bookkeeping holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import run_cli, run_cli_text

from prefjudge.io import read_existing
from prefjudge.persona.rewrite import names_entry_point, split_prompt
from prefjudge.records import PersonaComparison, Task
from prefjudge.scoring.tasks import load_tasks

pytestmark = pytest.mark.vllm

MBPP = "benchmarks/evalplus/MbppPlus-v0.2.0.jsonl.gz"
HUMANEVAL = "benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"




def served(server, tmp_path: Path) -> list[str]:
    """The backend options of every command here: the session's real vLLM server."""
    return ["--backend", "openai", "--base-url", server.url, "--model", server.model,
            "--cache", str(tmp_path / "cache.sqlite")]


def test_persona_study_on_mbpp_and_humaneval(
    shared_data: Path, vllm_server, tmp_path: Path
) -> None:
    # a natural-language prompt (full rewrite) and one with code context (prefix mode)
    tasks = (list(load_tasks(shared_data / MBPP).values())[:1]
             + list(load_tasks(shared_data / HUMANEVAL).values())[:1])
    original = tmp_path / "tasks.jsonl"
    original.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    cache = served(vllm_server, tmp_path)
    rewritten = tmp_path / "tasks_beginner.jsonl"
    run_cli("persona", "rewrite", str(original), "--persona", "beginner", "-o", str(rewritten),
            "--max-attempts", "2", "--max-tokens", "320", *cache)  # a rambling reply stops
    accepted = [Task.model_validate(r) for r in read_existing(rewritten)]
    rejected = read_existing(tmp_path / "tasks_beginner.rejected.jsonl")
    summary = json.loads((tmp_path / "tasks_beginner.summary.json").read_text())
    assert len(accepted) + len(rejected) == 2
    assert summary["accepted"] == len(accepted) and summary["rejected"] == len(rejected)
    assert all(r["reasons"] and r["attempts"] == 2 for r in rejected)
    assert accepted, f"the tiny model's rewrites were all rejected: {rejected}"
    by_id = {t.task_id: t for t in tasks}
    for task in accepted:
        meta = task.metadata["persona"]
        source = by_id[task.task_id]
        assert meta["original_prompt"] == source.prompt
        assert meta["reference_check"] == "pass"  # ran in the sandbox, not assumed
        assert meta["preservation"]["same_goal"] and meta["preservation"]["same_solutions"]
        assert names_entry_point(task, task.prompt)
        parts = split_prompt(source.prompt)
        assert meta["mode"] == parts.mode
        if parts.mode == "prefix":
            assert task.prompt.endswith(source.prompt.lstrip("\n"))
        else:
            assert task.prompt.endswith(parts.examples)
        assert (task.tests, task.entry_point, task.canonical_solution) == (
            source.tests, source.entry_point, source.canonical_solution)
    kept = tmp_path / "tasks_kept.jsonl"
    kept.write_text("".join(by_id[t.task_id].model_dump_json() + "\n" for t in accepted))
    gens = {}
    for condition, file in (("original", kept), ("persona", rewritten)):
        for name, sampling in (("smol-greedy", []),
                               ("smol-t1", ["--temperature", "1.0", "--seed", "3"])):
            out = tmp_path / f"{condition}-{name}.jsonl"
            run_cli("generate", str(file), "--k", "0", "--protocol", "single", "--name", name,
                    "-o", str(out), "--max-tokens", "200", *sampling, *cache)
            records = read_existing(out)
            assert len(records) == len(accepted) and {r["model"] for r in records} == {name}
            gens[condition, name] = out
    comparisons = tmp_path / "cmp.jsonl"
    output = run_cli_text("persona", "compare", str(gens["persona", "smol-greedy"]),
                     str(gens["persona", "smol-t1"]), "--persona", "beginner",
                     "--tasks", str(rewritten), "--original",
                     str(gens["original", "smol-greedy"]), str(gens["original", "smol-t1"]),
                     "--original-tasks", str(kept), "-o", str(comparisons), "--bootstrap", "200",
                     "--max-tokens", "640", *cache)
    rows = [PersonaComparison.model_validate(r) for r in read_existing(comparisons)]
    assert sorted(r.condition for r in rows) == ["original"] * len(accepted) + [
        "persona"] * len(accepted)
    for row in rows:
        assert row.persona == ("beginner" if row.condition == "persona" else None)
        assert row.cost.requests == 2
        if row.status == "ok":
            assert len(row.dimensions) == 7
    flips = json.loads((tmp_path / "cmp.flips.json").read_text())
    assert [r["dimension"] for r in flips["rows"]][-1] == "overall"
    assert len(flips["rows"]) == 8 and set(flips["models"]) == {"smol-greedy", "smol-t1"}
    assert (tmp_path / "cmp.flips.png").stat().st_size > 1000
    assert "preference flips:" in output


def test_profile_from_a_description_with_a_real_model(
    vllm_server, tmp_path: Path
) -> None:
    from prefjudge.persona.profile import load_persona

    out = tmp_path / "teacher.yaml"
    run_cli("persona", "profile", "I teach Python to high-school students and want code "
            "they can follow, with comments.", "--name", "teacher", "-o", str(out),
            *served(vllm_server, tmp_path))
    persona = load_persona(out)  # validated: every field, priorities on known dimensions
    assert persona.name == "teacher" and persona.description.startswith("I teach Python")
    assert persona.output.values
