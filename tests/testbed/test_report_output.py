"""What ``prefjudge report`` writes for a person: Markdown that links its plots as files,
clear messages on a judge-eval summary it cannot use, and bounded work on huge names.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
from pathlib import Path

import pytest
from click.testing import Result
from pj_cli import cli_argv, flat, invoke
from test_report_run import _records

from prefjudge.records import ScoredSample

PNG = b"\x89PNG\r\n\x1a\n"


def _scores(path: Path, records: list[ScoredSample] | None = None) -> Path:
    rows = _records() if records is None else records
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    return path


def test_markdown_links_its_plots_as_png_files_beside_it(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores.jsonl")
    out = tmp_path / "out"
    invoke(
        "report",
        scores,
        "-o",
        out / "report.html",
        "--markdown",
        out / "report.md",
        "--bootstrap",
        20,
        ok=True,
    )
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "base64" not in markdown and len(markdown) < 20_000
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert links and all(name.startswith("report-") and name.endswith(".png") for name in links)
    for name in links:
        assert (out / name).read_bytes().startswith(PNG), name
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') == len(links)  # the page stays whole


def test_markdown_on_stdout_says_where_the_plots_are(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores.jsonl")
    result = invoke(
        "report", scores, "-o", tmp_path / "r.html", "--markdown", "-", "--bootstrap", 20, ok=True
    )
    assert "base64" not in result.stdout
    assert "plot left out: the Markdown went to stdout; the HTML report has it" in result.stdout
    assert not list(tmp_path.glob("*.png"))


def _judge_eval(**bias_overrides: object) -> dict:
    rate = {"rate": 0.6, "ci": [0.5, 0.7], "n": 40}
    regression = {
        "coefficients": {
            "token_len": {"value": 0.4, "ci": [0.1, 0.7]},
            "markdown": {"value": -0.2, "ci": None},
        }
    }
    bias = {
        "tokenizer": "chars",
        **{
            key: {"judge": dict(rate), "human": dict(rate)}
            for key in ("first_shown", "longer", "more_formatted")
        },
        "style_regression": {"judge": regression, "human": regression},
    }
    bias.update(bias_overrides)
    return {"pairs": 40, "pairs_file": "pairs.jsonl", "methods": {"monolithic": {"bias": bias}}}


def report_with_judge_eval(scores: Path, summary: Path, html: Path, *, ok: bool) -> Result:
    """``report SCORES -o HTML --bootstrap 0 --judge-eval SUMMARY``, its exit checked by ``ok``."""
    return invoke("report", scores, "-o", html, "--bootstrap", 0, "--judge-eval", summary, ok=ok)


def test_a_judge_eval_summary_missing_a_field_names_it(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores.jsonl")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(_judge_eval()), encoding="utf-8")
    good = report_with_judge_eval(scores, summary, tmp_path / "r.html", ok=True)
    assert "Judge bias" in (tmp_path / "r.html").read_text(encoding="utf-8"), good.output
    broken = _judge_eval()
    del broken["methods"]["monolithic"]["bias"]["longer"]["human"]
    summary.write_text(json.dumps(broken), encoding="utf-8")
    text = flat(report_with_judge_eval(scores, summary, tmp_path / "r.html", ok=False).output)
    assert (
        f"{summary}: field 'methods.monolithic.bias.longer.human' is missing" in text
        and "--judge-eval" in text
    ), text
    summary.write_text(json.dumps(_judge_eval(style_regression={"judge": {}})), encoding="utf-8")
    text = flat(report_with_judge_eval(scores, summary, tmp_path / "r.html", ok=False).output)
    assert "field 'methods.monolithic.bias.style_regression.human' is missing" in text


def test_a_judge_eval_summary_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores.jsonl")
    summary = tmp_path / "summary.json"
    summary.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    text = flat(report_with_judge_eval(scores, summary, tmp_path / "r.html", ok=False).output)
    assert f"{summary}: not a judge-eval summary (nested too deeply" in text


@pytest.mark.slow
def test_a_4_mib_model_name_costs_the_report_seconds_not_minutes(tmp_path: Path) -> None:
    records = [r for r in _records() if int(r.task_id[1:]) < 6]
    for record in records:
        if record.model == "weak":
            record.model = "w" * (4 << 20)
    scores = _scores(tmp_path / "scores.jsonl", records)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        cli_argv(
            "report",
            str(scores),
            "-o",
            str(tmp_path / "r.html"),
            "--markdown",
            str(tmp_path / "r.md"),
            "--bootstrap",
            "20",
        ),
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0, done.stderr[-2000:]
    assert cpu < 40, cpu  # processor seconds: the machine's load does not count
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert len(markdown) < 100_000 and "w…w" in markdown
