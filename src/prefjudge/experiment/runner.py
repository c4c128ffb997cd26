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

Each stage runs through :class:`~prefjudge.experiment.stages.StageRunner`, which keeps
what the stages return for the stages after them (the leaderboard is built from the
outcomes of this run, not from the files they wrote); what a stage still asks, its
failures and the plan are counted by one rule (:mod:`prefjudge.experiment.progress`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import sqlite3
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from prefjudge.backends.pool import BackendPool
from prefjudge.experiment.config import Experiment, issue_at
from prefjudge.experiment.plan import Stage, benchmark_source, build_plan
from prefjudge.experiment.progress import Left, failed_records, requests_left
from prefjudge.experiment.resume import journal_records
from prefjudge.experiment.stages import StageRunner
from prefjudge.experiment.tables import (
    failure_line,
    failure_table,
    judge_table,
    leaderboard_table,
    plan_table,
)
from prefjudge.io import InputError, write_json
from prefjudge.journal import file_fingerprint, output_choice
from prefjudge.judge.run import JudgingEngine
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.run import ScoringEngine
from prefjudge.scoring.sources import SourceError


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
    retry_errors: bool = False,
) -> dict[str, Any]:
    """Run (or with ``dry_run`` only show) every stage of ``experiment``.

    A failed model request never stops the run: it is kept as an error (a failed
    generation is scored as an error, never as an answer; a pair with a failed side waits;
    a failed verdict is no battle), every stage that can go on does, and the manifest's
    ``failures`` counts them (:func:`failure_table` shows them). ``retry_errors`` makes
    exactly those requests again, and redoes only what depends on them.

    Args:
        experiment: The checked experiment.
        base: The folder its relative paths are relative to.
        source_file: The experiment file (hashed into the manifest).
        reporter: Where the plan, progress, notes and tables go.
        dry_run: Show the plan with request counts per stage, check that each backend's
            libraries are installed, and run nothing.
        score_engine: Where the score stages run (None: this machine; ``--engine ray``
            gives a :class:`prefjudge.scale.score_engine.RayEngine`).
        judge_engine: Where the judge stages of ``evidence``/``hybrid`` find their facts
            (None: this machine; ``--engine ray`` gives a
            :class:`prefjudge.scale.judge_engine.RayJudgeEngine`).
        retry_errors: Make the failed model requests of every stage again (generations,
            verdicts), and no other model call.

    Returns:
        The manifest (also written to ``manifest.json`` unless ``dry_run``); its
        ``failures`` counts what failed, per stage.

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
    reporter.table(plan_table(stages, root, result=dry_run, retry_errors=retry_errors))
    manifest = _manifest(experiment, source_file, n_tasks)
    if dry_run:
        _check_extras(stages, source_file)
        return manifest
    root.mkdir(parents=True, exist_ok=True)
    hint = f"give this run another [experiment] name or results folder in {source_file}"
    with BackendPool() as pool, output_choice(hint):
        runner = StageRunner(experiment, pool, reporter, retry_errors)
        calls = _run_stages(stages, root, runner, manifest["stages"])
        manifest["backends_opened"] = pool.opened
    manifest["model_calls"] = calls
    manifest["failures"] = failures(stages, manifest["stages"])
    write_json(root / "manifest.json", manifest)
    reporter.note(f"done: {root} — {calls} model calls this run, "
                  f"{pool.opened} model backend(s) opened")
    if manifest["failures"]["stages"]:
        reporter.table(failure_table(manifest["failures"]))
    return manifest


def _manifest(experiment: Experiment, source_file: Path, n_tasks: int) -> dict[str, Any]:
    """The manifest's opening: the experiment, its file, settings and versions."""
    return {
        "experiment": experiment.experiment.name,
        "file": str(source_file),
        "file_sha256": file_sha256(source_file),
        "settings": experiment.model_dump(mode="json"),
        "versions": _versions(),
        "tasks": n_tasks,
        "stages": [],
    }


def _run_stages(stages: list[Stage], root: Path, runner: StageRunner,
                entries: list[dict[str, Any]]) -> int:
    """Run the stages in order, adding each one's manifest entry; return the model calls."""
    cache = root / "cache.sqlite"
    total_calls = 0
    for index, stage in enumerate(stages, start=1):
        # the plan's rule, now that the stages before ran
        left = requests_left(stage, retry_errors=runner.retry_errors)
        asks = f"{left.requests} model requests left, " if stage.requests else ""
        runner.reporter.note(
            f"[{index}/{len(stages)}] {stage.label} — {asks}model calls so far: {total_calls}"
        )
        stage.output.parent.mkdir(parents=True, exist_ok=True)
        before, started = cache_entries(cache), time.monotonic()
        try:
            extra = runner.run(stage)
        except StageError as exc:
            raise StageError(
                f"stage '{stage.label}' stopped: {exc}\nRun the experiment again to resume."
            ) from exc
        calls = cache_entries(cache) - before
        total_calls += calls
        entries.append(_stage_entry(stage, root, left, calls, time.monotonic() - started, extra))
    return total_calls


def _stage_entry(stage: Stage, root: Path, left: Left, calls: int, seconds: float,
                 extra: dict[str, Any]) -> dict[str, Any]:
    """A stage's entry in the manifest: settings, output, its hash and records, its calls."""
    jsonl = stage.output.suffix == ".jsonl"
    return {
        "stage": stage.label,
        "kind": stage.kind,
        "settings": settings_record(stage.settings),
        "output": str(stage.output.relative_to(root)),
        "sha256": file_sha256(stage.output),
        "records": len(journal_records(stage.output)) if jsonl else None,
        "planned_requests": left.requests,
        "planned_bound": stage.bound or "exact",
        "requests_done_before": left.done,
        "model_calls": calls,
        "seconds": round(seconds, 2),
        **extra,
    }


def _check_extras(stages: list[Stage], source_file: Path) -> None:
    """Refuse a plan whose backends' libraries are not installed (``run --dry-run``)."""
    from prefjudge.backends.extras import missing_extra

    kinds = {stage.backend.kind for stage in stages if stage.backend is not None}
    kinds |= {pair.backend.kind for stage in stages if stage.rounds is not None
              for pair in stage.rounds.pairs if pair.backend is not None}
    missing = [message for kind in sorted(kinds) if (message := missing_extra(kind))]
    if missing:
        raise StageError(f"{source_file}: " + "; ".join(missing))


def failures(stages: list[Stage], done: list[dict[str, Any]]) -> dict[str, Any]:
    """What failed in a run, per stage: failed model requests, and the pairs waiting on them.

    Args:
        stages: The plan's stages (their outputs are read now).
        done: The manifest's entries of the stages that ran (their ``pairs_waiting``).

    Returns:
        ``{"generations": n, "verdicts": n, "pairs_waiting": n,
        "stages": [{"stage", "kind", "failed", "pairs_waiting"}, ...]}`` with a row for
        each stage with something failed or waiting.
    """
    waiting = {entry["stage"]: entry.get("pairs_waiting", 0) for entry in done}
    counts = {"generations": 0, "verdicts": 0, "pairs_waiting": 0}
    rows = []
    for stage in stages:
        failed = failed_records(stage)
        stuck = waiting.get(stage.label, 0)
        if not (failed or stuck):
            continue
        what = "generations" if stage.kind == "generate" else "verdicts"
        counts[what] += failed
        counts["pairs_waiting"] += stuck
        rows.append({"stage": stage.label, "kind": what, "failed": failed,
                     "pairs_waiting": stuck})
    return {**counts, "stages": rows}


__all__ = [
    "count_tasks",
    "failure_line",
    "failure_table",
    "failures",
    "judge_table",
    "leaderboard_table",
    "plan_table",
    "run_experiment",
]
