"""``prefjudge report``: numbers shown, self-contained HTML, rendering in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from prefjudge.cli import main
from prefjudge.records import CheckResult, FuncResult, InstructionRef, ScoredSample
from prefjudge.scoring import metrics
from prefjudge.testbed.report import (
    NO_FIGURE_FILES,
    build_report,
    render_html,
    render_markdown,
)

CHROMIUM = Path("/usr/bin/chromium")
N_TASKS = 20
# single-turn, k = 2: style_1 fails on tasks 0-7, doc_1 on tasks 4-11 (joint: 4-7)
STYLE_FAILS = set(range(0, 8))
DOC_FAILS = set(range(4, 12))
# multi-turn: style_1 passes at turn 2 everywhere, still passes at turn 3 on tasks 0-14
STYLE_KEPT = set(range(0, 15))


def _checks(pairs):
    return [CheckResult(id=i, status=s) for i, s in pairs]


def _record(task, protocol, k, func, pairs, turn_results=None):
    results = _checks(pairs)
    passed = sum(r.status == "pass" for r in results)
    return ScoredSample(
        task_id=f"t{task}", model="m", response="", protocol=protocol, k=k,
        instructions=[InstructionRef(id=i) for i, _ in pairs], instruction_results=results,
        if_instruction=passed / len(results) if results else None,
        if_task=(passed == len(results)) if results else None,
        func=FuncResult(status=func), turn_results=turn_results,
    )


def synthetic_records() -> list[ScoredSample]:
    records = []
    for t in range(N_TASKS):
        records.append(_record(t, "single", 0, "pass" if t < 16 else "fail", []))
        records.append(_record(t, "single", 2, "pass" if t < 12 else "fail", [
            ("style_1", "fail" if t in STYLE_FAILS else "pass"),
            ("doc_1", "fail" if t in DOC_FAILS else "pass")]))
        final = [("style_1", "pass" if t in STYLE_KEPT else "fail"), ("doc_1", "pass")]
        records.append(_record(t, "multi", 2, "pass" if t < 14 else "fail", final,
                               turn_results=[[], _checks([("style_1", "pass")]),
                                             _checks(final)]))
    return records


@pytest.fixture(scope="module")
def synthetic_report():
    report = build_report(synthetic_records(), n_resamples=200, min_pairs=5)
    return report, render_html(report), render_markdown(report)


def test_samples_frame_carries_protocol_default_single():
    plain = ScoredSample(task_id="t", model="m", response="")
    frame = metrics.samples_frame([plain, *synthetic_records()[:3]])
    assert list(frame["protocol"]) == ["single", "single", "single", "multi"]


def test_fr_k_per_protocol_shown(synthetic_report):
    report, page, markdown = synthetic_report
    fr = report.section("fr").table("FR_k").data.set_index("protocol")
    # independent: S0 = 16/20; single S2 = 12/20; multi S2 = 14/20 against single's k = 0
    s0 = 16 / N_TASKS
    expected = {"single": (s0 - 12 / N_TASKS) / s0, "multi": (s0 - 14 / N_TASKS) / s0}
    for protocol, value in expected.items():
        assert fr.loc[protocol, "fr"] == pytest.approx(value)
        assert fr.loc[protocol, "lower"] <= value <= fr.loc[protocol, "upper"]
        shown = f"{value * 100:.2f} ["
        assert shown in page and shown in markdown
    assert "25.00 [" in page and "12.50 [" in page


def test_if_by_k_with_ci(synthetic_report):
    report, page, _ = synthetic_report
    by_k = report.section("by_k").table("pass@1").data
    row = by_k[(by_k["protocol"] == "single") & (by_k["k"] == 2)
               & (by_k["metric"] == "if_task")].iloc[0]
    expected = sum(t not in STYLE_FAILS | DOC_FAILS for t in range(N_TASKS)) / N_TASKS
    assert row["value"] == pytest.approx(expected)
    assert row["lower"] <= expected <= row["upper"]
    assert f"{expected:.3f} [{row['lower']:.3f}, {row['upper']:.3f}]" in page


def test_co_failure_lift_matches_independent_count(synthetic_report):
    report, page, markdown = synthetic_report
    table = report.section("co_failure").table("Co-failure").data
    row = table[(table["protocol"] == "single") & (table["instruction_a"] == "doc_1")
                & (table["instruction_b"] == "style_1")].iloc[0]
    fail_doc, fail_style = len(DOC_FAILS) / N_TASKS, len(STYLE_FAILS) / N_TASKS
    joint = len(DOC_FAILS & STYLE_FAILS) / N_TASKS
    assert row["n"] == N_TASKS and row["n_joint"] == len(DOC_FAILS & STYLE_FAILS)
    assert row["joint_fail"] == pytest.approx(joint)
    assert row["expected"] == pytest.approx(fail_doc * fail_style)
    assert row["lift"] == pytest.approx(joint / (fail_doc * fail_style))  # 1.25
    assert f"{joint / (fail_doc * fail_style):.3f}" in page
    assert "| 1.250 |" in markdown


def test_co_failure_threshold_and_pooling():
    checks = metrics.checks_frame(synthetic_records())
    # default: per model, both protocols together (2 x 20 samples share the pair)
    assert metrics.co_failure(checks, min_count=2 * N_TASKS).iloc[0]["n"] == 2 * N_TASKS
    assert metrics.co_failure(checks, min_count=2 * N_TASKS + 1).empty
    assert metrics.co_failure(checks, min_count=N_TASKS + 1, by=("model", "protocol")).empty
    pooled = metrics.co_failure(checks, min_count=1, by=())
    assert list(pooled.columns) == metrics.CO_FAILURE_COLUMNS
    assert pooled.iloc[0]["n"] == 2 * N_TASKS


def test_multi_turn_retention(synthetic_report):
    report, page, _ = synthetic_report
    section = report.section("retention")
    final = section.table("Final retention").data.iloc[0]
    expected = len(STYLE_KEPT) / N_TASKS
    assert final["protocol"] == "multi" and final["n"] == N_TASKS
    assert final["value"] == pytest.approx(expected)
    assert final["ever_broken"] == pytest.approx(1 - expected)
    curve = section.table("Retention by turn").data
    assert list(curve["turn"]) == [3] and curve.iloc[0]["value"] == pytest.approx(expected)
    assert f"{expected:.3f} [" in page


def test_retention_counts_only_instructions_satisfied_when_introduced():
    turns = [[], _checks([("a", "fail")]), _checks([("a", "pass"), ("b", "pass")]),
             _checks([("a", "fail"), ("b", "pass"), ("c", "pass")]),
             _checks([("a", "pass"), ("b", "error"), ("c", "fail"), ("d", "pass")])]
    rec = _record(0, "multi", 4, "pass", [("a", "pass"), ("b", "error"), ("c", "fail"),
                                          ("d", "pass")], turn_results=turns)
    frame = metrics.turns_frame([rec])
    assert frame.groupby("instruction")["intro_turn"].first().to_dict() == {
        "a": 2, "b": 3, "c": 4, "d": 5}
    curve = metrics.retention_curve(frame, n_resamples=50).set_index("turn")["value"]
    # a failed at its introduction: never counted; b kept at 4, error at 5; c broken at 5
    assert curve.to_dict() == {4: 1.0, 5: 0.0}
    final = metrics.final_retention(frame, n_resamples=50).iloc[0]
    assert final["n"] == 1 and final["value"] == 0.0


def _images(page: str) -> list[bytes]:
    sources = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert all(src.startswith("data:image/png;base64,") for src in sources)
    return [base64.b64decode(src.split(",", 1)[1]) for src in sources]


def assert_self_contained(page: str) -> int:
    for pattern in (r"<link\b", r"<script\b", r"src=\"(?!data:)", r"url\(", r"https?://"):
        assert not re.search(pattern, page), pattern
    images = _images(page)
    assert images and all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in images)
    return len(images)


def test_synthetic_page_is_self_contained_with_every_plot(synthetic_report):
    report, page, markdown = synthetic_report
    count = assert_self_contained(page)
    assert count == len(report.sections) == 8
    assert markdown.count(NO_FIGURE_FILES) == count and "base64" not in markdown


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory, project_root):
    out = tmp_path_factory.mktemp("sample")
    runner = CliRunner()
    scored = runner.invoke(main, ["score", str(project_root / "datasets/sample/generations.jsonl"),
                                  "-o", str(out / "scores.jsonl"), "--workers", "4"])
    assert scored.exit_code == 0, scored.output
    result = runner.invoke(main, ["report", str(out / "scores.jsonl"), "-o",
                                  str(out / "report.html"), "--markdown",
                                  str(out / "report.md"), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    return out


def test_sample_report_shows_the_scored_numbers(sample_run):
    page = (sample_run / "report.html").read_text()
    markdown = (sample_run / "report.md").read_text()
    rows = [json.loads(line) for line in (sample_run / "scores.jsonl").read_text().splitlines()]
    frame = pd.DataFrame([{"model": r["model"], "task": r["task_id"],
                           "if": r["if_instruction"], "pass": r["func"]["status"] == "pass"}
                          for r in rows])
    assert len(frame) == 42
    for model, group in frame.groupby("model"):
        if_mean = group.dropna(subset=["if"]).groupby("task")["if"].mean().mean()
        pass1 = group.groupby("task")["pass"].mean().mean()
        for value in (if_mean, pass1):
            assert re.search(rf"<td>{re.escape(model)}</td><td>single-turn</td><td>14</td>"
                             rf".*<td>{value:.3f} \[", page), (model, value)
            assert f"{value:.3f} [" in markdown
    assert assert_self_contained(page) >= 5


def _chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="headless Chromium not installed at /usr/bin/chromium "
                           "(run scripts/setup_chromium.sh)")
def test_report_renders_in_headless_chromium(synthetic_report, tmp_path):
    from PIL import Image

    _, page, _ = synthetic_report
    html_path = tmp_path / "report.html"
    html_path.write_text(page)
    shot = tmp_path / "report.png"
    result = _chromium([f"--screenshot={shot}", "--window-size=1200,3000",
                        html_path.as_uri()], tmp_path)
    assert shot.exists(), result.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (3000, 1200)
    assert pixels.std() > 10  # plots and tables, not a blank page
    assert (pixels < 128).mean() > 0.01

    # a copy of the page with a probe script: record each image's decoded size in the DOM
    probe = page.replace("</body>", (
        "<script>window.addEventListener('load', () => {"
        "const s = Array.from(document.images).map(i => i.complete + ':' + i.naturalWidth"
        " + 'x' + i.naturalHeight).join(' ');"
        "const p = document.createElement('pre'); p.id = 'probe'; p.textContent = s;"
        "document.body.appendChild(p); });</script></body>"))
    probe_path = tmp_path / "probe.html"
    probe_path.write_text(probe)
    dom = _chromium(["--dump-dom", "--virtual-time-budget=10000", probe_path.as_uri()],
                    tmp_path)
    found = re.search(r'<pre id="probe">([^<]*)</pre>', dom.stdout)
    assert found, dom.stderr[-2000:]
    sizes = found.group(1).split()
    assert len(sizes) == page.count("<img ")
    for size in sizes:
        complete, dims = size.split(":")
        width, height = (int(v) for v in dims.split("x"))
        assert complete == "true" and width > 100 and height > 100, size


def test_report_never_reads_judge_verdicts(tmp_path: Path) -> None:
    """Issue 29 guard: the report is made of scored samples; a verdict file (here with
    verdicts decided by no evidence) is refused, never counted as wins, losses or ties."""
    from pj_verdicts import evidence_verdicts, write_verdicts

    path = write_verdicts(tmp_path / "verdicts.jsonl",
                          evidence_verdicts(decided=6, no_evidence=12, errors=1).everything())
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(path), "-o", str(out), "--bootstrap", "0"])
    assert result.exit_code != 0 and not out.exists()
