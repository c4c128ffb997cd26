"""Seed inputs for the readers' fuzz test: real valid files, made once (see pj_fuzz)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"
DEAD_URL = "http://127.0.0.1:9/v1"
"""A base URL nothing listens on: judge targets fail at the first model call, after reading."""


# ---------------------------------------------------------------------------------------------
# seeds


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


IN_PROCESS = False
"""Make the seeds through click's runner in this process (the suite) instead of subprocesses."""


def _cli(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run a prefjudge command (seeds); it must succeed."""
    if IN_PROCESS:
        from click.testing import CliRunner

        from prefjudge.cli import main

        here = Path.cwd()
        os.chdir(cwd or here)
        try:
            result = CliRunner(env=env).invoke(main, [str(a) for a in args])
        finally:
            os.chdir(here)
        if result.exit_code != 0:
            raise RuntimeError(
                f"seed command failed: {args}\n{result.output[-3000:]}\n{result.exception!r}"
            )
        return
    argv = [sys.executable, "-m", "prefjudge", *map(str, args)]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"seed command failed: {argv}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )


def _judge_reply(body: dict[str, Any]) -> str:
    """A fake judge: prefers the longer response (monolithic replies only)."""
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    side = "A" if len(text) % 2 else "B"
    return json.dumps({"reason": "r", "verdict": side})


def _judge_eval_resume(folder: Path) -> None:
    """``judge_resume/``: the pairs and a finished judge-eval output to resume.

    The output was judged by the fake server; its journal is made to name the dead
    backend and the model the targets use, so that a resume reads every verdict back and
    judges none (the cache is not needed: nothing is asked).
    """
    resume = folder / "judge_resume"
    resume.mkdir()
    shutil.copy(folder / "pairs.jsonl", resume / "pairs.jsonl")
    shutil.copytree(folder / "eval", resume / "eval")
    journal = resume / "eval" / "verdicts-monolithic.jsonl.journal.json"
    data = json.loads(journal.read_text(encoding="utf-8"))
    data["settings"]["model"].update(endpoint=DEAD_URL, model="fuzz-judge")
    journal.write_text(json.dumps(data, indent=1), encoding="utf-8")


def _guidance(folder: Path) -> None:
    """A hand-written guidance folder (``guidance show`` reads it; no model needed)."""
    (folder / "categories").mkdir(parents=True)
    manifest = {
        "format": 1,
        "name": "fuzz",
        "source": {"path": "pairs.jsonl", "pairs": 3, "labelled": 3},
        "split": {"seed": 0, "train_fraction": 0.5, "train": 1, "held_out": 2},
        "judge": {"model": "fake-judge", "backend": "openai"},
        "counts": {"judged": 1, "disagreements": 1},
        "train_pair_ids": ["p1"],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    (folder / "global.md").write_text(
        "# Guidance\n\n## criteria\n- Ask whether edge cases are handled.\n"
        "- Prefer tested code\n  over untested code.\n\n## judging\n- Read the code.\n\n"
        "## final\n- The order of the answers must not matter.\n",
        encoding="utf-8",
    )
    (folder / "categories" / "bcb.md").write_text(
        "# Category: bcb\n\n## criteria\n- Check the imports.\n", encoding="utf-8"
    )


def make_seeds(folder: Path, *, in_process: bool = False) -> Path:
    """Write every seed input into ``folder`` (once per session) and return it.

    Args:
        folder: An empty folder.
        in_process: Run the commands that make them through click's runner in this process
            (faster; the suite) instead of as subprocesses.

    Returns:
        ``folder``, holding the files the targets name.
    """
    from pj_backend_helpers import serve_fake

    from prefjudge.backends.cache import ResponseCache

    global IN_PROCESS
    IN_PROCESS = in_process
    folder.mkdir(parents=True, exist_ok=True)
    tasks = [json.loads(x) for x in (SAMPLE / "tasks.jsonl").read_text().splitlines()][:3]
    ids = {t["task_id"] for t in tasks}
    gens = [json.loads(x) for x in (SAMPLE / "generations.jsonl").read_text().splitlines()]
    gens = [g for g in gens if g["task_id"] in ids]
    _jsonl(folder / "tasks.jsonl", tasks)
    _jsonl(folder / "generations.jsonl", gens)
    evalplus = [{"task_id": g["task_id"], "solution": g["response"]} for g in gens[:3]]
    _jsonl(folder / "samples.jsonl", evalplus)
    (folder / "response.py").write_text(gens[0]["response"], encoding="utf-8")
    score = folder / "score"
    score.mkdir()
    shutil.copy(folder / "generations.jsonl", score / "generations.jsonl")
    shutil.copy(folder / "tasks.jsonl", score / "tasks.jsonl")
    _cli(
        "score",
        score / "generations.jsonl",
        "--tasks",
        score / "tasks.jsonl",
        "-o",
        score / "scores.jsonl",
        "--workers",
        "2",
    )
    shutil.copy(score / "scores.jsonl", folder / "scores.jsonl")

    by_task: dict[str, list[dict[str, Any]]] = {}
    for g in gens:
        by_task.setdefault(g["task_id"], []).append(g)
    pairs = []
    for task in tasks:
        a, b, *_ = by_task[task["task_id"]]
        pairs.append(
            {
                "pair_id": f"{task['task_id']}:{a['model']}:{b['model']}",
                "task_id": task["task_id"],
                "instruction": task["prompt"],
                "response_a": a["response"],
                "response_b": b["response"],
                "model_a": a["model"],
                "model_b": b["model"],
                "label": "A",
            }
        )
    _jsonl(folder / "pairs.jsonl", pairs)

    with serve_fake() as server:
        server.reply = _judge_reply
        common = [
            "--backend",
            "openai",
            "--base-url",
            server.url,
            "--model",
            "fake-judge",
            "--cache",
            folder / "judge-cache.sqlite",
            "--method",
            "monolithic",
        ]
        _cli("judge", folder / "pairs.jsonl", "-o", folder / "verdicts.jsonl", *common)
        _cli(
            "judge-eval",
            folder / "pairs.jsonl",
            "-o",
            folder / "eval",
            *common,
            "--bootstrap",
            "20",
        )
    shutil.copy(folder / "eval" / "summary.json", folder / "judge_eval_summary.json")
    _judge_eval_resume(folder)
    _guidance(folder / "guidance")
    verdicts = [json.loads(x) for x in (folder / "verdicts.jsonl").read_text().splitlines()]
    # a ring of battles over the three sample models, so the graph is connected
    models = sorted({g["model"] for g in gens})
    battles = []
    for i, task in enumerate(tasks * 2):
        a, b = models[i % len(models)], models[(i + 1) % len(models)]
        battles.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": ("model_a", "model_b", "tie")[i % 3],
                "task_id": task["task_id"],
            }
        )
    with (folder / "battles.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(battles[0]))
        writer.writeheader()
        writer.writerows(battles)
    _jsonl(folder / "battles.jsonl", battles)
    del verdicts
    _cli(
        "rank",
        folder / "battles.csv",
        "-o",
        folder / "ratings.csv",
        "--json",
        folder / "ratings.json",
        "--alpha",
        "0.01",
        "--bootstrap",
        "20",
    )
    ratings = list(csv.DictReader((folder / "ratings.csv").open(encoding="utf-8")))
    with (folder / "table.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "func", "if", "rating"])
        for i, row in enumerate(ratings):
            writer.writerow([row["model"], 0.2 + 0.2 * i, 0.9 - 0.2 * i, row["rating"]])

    results = folder / "results"
    results.mkdir()
    shutil.copy(folder / "scores.jsonl", results / "scores.jsonl")
    shutil.copy(folder / "verdicts.jsonl", results / "verdicts.jsonl")
    shutil.copy(folder / "ratings.csv", results / "leaderboard.csv")

    augment = folder / "augment"
    augment.mkdir()
    shutil.copy(folder / "tasks.jsonl", augment / "tasks.jsonl")
    _cli(
        "augment",
        augment / "tasks.jsonl",
        "-o",
        augment / "aug.jsonl",
        "--selector",
        "rule",
        "--k",
        "2",
        cwd=augment,
    )
    shutil.copy(augment / "aug.jsonl", folder / "aug.jsonl")

    comparisons = []
    for i, task in enumerate(tasks * 3):
        for condition in ("original", "persona"):
            outcome = "AB"[(i + (condition == "persona")) % 2]
            comparisons.append(
                {
                    "task_id": f"{task['task_id']}#{i}",
                    "condition": condition,
                    "persona": "carol",
                    "model_a": models[0],
                    "model_b": models[1],
                    "status": "ok",
                    "dimensions": [
                        {"dimension": d, "forward": outcome, "swapped": outcome, "outcome": outcome}
                        for d in ("clarity", "brevity")
                    ],
                }
            )
    _jsonl(folder / "comparisons.jsonl", comparisons)

    cache_dir = folder / "cache"
    cache_dir.mkdir()
    with ResponseCache(cache_dir / "cache.sqlite") as cache:
        for i in range(3):
            cache.put(
                f"key{i}",
                {"text": f"reply {i}"},
                model=f"model-{i % 2}",
                backend="openai",
                endpoint=DEAD_URL,
            )
    for leftover in cache_dir.glob("cache.sqlite-*"):
        leftover.unlink()

    (folder / "prefjudge.toml").write_text(
        "[backend]\n"
        'kind = "openai"\n'
        'model = "fuzz-model"\n'
        f'base_url = "{DEAD_URL}"\n'
        "max_retries = 0\n"
        "temperature = 0.0\n"
        'cache = "cache.sqlite"\n'
        "max_tokens = 256\n",
        encoding="utf-8",
    )
    smoke = (ROOT / "examples" / "smoke.toml").read_text(encoding="utf-8")
    smoke = smoke.replace(
        '"../datasets/sample/tasks.jsonl"', json.dumps(str(folder / "tasks.jsonl"))
    )
    (folder / "experiment.toml").write_text(smoke, encoding="utf-8")
    return folder
