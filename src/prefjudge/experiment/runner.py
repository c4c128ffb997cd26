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
from prefjudge.experiment.progress import failed_records, requests_left
from prefjudge.io import InputError, read_existing, write_json
from prefjudge.journal import file_fingerprint, output_choice
from prefjudge.judge.run import AllPairsWaiting, JudgeFileSettings, JudgingEngine, judge_file
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


def plan_table(
    stages: list[Stage], root: Path, *, result: bool = True, retry_errors: bool = False
) -> TextTable:
    """The plan as a table: stage, output, the model requests left, done and failed.

    What is left is what a run would still ask (:func:`requests_left`: the records already
    in a stage's output are not made again), so a finished experiment plans 0. Failed
    requests (records kept as errors) are shown apart from the done ones: a plain run
    keeps them, ``retry_errors`` counts them as left.

    Args:
        stages: The stages.
        root: The results folder (outputs are shown relative to it).
        result: Whether the table is the command's result (stdout) or progress.
        retry_errors: Plan for ``run --retry-errors``.

    Returns:
        The table; its last row is the total.
    """
    rows, total, done, failed, bounds = [], 0, 0, 0, set()
    for index, stage in enumerate(stages, start=1):
        left = requests_left(stage, retry_errors=retry_errors)
        shown = (
            "—"
            if not stage.requests
            else f"{stage.bound if left.requests else ''} {left.requests}".strip()
        )
        total, done, failed = total + left.requests, done + left.done, failed + left.failed
        if left.requests:
            bounds.add(stage.bound)
        rows.append(
            [
                str(index),
                stage.label,
                str(stage.output.relative_to(root)),
                shown,
                str(left.done) if left.done else "—",
                str(left.failed) if left.failed else "—",
            ]
        )
    bound = "" if bounds <= {""} else ("≥" if bounds <= {"", "≥"} else "about")
    rows.append(["", "total", "", f"{bound} {total}".strip(), str(done), str(failed)])
    columns = ["#", "stage", "output", "model requests left", "done", "failed"]
    kept = f", {failed} failed: --retry-errors makes them again" if failed else ""
    return TextTable(
        f"prefjudge run — plan ({root}): {bound + ' ' if bound else ''}{total} "
        f"model requests left ({done} already done{kept})",
        columns,
        rows,
        right=frozenset({"#", columns[3], "done", "failed"}),
        result=result,
    )


def _merge(inputs: list[Path], output: Path, *, leave_out_errors: bool = False
           ) -> tuple[int, int]:
    """Concatenate JSONL files (in order) into ``output``, atomically.

    Args:
        inputs: The files (missing ones are skipped).
        output: The merged file.
        leave_out_errors: Leave out the records whose ``status`` is ``error`` (a failed
            verdict is no battle); only lines that mention ``"error"`` are parsed.

    Returns:
        The lines written and the lines left out.
    """
    lines = dropped = 0
    tmp = output.with_name(output.name + ".tmp")
    with tmp.open("wb") as out:
        for path in inputs:
            if not path.exists():
                continue
            with path.open("rb") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    if leave_out_errors and b'"error"' in line and _is_error(line):
                        dropped += 1
                        continue
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    lines += 1
    os.replace(tmp, output)
    return lines, dropped


def _is_error(line: bytes) -> bool:
    """Whether a JSONL line is a record whose ``status`` is ``error``."""
    try:
        record = json.loads(line)
    except ValueError:
        return False  # not this step's to judge: rank names the line
    return isinstance(record, dict) and record.get("status") == "error"


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
        _check_extras(stages, source_file)
        return manifest
    root.mkdir(parents=True, exist_ok=True)
    cache = root / "cache.sqlite"
    total_calls = 0
    hint = f"give this run another [experiment] name or results folder in {source_file}"
    with BackendPool() as pool, output_choice(hint):
        for index, stage in enumerate(stages, start=1):
            # the plan's rule, now that the stages before ran
            left = requests_left(stage, retry_errors=retry_errors)
            asks = f"{left.requests} model requests left, " if stage.requests else ""
            reporter.note(
                f"[{index}/{len(stages)}] {stage.label} — {asks}model calls so far: {total_calls}"
            )
            stage.output.parent.mkdir(parents=True, exist_ok=True)
            before, started = cache_entries(cache), time.monotonic()
            try:
                extra = _run_stage(stage, experiment, pool, reporter, retry_errors)
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
    manifest["failures"] = failures(stages, manifest["stages"])
    write_json(root / "manifest.json", manifest)
    reporter.note(
        f"done: {root} — {total_calls} model calls this run, {pool.opened} model backend(s) opened"
    )
    if manifest["failures"]["stages"]:
        reporter.table(failure_table(manifest["failures"]))
    return manifest


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


def failure_table(found: dict[str, Any]) -> TextTable:
    """The failures of a run (:func:`failures`) as a table: what failed in each stage."""
    rows = [[row["stage"], _count(row["failed"], row["kind"]),
             str(row["pairs_waiting"]) if row["pairs_waiting"] else "—"]
            for row in found["stages"]]
    columns = ["stage", "failed model requests", "pairs waiting on a failed generation"]
    return TextTable("prefjudge run — failures (kept as errors, never scored or ranked)",
                     columns, rows, right=frozenset(columns[1:]))


def _count(n: int, plural: str) -> str:
    """``1 generation``, ``3 generations``."""
    return f"{n} {plural[:-1] if n == 1 else plural}"


def failure_line(found: dict[str, Any], rerun: str) -> str | None:
    """The run's closing line when something failed (None when nothing did).

    For example ``8 generations and 5 verdicts failed; prefjudge run exp.toml
    --retry-errors retries them``.
    """
    parts = [_count(found[kind], kind) for kind in ("generations", "verdicts") if found.get(kind)]
    if not parts:
        return None
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    waiting = found["pairs_waiting"]
    wait = f" ({waiting} pair{'s' if waiting != 1 else ''} wait on them)" if waiting else ""
    return f"{said} failed{wait}; {rerun} --retry-errors retries them"


def _backend(pool: BackendPool, stage: Stage | JudgePair) -> Backend | None:
    """The stage's model backend from the pool (None when it asks no model)."""
    if stage.backend is None:
        return None
    try:
        return pool.get(stage.backend)
    except BackendError as exc:
        raise StageError(str(exc)) from exc


def _run_stage(
    stage: Stage, experiment: Experiment, pool: BackendPool, reporter: Reporter,
    retry_errors: bool = False,
) -> dict[str, Any]:
    """Run one stage; return what the manifest adds for it (the rounds' log, pairs waiting).

    With ``retry_errors`` the stages that ask a model make their failed requests again.
    """
    kind, settings = stage.kind, stage.settings
    if kind == "augment":
        augment_file(settings, _backend(pool, stage), reporter)
    elif kind == "generate":
        settings = dataclasses.replace(settings, retry_errors=retry_errors)
        generate_file(settings, _require(_backend(pool, stage)), reporter)
    elif kind == "score":
        score_file(settings, reporter)
    elif kind == "judge":
        settings = dataclasses.replace(settings, retry_errors=retry_errors)
        return {"pairs_waiting": _judge(settings, _backend(pool, stage), reporter)}
    elif kind == "judge-rounds" and stage.rounds is not None:
        waiting: dict[str, int] = {}

        def judge_pair(pair: JudgePair, limit: int) -> None:
            again = dataclasses.replace(pair.settings, limit=limit, retry_errors=retry_errors)
            waiting[pair.output.name] = _judge(again, _backend(pool, pair), reporter)

        rounds = judge_in_rounds(stage.rounds, judge_pair, reporter)
        return {"rounds": rounds, "pairs_waiting": sum(waiting.values())}
    elif kind == "merge-battles":
        lines, dropped = _merge(stage.inputs, stage.output, leave_out_errors=True)
        failed = f" ({dropped} failed verdicts left out: errors, not battles)" if dropped else ""
        reporter.note(f"{lines} battles → {stage.output}{failed}")
    elif kind == "rank":
        if not _records(settings.battles):
            for path in (settings.output, settings.json_path, settings.plot_path):
                if path is not None:
                    path.unlink(missing_ok=True)  # no ratings of an earlier run stay
            reporter.warn("rank: no battles yet (every verdict failed or waits): no ratings")
            return {}
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
        reporter.note(f"{_merge(stage.inputs, stage.output)[0]} records → {stage.output}")
    elif kind == "persona-originals":
        tasks, *generations = stage.inputs
        for model, gens in zip(experiment.models, generations, strict=True):
            kept = original_answers(tasks, gens, stage.output / f"{model.slug()}.jsonl")
            reporter.note(f"{model.name}: {kept} answers to the original prompts")
    elif kind == "leaderboard":
        _leaderboard(experiment, stage.output.parent, reporter)
    return {}


def _judge(settings: JudgeFileSettings, backend: Backend | None, reporter: Reporter) -> int:
    """Judge one model pair's verdict file; return its pairs waiting on failed generations."""
    try:
        return judge_file(settings, backend, reporter).waiting
    except AllPairsWaiting as exc:  # nothing to judge yet: the run goes on without them
        reporter.warn(f"warning: {exc}")
        return exc.waiting


def _require(backend: Backend | None) -> Backend:
    if backend is None:  # pragma: no cover - the plan gives every model stage a backend
        raise StageError("this stage needs a model backend")
    return backend


def _leaderboard(experiment: Experiment, root: Path, reporter: Reporter) -> None:
    models = [model.name for model in experiment.models]
    slugs = [model.slug() for model in experiment.models]
    judgments = sorted((root / "judgments").glob("*.jsonl")) if experiment.judge else []
    current = {f"{a}__{b}.jsonl" for i, a in enumerate(slugs) for b in slugs[i + 1 :]}
    current_judgments = [path for path in judgments if path.name in current]
    rows = leaderboard.build(
        models,
        [root / "scores" / f"{slug}.jsonl" for slug in slugs],
        [root / "generations" / f"{slug}.jsonl" for slug in slugs],
        current_judgments,
        root / "ratings.json",
        experiment.rank.composite_alpha,
    )
    judge_rows = leaderboard.judges(current_judgments)
    paths = leaderboard.write(rows, root, experiment.rank.composite_alpha, judge_rows)
    reporter.table(leaderboard_table(rows, experiment.rank.composite_alpha))
    if judge_rows:
        reporter.table(judge_table(judge_rows))
    reporter.note("wrote " + ", ".join(str(path.relative_to(root)) for path in paths))


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def judge_table(rows: list[dict[str, Any]]) -> TextTable:
    """The judges of the leaderboard (:func:`prefjudge.experiment.leaderboard.judges`)."""
    columns = ["judge", "verdicts", "errors", "position consistency", "tie rate"]
    shown = [[row["judge"], str(row["verdicts"]), str(row["errors"]),
              _fmt(row["position_consistency"]), _fmt(row["tie_rate"])] for row in rows]
    return TextTable("prefjudge run — judges", columns, shown, right=frozenset(columns[1:]))


def leaderboard_table(rows: list[dict[str, Any]], alpha: float) -> TextTable:
    """The merged leaderboard as a table (base and plus pass@1 where a model has them)."""
    plus = any(row.get("plus_pass1") is not None for row in rows)
    columns = [
        "model",
        "Elo [95% CI]",
        "rank range",
        "pass@1",
        *(["base pass@1", "plus pass@1"] if plus else []),
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
                *([_fmt(row.get("base_pass1")), _fmt(row.get("plus_pass1"))] if plus else []),
                _fmt(row["if_instruction"]),
                _fmt(row["if_task"]),
                _fmt(row["composite"]),
                str(row["battles"]),
                errors,
            ]
        )
    return TextTable("prefjudge run — leaderboard", columns, shown, right=frozenset(columns[1:]))


__all__ = ["count_tasks", "leaderboard_table", "plan_table", "run_experiment"]
