"""A generation file whose generations were scored is said to be shown, not "not scored".

``prefjudge run`` keeps each model's generations in ``generations/<slug>.jsonl`` and their
scores in ``scores/<slug>.jsonl``; ``view`` reads both and shows the scored samples, so the
generation file's note names the scored file, and says "not scored" only for the
generations no scored sample here answers.
"""

from __future__ import annotations

import json
from pathlib import Path

from pj_cli import invoke

from prefjudge.reporting import SilentReporter
from prefjudge.view import load_results
from prefjudge.view.load import NOT_SCORED
from prefjudge.view.run import ViewSettings, view_folder

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"


def experiment_folder(tmp_path: Path) -> Path:
    """``generations/`` and ``scores/`` as ``prefjudge run`` lays them out, by real commands."""
    root = tmp_path / "smoke"
    (root / "generations").mkdir(parents=True)
    lines = (SAMPLE / "generations.jsonl").read_text("utf-8").splitlines(keepends=True)
    generations = root / "generations" / "sample-3f2a.jsonl"
    generations.write_text("".join(lines), encoding="utf-8")
    invoke("score", generations, "--tasks", SAMPLE / "tasks.jsonl", "--no-tests",
           "-o", root / "scores" / "sample-3f2a.jsonl", "--bootstrap", "20", ok=True)
    # three of those generations and one no scored sample answers
    extra = {**json.loads(lines[0]), "id": "extra", "response": "a response never scored"}
    (root / "generations" / "partial.jsonl").write_text(
        "".join(lines[:3]) + json.dumps(extra) + "\n", encoding="utf-8")
    (root / "generations" / "fresh.jsonl").write_text(json.dumps(extra) + "\n",
                                                      encoding="utf-8")
    return root


def test_scored_generation_files_name_the_scored_file(tmp_path: Path) -> None:
    root = experiment_folder(tmp_path)
    results = load_results(root)
    files = {f.path: f for f in results.files}
    assert len(results.samples) == 42
    assert files["scores/sample-3f2a.jsonl"].kind == "scored"
    scored = files["generations/sample-3f2a.jsonl"]
    assert (scored.kind, scored.records) == ("generation", 42)
    assert scored.note == "scored: shown as the scored samples of scores/sample-3f2a.jsonl"
    assert files["generations/partial.jsonl"].note == (
        "3 of 4 scored (shown from scores/sample-3f2a.jsonl); the other 1 not scored: not "
        "shown (run prefjudge score on it to see checks and tests)")
    assert files["generations/fresh.jsonl"].note == NOT_SCORED

    reporter = SilentReporter()
    view_folder(ViewSettings(results=root), reporter)
    notes = [message for _, message in reporter.messages]
    assert ("  generations/sample-3f2a.jsonl: generations, 42 records — scored: shown as the "
            "scored samples of scores/sample-3f2a.jsonl") in notes
    assert not any(note.startswith("  generations/sample-3f2a.jsonl") and "not scored" in note
                   for note in notes)
    assert f"  generations/fresh.jsonl: generations, 1 records — {NOT_SCORED}" in notes
