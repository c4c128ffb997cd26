"""HPAG guidance: split, build (scripted judge), files, loading, leakage refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pj_scripted_backend import ScriptedBackend, shown, stage_of, user_text

from prefjudge.backends import Request
from prefjudge.cli import main
from prefjudge.judge.guidance import GuidanceError, load_guidance, pair_fingerprint, parse_lessons
from prefjudge.judge.hpag import build_guidance, split_pairs
from prefjudge.records import Pair


def make_pairs(n: int = 20) -> list[Pair]:
    pairs = []
    for i in range(n):
        label = "A" if i % 2 else "B"
        pairs.append(Pair(
            pair_id=f"t{i}", task_id=f"t{i}", instruction=f"task {i}",
            response_a=f"code a{i} {'LONG ' * (i % 3)}", response_b=f"code b{i}",
            label=label, votes=[label, label, "tie"],
            category="bcb" if i < 12 else "lbpp",
        ))
    return pairs


def write_pairs(pairs: list[Pair], path: Path) -> Path:
    path.write_text("".join(p.model_dump_json() + "\n" for p in pairs))
    return path


def first_shown_judge(request: Request) -> Any:
    """Monolithic: always 'A'; rationale and distil replies echo what they were told."""
    stage = stage_of(request)
    if stage == "monolithic":
        return {"reason": "first looks fine", "verdict": "A"}
    if stage == "rationale":
        text = user_text(request)
        preferred = text.split("The developers preferred: ")[1].split(".")[0]
        assert "Votes: A: " in text  # individual votes reach the rationale prompt
        assert shown(request, "A").startswith("code a")  # original order, no swap
        return {"rationale": f"developers preferred {preferred}", "overlooked": ["edge cases"],
                "criteria_lesson": "ask about edge cases", "judging_lesson": "read the code",
                "final_lesson": "do not favour the first answer"}
    if stage == "distil":
        n = user_text(request).count("\n- [")
        scope = "global" if request.id == "distil:*" else request.id.split(":", 1)[1]
        return {"criteria": [f"{scope}: include edge cases ({n} rationales)"],
                "judging": [f"{scope}: check each claim against the code"],
                "final": [f"{scope}: order must not matter"]}
    raise AssertionError(stage)


def test_split_is_seeded_disjoint_and_ignores_unlabelled() -> None:
    unlabelled = Pair(pair_id="u", task_id="u", instruction="i", response_a="a", response_b="b")
    pairs = [*make_pairs(20), unlabelled]
    train, held = split_pairs(pairs, 0.2, seed=7)
    assert len(train) == 4 and len(held) == 16
    assert {p.pair_id for p in train}.isdisjoint(p.pair_id for p in held)
    assert "u" not in {p.pair_id for p in train + held}
    assert split_pairs(pairs, 0.2, seed=7)[0] == train
    assert split_pairs(pairs, 0.2, seed=8)[0] != train
    with pytest.raises(ValueError, match="between 0 and 1"):
        split_pairs(pairs, 1.0, seed=0)


def test_fingerprint_ignores_id_and_response_order() -> None:
    p = make_pairs(1)[0]
    swapped = p.model_copy(update={"pair_id": "renamed", "response_a": p.response_b,
                                   "response_b": p.response_a})
    assert pair_fingerprint(p) == pair_fingerprint(swapped)
    assert pair_fingerprint(p) != pair_fingerprint(p.model_copy(update={"instruction": "x"}))


def test_build_writes_readable_guidance_with_provenance(tmp_path: Path) -> None:
    pairs = make_pairs(20)
    source = write_pairs(pairs, tmp_path / "pairs.jsonl")
    backend = ScriptedBackend(first_shown_judge)
    out = tmp_path / "guidance" / "toy"
    report = build_guidance(pairs, backend, out, source=str(source), train_fraction=0.5,
                            seed=3, min_category=2)
    train, held = split_pairs(pairs, 0.5, seed=3)
    manifest = json.loads((out / "manifest.json").read_text())
    # the always-"A" judge is position-inconsistent: both orders → tie → disagrees with all
    counts = manifest["counts"]
    assert counts["judged"] == len(train) == 10 and counts["judge_errors"] == 0
    assert counts["disagreements"] == 10 and counts["agreements"] == 0
    assert counts["rationales"] == 10 and counts["rationale_errors"] == 0
    assert manifest["split"] == {"seed": 3, "train_fraction": 0.5, "train": 10, "held_out": 10}
    assert manifest["train_pair_ids"] == [p.pair_id for p in train]
    assert manifest["source"]["sha256"] and manifest["source"]["path"] == str(source)
    assert manifest["judge"]["model"] == "scripted-judge"
    assert manifest["distilled"]["global"] == {"rationales": 10, "shown": 10}
    # held-out pairs never reached the model
    seen = " ".join(user_text(r) for r in backend.requests)
    for p in held:
        assert f"task {p.pair_id[1:]}\n" not in seen
    assert len(backend.stage("monolithic")) == 20 and len(backend.stage("rationale")) == 10
    guidance = load_guidance(out)
    assert guidance.lessons["criteria"] == ["global: include edge cases (10 rationales)"]
    assert set(guidance.categories) == {"bcb", "lbpp"} & {p.category for p in train}
    rows = [json.loads(line) for line in (out / "rationales.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and all(r["judge"] == "tie" for r in rows)
    assert {r["rationale"] for r in rows} <= {"developers preferred Answer A",
                                              "developers preferred Answer B"}
    assert guidance.overlap(pairs) == train
    assert report.verdicts and all(v.method == "monolithic" for v in report.verdicts)


def test_failed_rationales_are_counted_not_distilled(tmp_path: Path) -> None:
    pairs = make_pairs(6)
    broken = tuple(f"{p.pair_id}:" for p in split_pairs(pairs, 0.99, seed=0)[0][:2])

    def flaky(request: Request) -> Any:
        if stage_of(request) == "rationale" and request.id.startswith(broken):
            return "{oops"
        return first_shown_judge(request)

    report = build_guidance(pairs, ScriptedBackend(flaky), tmp_path / "g", source="mem",
                            train_fraction=0.99, seed=0)
    counts = report.manifest["counts"]
    assert counts["rationale_errors"] == 2 and counts["rationales"] == counts["disagreements"] - 2
    errors = [r for r in report.rationales if "error" in r]
    assert {f"{r['pair_id']}:" for r in errors} == set(broken)
    assert all(r["error"].startswith("invalid_output") for r in errors)


def test_lessons_files_are_checked_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "global.md"
    path.write_text("# G\n## criteria\n- one\n  continued\n## vibes\n- two\n")
    with pytest.raises(GuidanceError, match=r"global.md:5: unknown section 'vibes'"):
        parse_lessons(path)
    path.write_text("# G\n- orphan\n")
    with pytest.raises(GuidanceError, match=r"global.md:2: bullet before"):
        parse_lessons(path)
    path.write_text("# G\n## criteria\n- one\n  continued\n")
    assert parse_lessons(path)[1]["criteria"] == ["one continued"]
    with pytest.raises(GuidanceError, match=r"no manifest\.json"):
        load_guidance(tmp_path)


def test_judge_eval_refuses_pairs_that_built_the_guidance(tmp_path: Path) -> None:
    pairs = make_pairs(20)
    source = write_pairs(pairs, tmp_path / "pairs.jsonl")
    out = tmp_path / "g"
    build_guidance(pairs, ScriptedBackend(first_shown_judge), out, source=str(source),
                   train_fraction=0.2, seed=1)
    result = CliRunner().invoke(main, ["judge-eval", str(source), "--guidance", str(out),
                                       "-o", str(tmp_path / "eval"), "--method", "monolithic"])
    assert result.exit_code == 1
    assert "4 of these pairs were used to build the guidance" in result.output
    assert "--held-out" in result.output
    # renamed and swapped copies of training pairs are caught too
    train = split_pairs(pairs, 0.2, seed=1)[0]
    disguised = [p.model_copy(update={"pair_id": f"new{i}", "response_a": p.response_b,
                                      "response_b": p.response_a})
                 for i, p in enumerate(train)]
    other = write_pairs(disguised, tmp_path / "other.jsonl")
    result = CliRunner().invoke(main, ["judge-eval", str(other), "--guidance", str(out),
                                       "-o", str(tmp_path / "eval2")])
    assert result.exit_code == 1 and "4 of these pairs" in result.output


def test_guidance_show_prints_lessons_and_provenance(tmp_path: Path) -> None:
    pairs = make_pairs(10)
    out = tmp_path / "g"
    build_guidance(pairs, ScriptedBackend(first_shown_judge), out, source="mem",
                   train_fraction=0.5, seed=0)
    result = CliRunner().invoke(main, ["guidance", "show", str(out)])
    assert result.exit_code == 0, result.output
    assert "global · criteria: global: include edge cases" in result.output
    assert "scripted-judge" in result.output and "'train': 5" in result.output
    missing = CliRunner().invoke(main, ["guidance", "show", str(tmp_path)])
    assert missing.exit_code == 1 and "no global.md" in missing.output


def write_guidance(folder: Path, global_md: str, manifest: dict[str, Any]) -> Path:
    """A hand-written guidance folder (global.md and manifest.json)."""
    folder.mkdir()
    (folder / "global.md").write_text(global_md, encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_guidance_show_prints_a_1_mib_lesson_whole_and_fast(tmp_path: Path) -> None:
    """Rich's highlighter took over 60 s on a 1 MiB line; wrapped lines joined quadratically."""
    import time

    lesson = "check [bold]x[/ 'q' 12 0x1f \x1b[31m " * 30_000  # about 1 MiB, markup and ESC
    wrapped = "\n".join(["- wrapped"] + ["more words"] * 100_000)  # 1.1 MB of continuations
    folder = write_guidance(
        tmp_path / "g",
        f"# G\n## criteria\n- {lesson}\n## judging\n{wrapped}\n",
        {"source": "s" * 1_000_000, "judge": {"model": "[red]j"}, "counts": {"judged": 3}},
    )
    started = time.monotonic()
    result = CliRunner().invoke(main, ["guidance", "show", str(folder)])
    seconds = time.monotonic() - started
    assert result.exit_code == 0, result.output[-2000:]
    assert seconds < 3.0, f"guidance show took {seconds:.1f} s"
    lines = result.output.splitlines()
    assert lines[0].endswith(" from " + "s" * 1_000_000)
    assert lines[1] == "judge: {'model': '[red]j'}"  # no markup taken from the file
    shown = lesson.strip().replace("\x1b", "\\x1b")  # printed whole, the escape made visible
    assert lines[3] == f"global · criteria: {shown}"
    assert lines[4] == "global · judging: wrapped" + " more words" * 100_000
    assert "\x1b" not in result.output


def test_a_bad_line_of_a_lessons_file_is_quoted_short(tmp_path: Path) -> None:
    path = tmp_path / "global.md"
    path.write_text("# G\n" + "x" * 1_000_000 + "\n", encoding="utf-8")
    with pytest.raises(GuidanceError) as caught:
        parse_lessons(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: expected '## stage' or '- lesson', got 'xxx")
    assert len(message) < len(str(path)) + 200 and "…" in message
