"""Run an experiment's stages in order, each through its own resumable command.

Every stage is the ``prefjudge`` command a user would type (same journals: a finished
record is never redone, a changed input or setting is refused), run in this process. A
rerun therefore resumes where the last one stopped and, once everything is finished,
makes no model call. ``manifest.json`` records prefjudge's and Python's versions, the
experiment file's hash and settings, and per stage its command, output hash, records and
the model calls it made (new entries of the experiment's response cache).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sqlite3
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.experiment import leaderboard
from prefjudge.experiment.config import Experiment, issue_at
from prefjudge.experiment.judge_rounds import judge_in_rounds
from prefjudge.experiment.plan import Stage, benchmark_source, build_plan, original_answers
from prefjudge.io import InputError, read_existing
from prefjudge.journal import file_fingerprint
from prefjudge.scoring.sources import SourceError

COMMANDS_WITH_CONFIG = ("augment", "generate", "judge", "persona")


def count_tasks(experiment: Experiment, base: Path) -> int:
    """Tasks in the benchmark slice (read from the file or the hub, no model involved)."""
    bench = experiment.benchmark
    from prefjudge.scoring.sources import load_task_source

    tasks = load_task_source(benchmark_source(base, bench.source), split=bench.split,
                             subset=bench.subset, limit=bench.limit)
    return min(len(tasks), bench.limit or len(tasks))


def cache_entries(path: Path) -> int:
    """Responses stored in the experiment's cache (0 before it exists)."""
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        except sqlite3.Error:
            return 0


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file (None when it is not a file)."""
    return file_fingerprint(path)["sha256"] if path.is_file() else None


def plan_table(stages: list[Stage], root: Path) -> Table:
    """The plan as a table: stage, output, model requests."""
    table = Table(title=f"prefjudge run — plan ({root})")
    table.add_column("#", justify="right")
    table.add_column("stage")
    table.add_column("output")
    table.add_column("model requests", justify="right")
    total, bounds = 0, set()
    for index, stage in enumerate(stages, start=1):
        shown = "—" if not stage.requests else f"{stage.bound} {stage.requests}".strip()
        total += stage.requests
        bounds.add(stage.bound)
        table.add_row(str(index), escape(stage.label), escape(str(stage.output.relative_to(root))),
                      shown)
    bound = "" if bounds <= {""} else ("≥" if bounds <= {"", "≥"} else "about")
    table.add_row("", "[bold]total[/]", "", f"[bold]{bound} {total}[/]".replace("] ", "]"))
    return table


def _merge(inputs: list[Path], output: Path) -> int:
    """Concatenate JSONL files (in order) into ``output``, atomically; return the lines."""
    lines = 0
    tmp = output.with_name(output.name + ".tmp")
    with tmp.open("wb") as out:
        for path in inputs:
            if not path.exists():
                continue
            with path.open("rb") as handle:
                for line in handle:
                    if line.strip():
                        out.write(line if line.endswith(b"\n") else line + b"\n")
                        lines += 1
    os.replace(tmp, output)
    return lines


def _records(path: Path) -> int:
    return len(read_existing(path)) if path.exists() else 0


def _versions() -> dict[str, str]:
    from prefjudge.scoring.verify import ruff_version

    try:
        version = metadata.version("prefjudge")
    except metadata.PackageNotFoundError:  # pragma: no cover - not installed
        version = "unknown"
    return {"prefjudge": version, "python": platform.python_version(), "ruff": ruff_version()}


def run_experiment(experiment: Experiment, base: Path, source_file: Path, console: Console,
                   invoke: Callable[[list[str]], None], dry_run: bool = False,
                   score_args: Sequence[str] = ()) -> dict[str, Any]:
    """Run (or with ``dry_run`` only show) every stage of ``experiment``.

    Args:
        experiment: The checked experiment.
        base: The folder its relative paths are relative to.
        source_file: The experiment file (hashed into the manifest).
        console: Where progress goes.
        invoke: Runs one ``prefjudge`` command line (the command layer's), raising when
            the command fails; the run stops there and resumes on the next call.
        dry_run: Print the plan with request counts per stage, and run nothing.
        score_args: Options added to every ``score`` stage (``--engine ray`` and its own).

    Returns:
        The manifest (also written to ``manifest.json`` unless ``dry_run``).

    Raises:
        InputError: The benchmark source cannot be read (named by the experiment file's
            line and ``benchmark.source``), or its records do not convert.
    """
    try:
        n_tasks = count_tasks(experiment, base)
    except SourceError as exc:  # a missing file, a bad or uncached hub name: the file's line
        raise InputError([issue_at(source_file, ("benchmark", "source"), str(exc))]) from None
    root, stages = build_plan(experiment, base, n_tasks, score_args)
    console.print(plan_table(stages, root))
    manifest: dict[str, Any] = {
        "experiment": experiment.experiment.name,
        "file": str(source_file),
        "file_sha256": file_sha256(source_file),
        "settings": experiment.model_dump(mode="json"),
        "versions": _versions(),
        "tasks": n_tasks,
        "stages": [],
    }
    if dry_run:
        return manifest
    root.mkdir(parents=True, exist_ok=True)
    empty_config = root / "stage-config.toml"
    empty_config.write_text("# prefjudge run: no ./prefjudge.toml for the stages\n",
                            encoding="utf-8")
    cache = root / "cache.sqlite"
    total_calls = 0
    for index, stage in enumerate(stages, start=1):
        console.rule(f"[bold][{index}/{len(stages)}] {escape(stage.label)}[/] — model calls "
                     f"so far: {total_calls}")
        stage.output.parent.mkdir(parents=True, exist_ok=True)
        before, started = cache_entries(cache), time.monotonic()
        extra: dict[str, Any] = {}
        if stage.args:
            args = list(stage.args)
            if args[0] in COMMANDS_WITH_CONFIG:
                args += ["--config", str(empty_config)]
            invoke(args)
        elif stage.kind.startswith("merge"):
            console.print(f"{_merge(stage.inputs, stage.output)} records → "
                          f"{escape(str(stage.output))}")
        elif stage.kind == "persona-originals":
            tasks, *generations = stage.inputs
            for model, gens in zip(experiment.models, generations, strict=True):
                kept = original_answers(tasks, gens, stage.output / f"{model.slug()}.jsonl")
                console.print(f"{model.name}: {kept} answers to the original prompts")
        elif stage.kind == "leaderboard":
            _leaderboard(experiment, root, console)
        elif stage.kind == "judge-rounds" and stage.rounds is not None:
            extra["rounds"] = judge_in_rounds(
                stage.rounds, lambda args: invoke([*args, "--config", str(empty_config)]),
                console)
        calls = cache_entries(cache) - before
        total_calls += calls
        manifest["stages"].append({
            "stage": stage.label, "kind": stage.kind,
            "command": ["prefjudge", *stage.args] if stage.args else None,
            "output": str(stage.output.relative_to(root)),
            "sha256": file_sha256(stage.output), "records": _records(stage.output)
            if stage.output.suffix == ".jsonl" else None,
            "planned_requests": stage.requests, "planned_bound": stage.bound or "exact",
            "model_calls": calls,
            "seconds": round(time.monotonic() - started, 2),
            **extra,
        })
    manifest["model_calls"] = total_calls
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    console.print(f"[green]done:[/] {escape(str(root))} — {total_calls} model calls this run")
    return manifest


def _leaderboard(experiment: Experiment, root: Path, console: Console) -> None:
    models = [model.name for model in experiment.models]
    slugs = [model.slug() for model in experiment.models]
    judgments = sorted((root / "judgments").glob("*.jsonl")) if experiment.judge else []
    current = {f"{a}__{b}.jsonl" for i, a in enumerate(slugs) for b in slugs[i + 1:]}
    rows = leaderboard.build(
        models,
        [root / "scores" / f"{slug}.jsonl" for slug in slugs],
        [root / "generations" / f"{slug}.jsonl" for slug in slugs],
        [path for path in judgments if path.name in current],
        root / "ratings.json",
        experiment.rank.composite_alpha,
    )
    paths = leaderboard.write(rows, root, experiment.rank.composite_alpha)
    console.print(leaderboard_table(rows, experiment.rank.composite_alpha))
    console.print("wrote " + ", ".join(escape(str(path.relative_to(root))) for path in paths))


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def leaderboard_table(rows: list[dict[str, Any]], alpha: float) -> Table:
    """The merged leaderboard as a rich table."""
    table = Table(title="prefjudge run — leaderboard")
    for name in ("model", "Elo [95% CI]", "rank range", "pass@1", "IF instr.", "IF task",
                 f"composite (α={alpha:g})", "battles", "errors"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for row in rows:
        elo = "—" if row["elo"] is None else (
            f"{row['elo']:.0f} [{_fmt(row['elo_lower'], 0)}, {_fmt(row['elo_upper'], 0)}]")
        ranks = "—" if row["rank_lower"] is None else f"{row['rank_lower']}–{row['rank_upper']}"
        errors = f"{row['judge_errors']} judge, {row['generation_errors']} gen"
        table.add_row(escape(row["model"]), elo, ranks, _fmt(row["pass1"]),
                      _fmt(row["if_instruction"]), _fmt(row["if_task"]), _fmt(row["composite"]),
                      str(row["battles"]), errors)
    return table


__all__ = ["count_tasks", "leaderboard_table", "plan_table", "run_experiment"]
