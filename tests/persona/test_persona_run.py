"""The persona stages as use cases (prefjudge.persona.run), called without the command line.

Real parts only: the bundled sample tasks and generations, real journals, and the scripted
model of tests/helpers (it sees the rendered prompts, as a model would).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pj_scripted_backend import ScriptedBackend, user_text

from prefjudge.backends import Request, Sampling
from prefjudge.persona.run import (
    SHOWN_COLUMNS,
    CompareSettings,
    FlipsSettings,
    ProfileSettings,
    RewriteSettings,
    compare_files,
    flips_file,
    profile_file,
    rejected_path,
    rewrite_file,
)
from prefjudge.records import NO_EVIDENCE, Verdict, battle_of
from prefjudge.reporting import SilentReporter, StageError

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"
TASKS = SAMPLE / "tasks.jsonl"
NOT_EQUIVALENT = "sample/celsius"


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rewriting_model(request: Request) -> Any:
    """Rewrites every task faithfully; judges the celsius rewrite not equivalent."""
    step = request.id.rsplit(":", 1)[1]
    if step == "rewrite_changes":
        return {
            k: [f"{k} change"] for k in ("expertise", "verbosity", "tone", "mentions", "avoids")
        }
    if step == "rewrite_compose":
        named = re.search(r"function `(\w+)`", user_text(request))
        what = named.group(1) if named else "a program that reads stdin"
        return {
            "prompt": f"hey, I'm learning Python, could you please write {what} for me? "
            "It should do exactly what my exercise sheet asks, nothing more."
        }
    if step == "preserve":
        ok = not request.id.startswith(NOT_EQUIVALENT + ":")
        return {
            "reason": "same task" if ok else "adds a requirement",
            "same_goal": ok,
            "same_solutions": ok,
        }
    raise AssertionError(step)


def test_rewrite_file_writes_accepted_rejected_and_summary_then_resumes(tmp_path: Path) -> None:
    out = tmp_path / "beginner" / "tasks.jsonl"
    settings = RewriteSettings(
        tasks=TASKS, persona="beginner", output=out, max_attempts=2, reference_check=False
    )
    backend, reporter = ScriptedBackend(rewriting_model), SilentReporter()
    done = rewrite_file(settings, backend, reporter)

    accepted, rejected = rows(out), rows(rejected_path(out))
    assert len(accepted) == 13 and [r["task_id"] for r in rejected] == [NOT_EQUIVALENT]
    assert rejected[0]["attempts"] == 2 and "judged not equivalent" in rejected[0]["reasons"][-1]
    assert all(r["metadata"]["persona"]["name"] == "beginner" for r in accepted)
    assert {r["metadata"]["persona"]["mode"] for r in accepted} == {"full"}
    assert (done.output, done.rejected) == (out, tmp_path / "beginner" / "tasks.rejected.jsonl")
    assert done.summary_file == tmp_path / "beginner" / "tasks.summary.json"
    assert json.loads(done.summary_file.read_text()) == done.summary.as_dict()
    assert (done.summary.tasks, done.summary.accepted, done.summary.rejected) == (14, 13, 1)
    assert done.summary.rejection_reasons == {"not equivalent": 1}
    assert done.summary.reference_check == "off" and done.summary.tasks_file == str(TASKS)
    assert reporter.messages == []  # a fresh output: nothing to say
    # three steps per task and attempt, the rejected task twice
    assert len(backend.requests) == 3 * 14 + 3

    again, notes = ScriptedBackend(rewriting_model), SilentReporter()
    resumed = rewrite_file(settings, again, notes)
    assert again.requests == []
    assert notes.messages == [("note", "resuming: 13 accepted and 1 rejected already, 0 to do")]
    assert resumed.summary.as_dict() == {**done.summary.as_dict(), "accepted_after_retry": 0}
    assert rows(out) == accepted


def test_rewrite_file_limit_and_force_new_note(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    settings = RewriteSettings(
        tasks=TASKS,
        persona="intermediate",
        output=out,
        limit=2,
        max_attempts=1,
        reference_check=False,
    )
    rewrite_file(settings, ScriptedBackend(rewriting_model), SilentReporter())
    assert [r["task_id"] for r in rows(out)] == ["sample/running_mean", "sample/word_count"]
    reporter = SilentReporter()
    again = RewriteSettings(
        tasks=TASKS,
        persona="intermediate",
        output=out,
        limit=2,
        max_attempts=1,
        reference_check=False,
        force_new=True,
    )
    rewrite_file(again, ScriptedBackend(rewriting_model), reporter)
    assert ("note", f"note: --force-new: the previous {out.name} is kept as {out}.bak") in (
        reporter.messages
    ), reporter.messages


def test_rewrite_file_failures_are_stage_errors(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    backend = ScriptedBackend(rewriting_model)
    with pytest.raises(StageError, match="unknown persona 'nobody'"):
        rewrite_file(RewriteSettings(TASKS, "nobody", out), backend, SilentReporter())
    with pytest.raises(StageError, match=r"generations\.jsonl:1: cannot tell the benchmark"):
        rewrite_file(
            RewriteSettings(SAMPLE / "generations.jsonl", "beginner", out),
            backend,
            SilentReporter(),
        )
    assert backend.requests == [] and not out.exists()
    # an output made with other settings is not resumed, and the records stay
    first = RewriteSettings(TASKS, "beginner", out, limit=1, reference_check=False)
    rewrite_file(first, backend, SilentReporter())
    kept = out.read_bytes()
    other = RewriteSettings(TASKS, "beginner", out, limit=1, reference_check=False, max_attempts=2)
    with pytest.raises(StageError, match="--force-new"):
        rewrite_file(other, backend, SilentReporter())
    assert out.read_bytes() == kept


def comparing_model(request: Request) -> Any:
    """Prefers the longer answer on every dimension; fails both orders for fizzbuzz."""
    if request.id.startswith("sample/fizzbuzz:persona:"):
        return "{"
    text = user_text(request)
    first, second = (len(m) for m in re.findall(r"## Answer [AB]\n(`{3,}\n.*?\n`{3,})", text, re.S))
    verdict = "A" if first > second else "B" if second > first else "tie"
    dims = re.findall(r"^(\w+): ", text.split("## Dimensions")[1], re.M)
    return {"verdicts": {d: {"reason": "r", "verdict": verdict} for d in dims}}


@pytest.fixture
def generations(tmp_path: Path) -> dict[str, Path]:
    """The sample generations, one file per model."""
    paths = {}
    for model in ("sample-strong", "sample-weak"):
        path = tmp_path / f"{model}.jsonl"
        path.write_text(
            "".join(
                json.dumps(r) + "\n"
                for r in rows(SAMPLE / "generations.jsonl")
                if r["model"] == model
            )
        )
        paths[model] = path
    return paths


def test_compare_files_judges_both_conditions_and_writes_the_flips(
    tmp_path: Path, generations: dict[str, Path]
) -> None:
    strong, weak = generations["sample-strong"], generations["sample-weak"]
    out = tmp_path / "cmp" / "strong__weak.jsonl"
    settings = CompareSettings(
        gen_a=strong,
        gen_b=weak,
        persona="beginner",
        tasks=(TASKS,),
        output=out,
        original=(strong, weak),
        original_tasks=(TASKS,),
        bootstrap=50,
        ci_seed=3,
        sampling=Sampling(max_tokens=1536),
    )
    backend, reporter = ScriptedBackend(comparing_model), SilentReporter()
    done = compare_files(settings, backend, reporter)

    written = rows(out)
    assert (done.output, done.comparisons, done.errors) == (out, 28, 1)
    assert done.message == f"28 comparisons (1 errors) in {out}"
    assert sorted(r["condition"] for r in written) == ["original"] * 14 + ["persona"] * 14
    assert {r["persona"] for r in written if r["condition"] == "original"} == {None}  # generic
    [failed] = [r for r in written if r["status"] == "error"]
    assert (failed["task_id"], failed["condition"]) == ("sample/fizzbuzz", "persona")
    assert reporter.messages == [("warn", f"error persona sample/fizzbuzz: {failed['error']}")]
    assert len(backend.requests) == 2 * 28

    flips = done.flips
    assert flips is not None
    assert flips.table.columns == SHOWN_COLUMNS and flips.table.result
    assert flips.table.title == (
        "persona beginner: win rate of sample-strong over sample-weak (ties half)"
    )
    assert [row[0] for row in flips.table.rows][-1] == "overall"
    assert flips.json_file == tmp_path / "cmp" / "strong__weak.flips.json"
    assert json.loads(flips.json_file.read_text()) == flips.summary
    assert flips.csv_file.read_text().startswith("dimension,model_x,model_y,")
    assert flips.png_file.stat().st_size > 1000
    assert flips.message.startswith("preference flips: ")
    # the failed comparison is an error, never a trial
    overall = flips.summary["overall"]
    assert overall["persona_n_error"] == 1 and overall["orig_n_error"] == 0

    again = ScriptedBackend(comparing_model)
    resumed = compare_files(settings, again, SilentReporter())
    assert again.requests == [] and resumed.comparisons == 28
    assert resumed.flips is not None and resumed.flips.summary == flips.summary


def test_compare_files_without_originals_writes_no_flips(
    tmp_path: Path, generations: dict[str, Path]
) -> None:
    out = tmp_path / "persona_only.jsonl"
    settings = CompareSettings(
        generations["sample-strong"], generations["sample-weak"], "beginner", (TASKS,), out
    )
    done = compare_files(settings, ScriptedBackend(comparing_model), SilentReporter())
    assert done.flips is None and done.comparisons == 14
    assert not list(tmp_path.glob("*.flips.*"))


def test_compare_files_merges_repeated_tasks_files_and_refuses_a_task_in_two(
    tmp_path: Path, generations: dict[str, Path]
) -> None:
    lines = TASKS.read_text().splitlines(keepends=True)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("".join(lines[:5]))
    second.write_text("".join(lines[5:]))
    strong, weak = generations["sample-strong"], generations["sample-weak"]
    out = tmp_path / "cmp.jsonl"
    settings = CompareSettings(strong, weak, "beginner", (first, second), out)
    done = compare_files(settings, ScriptedBackend(comparing_model), SilentReporter())
    assert done.comparisons == 14  # every task found in one file or the other
    with pytest.raises(StageError, match=r"task '.*' appears in more than one --tasks file"):
        compare_files(
            CompareSettings(strong, weak, "beginner", (first, TASKS), tmp_path / "two.jsonl"),
            ScriptedBackend(comparing_model),
            SilentReporter(),
        )


def test_compare_files_failures_are_stage_errors(
    tmp_path: Path, generations: dict[str, Path]
) -> None:
    strong, weak = generations["sample-strong"], generations["sample-weak"]
    out = tmp_path / "cmp.jsonl"
    backend = ScriptedBackend(comparing_model)
    with pytest.raises(StageError, match="--original needs --original-tasks"):
        compare_files(
            CompareSettings(strong, weak, "beginner", (TASKS,), out, original=(strong, weak)),
            backend,
            SilentReporter(),
        )
    with pytest.raises(StageError, match=r"generations\.jsonl:1: cannot tell the benchmark"):
        compare_files(
            CompareSettings(strong, weak, "beginner", (SAMPLE / "generations.jsonl",), out),
            backend,
            SilentReporter(),
        )
    assert backend.requests == [] and not out.exists()


def flip_rows(winner_original: str, winner_persona: str) -> list[dict[str, Any]]:
    out = []
    for i in range(12):
        for condition, winner in (("original", winner_original), ("persona", winner_persona)):
            out.append(
                {
                    "task_id": f"t{i}",
                    "condition": condition,
                    "persona": "beginner",
                    "model_a": "m1",
                    "model_b": "m2",
                    "dimensions": [
                        {
                            "dimension": "clarity",
                            "forward": winner,
                            "swapped": winner,
                            "outcome": winner,
                        }
                    ],
                }
            )
    return out


def test_flips_file_writes_the_three_files_beside_the_comparisons(tmp_path: Path) -> None:
    path = tmp_path / "cmp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in flip_rows("A", "B")))
    done = flips_file(FlipsSettings(path, bootstrap=200), SilentReporter())
    assert "clarity" in done.summary["flipped"] and "clarity" in done.summary["significant_flips"]
    assert done.message == "preference flips: clarity; outside the intervals: clarity"
    assert (done.csv_file, done.json_file, done.png_file) == (
        tmp_path / "cmp.flips.csv",
        tmp_path / "cmp.flips.json",
        tmp_path / "cmp.flips.png",
    )
    clarity = dict(zip(done.table.columns, done.table.rows[1], strict=True))
    assert (clarity["original [95% CI]"], clarity["persona [95% CI]"], clarity["flip"]) == (
        "1.000 [1.000, 1.000]",
        "0.000 [0.000, 0.000]",
        "yes, outside the intervals",
    )
    assert "original [95% CI]" in done.table.right and "dimension" not in done.table.right


def test_a_verdict_decided_by_no_evidence_is_never_a_persona_trial(tmp_path: Path) -> None:
    """Persona flips count per-dimension outcomes of persona comparisons, never verdicts.

    A judge verdict decided by no evidence is not a battle (``battle_of``); a comparisons
    file holding one is refused whole, so it can never be counted as a tie in the flips.
    """
    verdict = Verdict(
        pair_id="t0:m1:m2",
        task_id="t0",
        model_a="m1",
        model_b="m2",
        method="evidence",
        winner="tie",
        preferred="tie",
        decided_by=NO_EVIDENCE,
    )
    assert verdict.battle() is None and battle_of(verdict.model_dump(mode="json")) is None
    path = tmp_path / "cmp.jsonl"
    clean = "".join(json.dumps(r) + "\n" for r in flip_rows("A", "B"))
    path.write_text(clean)
    counted = flips_file(FlipsSettings(path, tmp_path / "clean"), SilentReporter()).summary
    path.write_text(clean + verdict.model_dump_json() + "\n")
    with pytest.raises(StageError, match=r"cmp\.jsonl:25: field 'condition'"):
        flips_file(FlipsSettings(path, tmp_path / "mixed"), SilentReporter())
    assert not list(tmp_path.glob("mixed.*"))
    assert counted["overall"]["orig_n"] == counted["overall"]["persona_n"] == 12


def test_flips_file_refuses_more_than_two_models(tmp_path: Path) -> None:
    data = flip_rows("A", "B")
    data[0]["model_b"] = "m3"
    path = tmp_path / "cmp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    with pytest.raises(
        StageError,
        match=rf"{re.escape(str(path))}: persona flips compare "
        "exactly two models; the data name 3: m1, m2, m3",
    ):
        flips_file(FlipsSettings(path), SilentReporter())


def profiling_model(request: Request) -> Any:
    """A schema-valid profile, as the fake OpenAI server of the stage tests answers."""
    from pj_schema_reply import schema_reply

    schema = {"name": "profile", "schema": request.json_schema()}
    return schema_reply(
        {
            "messages": [m.model_dump() for m in request.messages],
            "response_format": {"type": "json_schema", "json_schema": schema},
        }
    )


def test_profile_file_writes_a_yaml_that_loads_back(tmp_path: Path) -> None:
    out = tmp_path / "me.yaml"
    made = profile_file(
        ProfileSettings("a student who likes short code", "me", out),
        ScriptedBackend(profiling_model),
        SilentReporter(),
    )
    assert made.output == out and out.read_text() == made.yaml
    assert made.persona.name == "me" and made.persona.description == (
        "a student who likes short code"
    )
    only = profile_file(
        ProfileSettings("a student who likes short code", "me"),
        ScriptedBackend(profiling_model),
        SilentReporter(),
    )
    assert only.output is None and only.yaml == made.yaml
    with pytest.raises(StageError, match="the model gave no valid profile"):
        profile_file(
            ProfileSettings("anyone", "me"), ScriptedBackend(lambda _r: "{"), SilentReporter()
        )
