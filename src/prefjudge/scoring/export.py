"""Write scored records as the result files EvalPlus and BigCodeBench write, field for field.

``prefjudge score ... --export FORMAT=DIR`` calls :func:`export_scores` once the output is
complete (also when a rerun had nothing left to score), so that the peers' own readers,
leaderboard and analysis scripts read prefjudge's verdicts. The shapes follow the peers'
source: ``evalplus/evaluate.py`` of EvalPlus 0.3.1 and ``bigcodebench/evaluate.py`` of
BigCodeBench 0.2.5.

EvalPlus (``evalplus``; HumanEval+ and MBPP+ tasks), per model and dataset::

    DIR/humaneval/<model>.jsonl                {"task_id", "solution"} per sample
    DIR/humaneval/<model>_eval_results.json    {"date", "hash", "eval": {task_id: [
        {"task_id", "solution", "base_status", "plus_status",
         "base_fail_tests", "plus_fail_tests"}, ...]},
        "pass_at_k": {"base": {"pass@1", ...}, "plus": {"pass@1", ...}}}

(``mbpp/`` for MBPP+), the names EvalPlus 0.3.1 gives them: ``evalplus.codegen`` writes
``<root>/<dataset>/<identifier>.jsonl`` and ``evalplus.evaluate --samples X.jsonl`` writes
its results to ``X_eval_results.json`` (and reads them back from there instead of running
again), so ``evalplus.evaluate --dataset humaneval --samples DIR/humaneval/<model>.jsonl``
prints pass@k from prefjudge's verdicts. ``date`` is ``%Y-%m-%d %H:%M``; ``hash`` is the
MD5 of the decompressed task file, as ``get_human_eval_plus_hash`` /
``get_mbpp_plus_hash`` compute it from the same release file (null when the tasks came
from a hub dataset, which has no such file); ``json.dump`` without indentation, as EvalPlus.
``pass_at_k`` is the block ``evalplus.evaluate`` adds before it saves the file: the mean
unbiased pass@k over the file's tasks, for each k of 1, 10, 100 that every task has samples
for, on the base tests and on base and plus tests together (a sample passes those when both
its statuses are ``pass``) (:func:`evalplus_pass_at_k`).
``base_fail_tests`` / ``plus_fail_tests`` hold the input at which the set stopped (the
first failing input of :attr:`~prefjudge.records.SetResult.failed`), as EvalPlus's default
run (``fast_check``) lists it, MBPP+ inputs written back as ``mbpp_serialize_inputs`` does.

BigCodeBench (``bigcodebench``; BigCodeBench tasks), per model::

    DIR/<model>--bigcodebench-<split>--prefjudge.jsonl                  samples
    DIR/<model>--bigcodebench-<split>--prefjudge_eval_results.json      {"date", "eval":
        {task_id: [{"task_id", "solution", "status", "details"}, ...]}}
    DIR/<model>--bigcodebench-<split>--prefjudge_pass_at_k.json         {"pass@1", "pass@5",
        "pass@10" (each k that every task has samples for), "model", "split", "subset",
        "calibrated", "gt_pass_rate", "failed_tasks"}

(``bigcodebench-hard-<split>`` for the hard subset), named as ``bigcodebench.generate``
names samples and ``bigcodebench.evaluate`` its results (``model`` is the file name up to
``--bigcodebench-``, as there), indented by 2 as BigCodeBench writes them. ``split`` and
``subset`` come from the generations file's name when it follows BigCodeBench's naming
(``...--bigcodebench-hard-complete--...``), else ``instruct`` and ``full`` (prefjudge's
BigCodeBench tasks pose ``instruct_prompt``). ``details`` maps the first failing test
(prefjudge keeps the first; its detail says how many failed) to its message, or ``ALL``
to the reason the module did not load, as BigCodeBench does; ``{}`` for a pass or a
timeout. Differences, all in the pass@k file: ``calibrated`` is false (prefjudge runs
the code as written; BigCodeBench's default prefixes ``code_prompt`` + ``pass``), and
prefjudge does not run BigCodeBench's reference solutions, so ``gt_pass_rate`` and
``failed_tasks`` are what BigCodeBench writes when the ground truth is not checked
(``--no_gt``): 0.0 and every task of the loaded dataset.

Statuses: prefjudge's ``pass``, ``fail`` and ``timeout`` are the peers' own (both name them
``pass``, ``fail``, ``timeout``), except that an EvalPlus input set that stopped at an input
over its time limit is ``fail``, as EvalPlus calls it (:data:`EVALPLUS_SET_STATUS`). Neither
peer has a status for a run its harness could not judge: an exception in its harness is
``fail`` (BigCodeBench puts the message in ``details["ALL"]``), so a prefjudge ``error`` (a
missing library the task declares, a reference solution that did not run, a harness that
did not start) is
written as ``fail``, with prefjudge's reason where the format has a field for it. The peers'
figures therefore count it as a failure, as the peers themselves would; prefjudge's own
tables leave it out and count it apart, and the export says how many it wrote so.

Each model's samples go to their own files, in the order of the output (by ``sample``
within a task); a model scored under several protocols or numbers of instructions gets a
file per ``(protocol, k)`` (``<model>_<protocol>-k<k>``). Model names become file names
with ``/`` as ``--`` (as both peers do) and any other character outside ASCII letters,
digits, ``.``, ``_`` and ``-`` as ``_``; for BigCodeBench, a model named after a
BigCodeBench samples file (``score``'s default model is the file's stem) is cut before its
``--bigcodebench-``, which BigCodeBench's file names hold once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from prefjudge.io import InputError, dumps_json, iter_records
from prefjudge.paths import check_path_name
from prefjudge.records import FuncResult, ScoredSample, Task
from prefjudge.reporting import Reporter, StageError
from prefjudge.sandbox.adapters import evalplus_dataset
from prefjudge.scoring.export_figures import (
    BIGCODEBENCH_KS,
    EVALPLUS_KS,
    bigcodebench_pass_at_k,
    bigcodebench_split,
    dataset_hash,
    evalplus_pass_at_k,
    mean_pass_at_k,
)
from prefjudge.scoring.rows import protocol_of, sample_k
from prefjudge.scoring.verify.extract import code_of

ExportFormat = Literal["evalplus", "bigcodebench"]

EXPORT_FORMATS: tuple[ExportFormat, ...] = ("evalplus", "bigcodebench")
"""The peers whose result files ``--export`` writes."""

TEST_FORMAT = {"evalplus": "evalplus", "bigcodebench": "bigcodebench"}
"""The task ``test_format`` each export format fits."""

DATE_FORMAT = "%Y-%m-%d %H:%M"
"""How both peers write ``date``."""

PEER_STATUS = {"pass": "pass", "fail": "fail", "timeout": "timeout", "error": "fail"}
"""prefjudge's functional statuses in the peers' words (see the module docstring)."""

EVALPLUS_SET_STATUS = {**PEER_STATUS, "timeout": "fail"}
"""An input set's status in EvalPlus's words: an input over its time limit is ``fail`` there
(its ``time_limit`` raises inside the run; only a process that outlives the whole set's
budget is ``timeout``), and prefjudge's set timeouts are per-input limits."""


class ExportError(StageError):
    """The export cannot be written as asked.

    A format that fits none of the tasks, records without test verdicts.

    Attributes:
        param_hint: The option at fault (``--export``), for the command's usage error.
    """

    param_hint = "--export"


@dataclass(frozen=True)
class ExportTarget:
    """One ``--export FORMAT=DIR``.

    Attributes:
        format: ``evalplus`` or ``bigcodebench``.
        directory: Where the files go (created when missing).
    """

    format: ExportFormat
    directory: Path


@dataclass(frozen=True)
class ExportSettings:
    """What :func:`export_scores` reads and writes.

    Attributes:
        scores: The scored output (JSONL of :class:`~prefjudge.records.ScoredSample`).
        target: The format and folder.
        tasks: The tasks the records were scored against, by id.
        task_files: The task files read (for EvalPlus's dataset ``hash``).
        generations: The generations file's name (for BigCodeBench's split and subset).
        date: When the results are dated (None: now).
    """

    scores: Path
    target: ExportTarget
    tasks: Mapping[str, Task]
    task_files: Sequence[Path] = ()
    generations: str = ""
    date: datetime | None = None


@dataclass(frozen=True)
class ExportOutcome:
    """What an export wrote.

    Attributes:
        files: The files written, in order.
        samples: Samples written.
        errors: Samples whose run ended in ``error``, written as the peer's ``fail``.
        left_out: Records left out because their task is not of the format.
    """

    files: list[Path] = field(default_factory=list)
    samples: int = 0
    errors: int = 0
    left_out: int = 0


def parse_target(text: str) -> ExportTarget:
    """Read ``FORMAT=DIR``.

    Args:
        text: The option's value.

    Returns:
        The target.

    Raises:
        ValueError: When the text is not ``FORMAT=DIR`` with a known format.
    """
    name, sep, directory = text.partition("=")
    if not sep or not directory:
        raise ValueError(f"expected FORMAT=DIR (e.g. evalplus=results/), got {text!r}")
    name = name.strip().lower()
    if name not in EXPORT_FORMATS:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(EXPORT_FORMATS)}")
    return ExportTarget(name, Path(directory))  # type: ignore[arg-type]


def check_fits(fmt: ExportFormat, tasks: Mapping[str, Task]) -> None:
    """Refuse an export format none of the tasks is in (before anything is scored).

    Args:
        fmt: The export format.
        tasks: The tasks of the run.

    Raises:
        ExportError: When no task has the format's ``test_format``.
    """
    wanted = TEST_FORMAT[fmt]
    if any(task.test_format == wanted for task in tasks.values()):
        return
    found = sorted({task.test_format for task in tasks.values()})
    raise ExportError(
        f"--export {fmt} needs {_format_names(fmt)} tasks, and "
        + (f"the tasks given are {', '.join(found)} tasks" if found else "no tasks were given")
        + f" (--export {'bigcodebench' if fmt == 'evalplus' else 'evalplus'} fits "
        f"{_format_names('bigcodebench' if fmt == 'evalplus' else 'evalplus')} tasks)"
    )


def _format_names(fmt: str) -> str:
    return "HumanEval+/MBPP+" if fmt == "evalplus" else "BigCodeBench"


def model_file_name(model: str) -> str:
    """A model's name as the stem of its export files (see the module docstring).

    Raises:
        ExportError: When nothing usable is left of the name.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", model.replace("/", "--"))
    try:
        return check_path_name(slug)
    except ValueError as exc:
        raise ExportError(f"model {model!r} cannot name an export file: {exc}") from exc


def read_scores(path: Path) -> Iterable[ScoredSample]:
    """The scored records of ``path``, one at a time.

    Raises:
        StageError: When a line is not a scored record (the message names file and line).
    """
    try:
        yield from iter_records(path, ScoredSample)
    except InputError as exc:
        raise StageError(f"cannot export {path}: {exc}") from exc


# --------------------------------------------------------------------------- entries


def solution_of(record: ScoredSample) -> str:
    """The code prefjudge ran for ``record`` (what the peers call the solution)."""
    return code_of(record.response, record.meta.get("profile"), is_code=record.response_is_code)


def _mbpp_fail_input(number: int, raw: Any) -> Any:
    """An MBPP+ input as EvalPlus writes a failing one.

    That is ``mbpp_serialize_inputs`` of ``mbpp_deserialize_inputs`` of the stored input;
    they differ from it for tasks 115, 124 and 252 only (elsewhere the rebuilt tuples are
    written back as the same JSON lists).
    """
    if number == 124:
        return [str(float(raw[0])), str(complex(raw[1]))]
    if number == 252:
        return [str(complex(raw[0]))]
    if number == 115:
        return [[list(set(item)) if isinstance(item, list) and item else [] for item in raw[0]]]
    return raw


def _fail_tests(task: Task, name: str, failed: Sequence[int]) -> list[Any]:
    """EvalPlus's ``<set>_fail_tests``: the input the set stopped at (its first failure)."""
    inputs = (task.base_inputs if name == "base" else task.plus_inputs) or []
    if not failed or not 0 <= failed[0] < len(inputs):
        return []
    raw = inputs[failed[0]]
    if evalplus_dataset(task) == "mbpp":
        raw = _mbpp_fail_input(int(task.task_id.rsplit("/", 1)[-1]), raw)
    return [raw]


def evalplus_entry(record: ScoredSample, task: Task) -> dict[str, Any]:
    """One sample of EvalPlus's ``eval_results.json``.

    Args:
        record: A scored HumanEval+/MBPP+ sample with a functional verdict.
        task: Its task.

    Returns:
        ``{"task_id", "solution", "base_status", "plus_status", "base_fail_tests",
        "plus_fail_tests"}``.

    Raises:
        ExportError: When the record has no per-set verdicts although its run ended with
            one (scored before prefjudge kept base and plus apart).
    """
    func = _func_of(record)
    sets = func.sets
    if sets is None:
        if func.status != "error":
            raise ExportError(
                f"{record.task_id} ({record.model}): the record has no base/plus verdicts "
                "(func.sets; scored before prefjudge kept them apart): score again with "
                "--force-new to export it for EvalPlus")
        status = PEER_STATUS["error"]
        return {"task_id": record.task_id, "solution": solution_of(record),
                "base_status": status, "plus_status": status,
                "base_fail_tests": [], "plus_fail_tests": []}
    entry: dict[str, Any] = {"task_id": record.task_id, "solution": solution_of(record)}
    fails: dict[str, list[Any]] = {}
    for name in ("base", "plus"):
        result = sets.get(name)
        status = result.status if result is not None else func.status
        entry[f"{name}_status"] = EVALPLUS_SET_STATUS[status]
        fails[name] = ([] if result is None or status == "pass"
                       else _fail_tests(task, name, result.failed))
    entry["base_fail_tests"] = fails["base"]
    entry["plus_fail_tests"] = fails["plus"]
    return entry


_FIRST_TEST = re.compile(r"tests failed; first: (?:[\w.]+\.)?(\w+)\n")


def bigcodebench_entry(record: ScoredSample) -> dict[str, Any]:
    """One sample of BigCodeBench's ``eval_results.json``.

    Args:
        record: A scored BigCodeBench sample with a functional verdict.

    Returns:
        ``{"task_id", "solution", "status", "details"}``.
    """
    func = _func_of(record)
    details: dict[str, str] = {}
    if func.status in ("fail", "error"):
        found = _FIRST_TEST.search(func.detail)
        details = {found.group(1): func.detail} if found else {"ALL": func.detail}
    return {"task_id": record.task_id, "solution": solution_of(record),
            "status": PEER_STATUS[func.status], "details": details}


def _func_of(record: ScoredSample) -> FuncResult:
    if record.func is None:
        raise ExportError(f"{record.task_id} ({record.model}): no unit-test verdict")
    return record.func


# --------------------------------------------------------------------------- files


@dataclass
class _Group:
    """The records of one (model, protocol, k), as entries by task, in order."""

    model: str
    protocol: str
    k: int
    tasks: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)


def _collect(
    records: Iterable[ScoredSample], fmt: ExportFormat, tasks: Mapping[str, Task]
) -> tuple[list[_Group], int, int, int]:
    """Entries grouped by (model, protocol, k); and counts written, errored, left out."""
    wanted = TEST_FORMAT[fmt]
    groups: dict[tuple[str, str, int], _Group] = {}
    written = errors = left_out = 0
    for record in records:
        task = tasks.get(record.task_id)
        if task is None or task.test_format != wanted:
            left_out += 1
            continue
        if record.func is None:
            raise ExportError(
                f"{record.task_id} ({record.model}): the record has no unit-test verdict "
                "(scored with --no-tests?): the export needs one for every sample")
        entry = evalplus_entry(record, task) if fmt == "evalplus" else bigcodebench_entry(record)
        key = (record.model, protocol_of(record), sample_k(record))
        group = groups.setdefault(key, _Group(*key))
        group.tasks.setdefault(record.task_id, []).append((record.sample, entry))
        written += 1
        errors += record.func.status == "error"
    return list(groups.values()), written, errors, left_out


def _stems(groups: Sequence[_Group], *, cut: str = "") -> dict[tuple[str, str, int], str]:
    """Each group's file stem (the model's, plus ``_<protocol>-k<k>`` when it has several).

    ``cut``: a model name holding it is cut there (BigCodeBench's ``--bigcodebench-``: a
    model named after its samples file, ``M--bigcodebench-instruct--...``, is ``M``, as
    ``bigcodebench.evaluate`` reads ``model`` from a file name).
    """
    per_model: dict[str, int] = {}
    for group in groups:
        per_model[group.model] = per_model.get(group.model, 0) + 1
    stems: dict[tuple[str, str, int], str] = {}
    seen: dict[str, str] = {}
    for group in groups:
        stem = model_file_name(group.model)
        if cut and cut in stem[1:]:
            stem = stem[:stem.index(cut, 1)]
        if per_model[group.model] > 1:
            stem = model_file_name(f"{stem}_{group.protocol}-k{group.k}")
        if stem in seen and seen[stem] != group.model:
            raise ExportError(f"models {seen[stem]!r} and {group.model!r} would both be "
                              f"exported as {stem!r}: rename one (score --model)")
        seen[stem] = group.model
        stems[(group.model, group.protocol, group.k)] = stem
    return stems


def _ordered(group: _Group) -> dict[str, list[dict[str, Any]]]:
    """Entries by task, each task's in sample order (stable: output order among equals)."""
    return {task_id: [entry for _, entry in sorted(items, key=lambda item: item[0])]
            for task_id, items in group.tasks.items()}


def _write_samples(path: Path, by_task: Mapping[str, list[dict[str, Any]]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for task_id, entries in by_task.items():
            for entry in entries:
                handle.write(dumps_json({"task_id": task_id, "solution": entry["solution"]},
                                        ensure_ascii=True) + "\n")


def _write_json(path: Path, data: Any, *, indent: int | None) -> None:
    """Strict JSON as the peers' ``json.dump`` writes it (ASCII, no final newline)."""
    path.write_text(dumps_json(data, indent=indent, ensure_ascii=True), encoding="utf-8")


def write_evalplus(
    groups: Sequence[_Group], tasks: Mapping[str, Task], directory: Path, *,
    task_files: Sequence[Path], date: str,
) -> list[Path]:
    """EvalPlus's samples and ``_eval_results.json`` per group and dataset."""
    files: list[Path] = []
    stems = _stems(groups)
    hashes: dict[str, str | None] = {}
    for group in groups:
        by_dataset: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for task_id, entries in _ordered(group).items():
            dataset = evalplus_dataset(tasks[task_id])
            by_dataset.setdefault(dataset, {})[task_id] = entries
        for dataset, by_task in by_dataset.items():
            if dataset not in hashes:
                hashes[dataset] = dataset_hash(task_files, dataset)
            folder = directory / dataset
            folder.mkdir(parents=True, exist_ok=True)
            stem = stems[(group.model, group.protocol, group.k)]
            samples, results = folder / f"{stem}.jsonl", folder / f"{stem}_eval_results.json"
            _write_samples(samples, by_task)
            _write_json(results, {"date": date, "hash": hashes[dataset], "eval": by_task,
                                  "pass_at_k": evalplus_pass_at_k(by_task)}, indent=None)
            files += [samples, results]
    return files


def write_bigcodebench(
    groups: Sequence[_Group], tasks: Mapping[str, Task], directory: Path, *,
    generations: str, date: str,
) -> list[Path]:
    """BigCodeBench's samples, ``_eval_results.json`` and ``_pass_at_k.json`` per group."""
    files: list[Path] = []
    stems = _stems(groups, cut="--bigcodebench-")
    split, subset = bigcodebench_split(generations)
    extra = "-hard" if subset == "hard" else ""
    task_ids = [task_id for task_id, task in tasks.items() if task.test_format == "bigcodebench"]
    directory.mkdir(parents=True, exist_ok=True)
    for group in groups:
        stem = stems[(group.model, group.protocol, group.k)]
        name = f"{stem}--bigcodebench{extra}-{split}--prefjudge"
        by_task = _ordered(group)
        results = {"date": date, "eval": by_task}
        samples = directory / f"{name}.jsonl"
        results_path = directory / f"{name}_eval_results.json"
        pass_path = directory / f"{name}_pass_at_k.json"
        _write_samples(samples, by_task)
        _write_json(results_path, results, indent=2)
        _write_json(pass_path, bigcodebench_pass_at_k(results, task_ids, model=stem,
                                                      split=split, subset=subset), indent=2)
        files += [samples, results_path, pass_path]
    return files


def export_scores(settings: ExportSettings, reporter: Reporter) -> ExportOutcome:
    """Write the scored output as the peer's result files (see the module docstring).

    Args:
        settings: The scored output, the target, and the tasks.
        reporter: Where the files written and the errors written as ``fail`` are reported.

    Returns:
        The files written and the counts.

    Raises:
        ExportError: When the format fits none of the records' tasks, a record has no
            test verdict, or (EvalPlus) a record has no per-set verdicts.
        StageError: When the scored output cannot be read.
    """
    target = settings.target
    groups, written, errors, left_out = _collect(read_scores(settings.scores), target.format,
                                                 settings.tasks)
    if not written:
        raise ExportError(
            f"--export {target.format}: none of the {left_out} record(s) in "
            f"{settings.scores} is a {_format_names(target.format)} task")
    date = (settings.date or datetime.now()).strftime(DATE_FORMAT)
    try:
        if target.format == "evalplus":
            files = write_evalplus(groups, settings.tasks, target.directory,
                                   task_files=settings.task_files, date=date)
        else:
            files = write_bigcodebench(groups, settings.tasks, target.directory,
                                       generations=settings.generations, date=date)
    except OSError as exc:
        raise StageError(f"cannot write the {target.format} export to "
                         f"{target.directory}: {exc}") from exc
    if left_out:
        reporter.warn(f"export {target.format}: left out {left_out} record(s) whose task is "
                      f"not a {_format_names(target.format)} task")
    if errors:
        reporter.warn(f"export {target.format}: {errors} sample(s) whose test run ended in "
                      "error are written as 'fail' (the peer has no other word for a run it "
                      "could not judge); prefjudge's tables leave them out")
    reporter.note(f"export {target.format}: wrote {written} sample(s) to "
                  f"{len(files)} file(s) in {target.directory}")
    return ExportOutcome(files=files, samples=written, errors=errors, left_out=left_out)


__all__ = [
    "BIGCODEBENCH_KS",
    "EVALPLUS_KS",
    "EXPORT_FORMATS",
    "ExportError",
    "ExportOutcome",
    "ExportSettings",
    "ExportTarget",
    "bigcodebench_entry",
    "bigcodebench_pass_at_k",
    "bigcodebench_split",
    "check_fits",
    "dataset_hash",
    "evalplus_entry",
    "evalplus_pass_at_k",
    "export_scores",
    "mean_pass_at_k",
    "model_file_name",
    "parse_target",
    "read_scores",
    "solution_of",
]
