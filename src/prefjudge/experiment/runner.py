"""Run an experiment's stages in order, each through its stage's use case.

Every stage is the use case a command runs (``augment_file``, ``generate_file``,
``score_file``, ``judge_file`` ...: the same journals, so a finished record is never redone
and a changed input or setting is refused), called here with typed settings. A rerun
therefore resumes where the last one stopped and, once everything is finished, makes no
model call. Stages that ask the same model backend share it: each distinct backend is
opened once per run (:class:`~prefjudge.backends.pool.BackendPool`). ``manifest.json``
records prefjudge's and Python's versions, the experiment file's hash and settings, the
backends opened, and per stage its settings, output hash, records and the model calls it
made (new entries of the experiment's response cache).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import sqlite3
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from prefjudge.backends import Backend, BackendError
from prefjudge.backends.pool import BackendPool
from prefjudge.experiment import leaderboard
from prefjudge.experiment.config import Experiment, issue_at
from prefjudge.experiment.judge_rounds import judge_in_rounds
from prefjudge.experiment.plan import (
    JudgePair,
    Stage,
    benchmark_source,
    build_plan,
    original_answers,
)
from prefjudge.experiment.progress import requests_left
from prefjudge.io import InputError, read_existing
from prefjudge.journal import file_fingerprint, output_choice
from prefjudge.judge.run import JudgingEngine, judge_file
from prefjudge.persona.run import compare_files, rewrite_file
from prefjudge.ranking.run import correlate_file, rank_file, rank_tables
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.scoring.run import ScoringEngine, score_file
from prefjudge.scoring.sources import SourceError
from prefjudge.testbed.augment.run import augment_file
from prefjudge.testbed.generation import generate_file
from prefjudge.testbed.report_run import report_file
from prefjudge.view.run import view_folder


def count_tasks(experiment: Experiment, base: Path) -> int:
    """Tasks in the benchmark slice (read from the file or the hub, no model involved)."""
    bench = experiment.benchmark
    from prefjudge.scoring.sources import load_task_source

    tasks = load_task_source(
        benchmark_source(base, bench.source),
        split=bench.split,
        subset=bench.subset,
        limit=bench.limit,
    )
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


def plan_table(stages: list[Stage], root: Path, *, result: bool = True) -> TextTable:
    """The plan as a table: stage, output, the model requests left and those already done.

    What is left is what a run would still ask (:func:`requests_left`: the records already
    in a stage's output are not made again), so a finished experiment plans 0.

    Args:
        stages: The stages.
        root: The results folder (outputs are shown relative to it).
        result: Whether the table is the command's result (stdout) or progress.

    Returns:
        The table; its last row is the total.
    """
    rows, total, done, bounds = [], 0, 0, set()
    for index, stage in enumerate(stages, start=1):
        left = requests_left(stage)
        shown = (
            "—"
            if not stage.requests
            else f"{stage.bound if left.requests else ''} {left.requests}".strip()
        )
        total, done = total + left.requests, done + left.done
        if left.requests:
            bounds.add(stage.bound)
        rows.append(
            [
                str(index),
                stage.label,
                str(stage.output.relative_to(root)),
                shown,
                str(left.done) if left.done else "—",
            ]
        )
    bound = "" if bounds <= {""} else ("≥" if bounds <= {"", "≥"} else "about")
    rows.append(["", "total", "", f"{bound} {total}".strip(), str(done)])
    columns = ["#", "stage", "output", "model requests left", "done"]
    return TextTable(
        f"prefjudge run — plan ({root}): {bound + ' ' if bound else ''}{total} "
        f"model requests left ({done} already done)",
        columns,
        rows,
        right=frozenset({"#", columns[3], "done"}),
        result=result,
    )


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


def settings_record(settings: Any) -> dict[str, Any] | None:
    """A stage's settings as JSON for the manifest (paths as text; None for none)."""
    if settings is None:
        return None

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {
                field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)
            }
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, dict):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, (list, tuple, frozenset, set)):
            return [plain(item) for item in value]
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return repr(value)

    return plain(settings)


def run_experiment(
    experiment: Experiment,
    base: Path,
    source_file: Path,
    reporter: Reporter,
    *,
    dry_run: bool = False,
    score_engine: ScoringEngine | None = None,
    judge_engine: JudgingEngine | None = None,
) -> dict[str, Any]:
    """Run (or with ``dry_run`` only show) every stage of ``experiment``.

    Args:
        experiment: The checked experiment.
        base: The folder its relative paths are relative to.
        source_file: The experiment file (hashed into the manifest).
        reporter: Where the plan, progress, notes and tables go.
        dry_run: Show the plan with request counts per stage, and run nothing.
        score_engine: Where the score stages run (None: this machine; ``--engine ray``
            gives a :class:`prefjudge.scale.score_engine.RayEngine`).
        judge_engine: Where the judge stages of ``evidence``/``hybrid`` find their facts
            (None: this machine; ``--engine ray`` gives a
            :class:`prefjudge.scale.judge_engine.RayJudgeEngine`).

    Returns:
        The manifest (also written to ``manifest.json`` unless ``dry_run``).

    Raises:
        InputError: The benchmark source cannot be read (named by the experiment file's
            line and ``benchmark.source``), or its records do not convert.
        StageError: A stage cannot go on (the message names it; the records it wrote are
            kept and a rerun resumes there).
    """
    try:
        n_tasks = count_tasks(experiment, base)
    except SourceError as exc:  # a missing file, a bad or uncached hub name: the file's line
        raise InputError([issue_at(source_file, ("benchmark", "source"), str(exc))]) from None
    root, stages = build_plan(experiment, base, n_tasks, score_engine, judge_engine)
    reporter.table(plan_table(stages, root, result=dry_run))
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
    cache = root / "cache.sqlite"
    total_calls = 0
    hint = f"give this run another [experiment] name or results folder in {source_file}"
    with BackendPool() as pool, output_choice(hint):
        for index, stage in enumerate(stages, start=1):
            left = requests_left(stage)  # the plan's rule, now that the stages before ran
            asks = f"{left.requests} model requests left, " if stage.requests else ""
            reporter.note(
                f"[{index}/{len(stages)}] {stage.label} — {asks}model calls so far: {total_calls}"
            )
            stage.output.parent.mkdir(parents=True, exist_ok=True)
            before, started = cache_entries(cache), time.monotonic()
            try:
                extra = _run_stage(stage, experiment, pool, reporter)
            except StageError as exc:
                raise StageError(
                    f"stage '{stage.label}' stopped: {exc}\nRun the experiment again to resume."
                ) from exc
            calls = cache_entries(cache) - before
            total_calls += calls
            manifest["stages"].append(
                {
                    "stage": stage.label,
                    "kind": stage.kind,
                    "settings": settings_record(stage.settings),
                    "output": str(stage.output.relative_to(root)),
                    "sha256": file_sha256(stage.output),
                    "records": _records(stage.output) if stage.output.suffix == ".jsonl" else None,
                    "planned_requests": left.requests,
                    "planned_bound": stage.bound or "exact",
                    "requests_done_before": left.done,
                    "model_calls": calls,
                    "seconds": round(time.monotonic() - started, 2),
                    **extra,
                }
            )
        manifest["backends_opened"] = pool.opened
    manifest["model_calls"] = total_calls
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    reporter.note(
        f"done: {root} — {total_calls} model calls this run, {pool.opened} model backend(s) opened"
    )
    return manifest


def _backend(pool: BackendPool, stage: Stage | JudgePair) -> Backend | None:
    """The stage's model backend from the pool (None when it asks no model)."""
    if stage.backend is None:
        return None
    try:
        return pool.get(stage.backend)
    except BackendError as exc:
        raise StageError(str(exc)) from exc


def _run_stage(
    stage: Stage, experiment: Experiment, pool: BackendPool, reporter: Reporter
) -> dict[str, Any]:
    """Run one stage; return what the manifest adds for it (the rounds' log)."""
    kind, settings = stage.kind, stage.settings
    if kind == "augment":
        augment_file(settings, _backend(pool, stage), reporter)
    elif kind == "generate":
        generate_file(settings, _require(_backend(pool, stage)), reporter)
    elif kind == "score":
        score_file(settings, reporter)
    elif kind == "judge":
        judge_file(settings, _backend(pool, stage), reporter)
    elif kind == "judge-rounds" and stage.rounds is not None:

        def judge_pair(pair: JudgePair, limit: int) -> None:
            judge_file(
                dataclasses.replace(pair.settings, limit=limit), _backend(pool, pair), reporter
            )

        return {"rounds": judge_in_rounds(stage.rounds, judge_pair, reporter)}
    elif kind == "rank":
        outcome = rank_file(settings, reporter)
        for table in rank_tables(settings, outcome):
            reporter.table(table)
    elif kind == "correlate":
        correlate_file(settings, reporter)
    elif kind == "report":
        report_file(settings, reporter)
    elif kind == "view":
        view_folder(settings, reporter)
    elif kind == "persona-rewrite":
        rewrite_file(settings, _require(_backend(pool, stage)), reporter)
    elif kind == "persona-compare":
        compared = compare_files(settings, _require(_backend(pool, stage)), reporter)
        reporter.note(compared.message)
        if compared.flips is not None:
            reporter.table(compared.flips.table)
            reporter.note(compared.flips.message)
    elif kind.startswith("merge"):
        reporter.note(f"{_merge(stage.inputs, stage.output)} records → {stage.output}")
    elif kind == "persona-originals":
        tasks, *generations = stage.inputs
        for model, gens in zip(experiment.models, generations, strict=True):
            kept = original_answers(tasks, gens, stage.output / f"{model.slug()}.jsonl")
            reporter.note(f"{model.name}: {kept} answers to the original prompts")
    elif kind == "leaderboard":
        _leaderboard(experiment, stage.output.parent, reporter)
    return {}


def _require(backend: Backend | None) -> Backend:
    if backend is None:  # pragma: no cover - the plan gives every model stage a backend
        raise StageError("this stage needs a model backend")
    return backend


def _leaderboard(experiment: Experiment, root: Path, reporter: Reporter) -> None:
    models = [model.name for model in experiment.models]
    slugs = [model.slug() for model in experiment.models]
    judgments = sorted((root / "judgments").glob("*.jsonl")) if experiment.judge else []
    current = {f"{a}__{b}.jsonl" for i, a in enumerate(slugs) for b in slugs[i + 1 :]}
    rows = leaderboard.build(
        models,
        [root / "scores" / f"{slug}.jsonl" for slug in slugs],
        [root / "generations" / f"{slug}.jsonl" for slug in slugs],
        [path for path in judgments if path.name in current],
        root / "ratings.json",
        experiment.rank.composite_alpha,
    )
    paths = leaderboard.write(rows, root, experiment.rank.composite_alpha)
    reporter.table(leaderboard_table(rows, experiment.rank.composite_alpha))
    reporter.note("wrote " + ", ".join(str(path.relative_to(root)) for path in paths))


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def leaderboard_table(rows: list[dict[str, Any]], alpha: float) -> TextTable:
    """The merged leaderboard as a table."""
    columns = [
        "model",
        "Elo [95% CI]",
        "rank range",
        "pass@1",
        "IF instr.",
        "IF task",
        f"composite (α={alpha:g})",
        "battles",
        "errors",
    ]
    shown = []
    for row in rows:
        elo = (
            "—"
            if row["elo"] is None
            else (f"{row['elo']:.0f} [{_fmt(row['elo_lower'], 0)}, {_fmt(row['elo_upper'], 0)}]")
        )
        ranks = "—" if row["rank_lower"] is None else f"{row['rank_lower']}–{row['rank_upper']}"
        errors = f"{row['judge_errors']} judge, {row['generation_errors']} gen"
        shown.append(
            [
                row["model"],
                elo,
                ranks,
                _fmt(row["pass1"]),
                _fmt(row["if_instruction"]),
                _fmt(row["if_task"]),
                _fmt(row["composite"]),
                str(row["battles"]),
                errors,
            ]
        )
    return TextTable("prefjudge run — leaderboard", columns, shown, right=frozenset(columns[1:]))


__all__ = ["count_tasks", "leaderboard_table", "plan_table", "run_experiment"]
