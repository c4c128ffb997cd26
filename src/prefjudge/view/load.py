"""Read a results folder into plain dicts for the viewer page.

:func:`load_results` looks at a folder (its files and those one level down) or at one file,
tells each file's record kind from the fields of its records (never from its name; finding
and telling the files is :mod:`prefjudge.view.files`), reads scored samples, judge
verdicts, the pairs they judged and the tasks that give prompts, and keeps every line it
cannot use as a located problem instead of stopping. The records are kept as they were
read (plain dicts), so the page shows the fields a record has and marks the ones it lacks
as absent.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from prefjudge.io import READ_ERRORS, InputError, InputIssue, validation_issues
from prefjudge.journal import BINDING_SUFFIX
from prefjudge.records import (
    Generation,
    Pair,
    ScoredSample,
    Task,
    Verdict,
    normalize_model_name,
)
from prefjudge.scoring.tasks import load_tasks
from prefjudge.scoring.taxonomy import load_taxonomy
from prefjudge.view.files import (
    KIND_NAMES,
    LEADERBOARD,
    MAX_JSON_BYTES,
    MAX_LEADERBOARD_ROWS,
    RUN_SIDE_FILES,
    SNIFF,
    bound_inputs,
    find_files,
    read_leaderboard,
    read_objects,
    record_kind,
    same_content,
    shown_path,
    sniff_kind,
)

MAX_PROBLEMS_KEPT = 200
"""Problem lines kept with their message (all are counted)."""

_MODELS: dict[str, type[BaseModel]] = {
    "scored": ScoredSample,
    "verdict": Verdict,
    "pair": Pair,
    "task": Task,
    "generation": Generation,
}


@dataclass
class SourceFile:
    """One file looked at, and what came of it.

    Attributes:
        path: The file as shown (relative to the results folder when inside it).
        kind: Record kind (a key of :data:`KIND_NAMES`), ``leaderboard``, or ``skipped``.
        records: Records read from it.
        problems: Lines that could not be used.
        note: Why it was skipped, or what it was used for.
    """

    path: str
    kind: str
    records: int = 0
    problems: int = 0
    note: str = ""


@dataclass
class Results:
    """What a results folder holds, ready for the page.

    Attributes:
        source: The folder or file given, as shown.
        samples: One entry per scored sample: ``uid``, ``file``, ``line``, the derived
            ``status`` (functional test status, ``no tests`` when none), ``checks``
            (``pass``, ``fail``, ``error`` or ``none``: the worst instruction check),
            ``categories`` (of its instructions) and ``record`` (the record as read).
        pairs: One entry per verdict: ``uid``, ``file``, ``line``, ``verdict`` (``A``,
            ``B``, ``tie``, ``error``, ``no evidence`` (a tie decided by no evidence, which
            ``rank`` does not count) or ``absent``), ``record`` (the verdict as read),
            ``pair`` (the judged pair as read, or None) and ``pair_source`` (where the pair
            was found, or why it was not).
        leaderboard: ``{"file", "columns", "rows", "cut"}`` from ``leaderboard.csv``, or None.
        prompts: Task prompts by task id (for the tasks the samples and pairs name).
        prompt_sources: Where the task prompts came from.
        categories: Instruction id → category (``unknown`` for ids outside the taxonomy).
        files: Every file looked at.
        problems: Problems kept (at most :data:`MAX_PROBLEMS_KEPT`).
        problem_count: Every problem counted.
        notes: Other things worth saying (e.g. pairs found for no verdict).
    """

    source: str
    samples: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    leaderboard: dict[str, Any] | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    prompt_sources: list[str] = field(default_factory=list)
    categories: dict[str, str] = field(default_factory=dict)
    files: list[SourceFile] = field(default_factory=list)
    problems: list[InputIssue] = field(default_factory=list)
    problem_count: int = 0
    notes: list[str] = field(default_factory=list)

    def add_problem(self, issue: InputIssue) -> None:
        """Count a problem, keeping its message while fewer than the limit are kept."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(issue)

    def found(self) -> dict[str, bool]:
        """Whether each part the page shows was found: leaderboard, samples, verdicts."""
        return {
            LEADERBOARD: self.leaderboard is not None,
            KIND_NAMES["scored"]: bool(self.samples),
            KIND_NAMES["verdict"]: bool(self.pairs),
        }



def _validate(
    objects: Iterable[tuple[int, dict[str, Any] | InputIssue]], kind: str, spath: str,
    results: Results, source: SourceFile,
) -> Iterator[tuple[int, dict[str, Any], BaseModel]]:
    """Valid records of one kind, with their lines; every other line becomes a problem."""
    model = _MODELS[kind]
    for number, data in objects:
        if isinstance(data, InputIssue):
            results.add_problem(data)
            source.problems += 1
            continue
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            issues = validation_issues(spath, number, exc)
            results.add_problem(issues[0])
            source.problems += 1
            continue
        source.records += 1
        yield number, data, record


def _check_status(record: dict[str, Any]) -> str:
    statuses = {r.get("status") for r in record.get("instruction_results") or []
                if isinstance(r, dict)}
    if not statuses:
        return "none"
    for worst in ("fail", "error"):
        if worst in statuses:
            return worst
    return "pass"


def _category_of(taxonomy: Any, instruction_id: str) -> str:
    try:
        return taxonomy.get(instruction_id).category
    except Exception:  # unknown id, or no taxonomy: the id is still shown
        return "unknown"


def _answer_key(record: dict[str, Any]) -> tuple[str, ...]:
    """What makes a generation and its scored sample the same answer.

    The model (NFC, as :data:`prefjudge.records.ModelName` reads it), the task, the sample
    index and the response's SHA-256 (so no response is held twice).
    """
    response = record.get("response")
    digest = hashlib.sha256(str(response).encode("utf-8", "surrogatepass")).hexdigest()
    return (normalize_model_name(str(record.get("model"))), str(record.get("task_id")),
            str(record.get("sample", 0)), digest)


def _generation_keys(objects: Iterable[tuple[int, dict[str, Any] | InputIssue]],
                     source: SourceFile) -> list[tuple[str, ...]]:
    """The answer key of each generation of a file (see :func:`_answer_key`); counts them."""
    keys = [_answer_key(data) for _, data in objects if isinstance(data, dict)]
    source.records = len(keys)
    return keys


NOT_SCORED = "not scored: not shown (run prefjudge score on it to see checks and tests)"
"""The note on a generation file none of whose generations has a scored sample here."""


def _scored_note(found: int, total: int, files: list[str]) -> str:
    """Say how many of a generation file's ``total`` generations show as scored samples."""
    if not found:
        return NOT_SCORED
    where = ", ".join(files)
    if found == total:
        return f"scored: shown as the scored samples of {where}"
    return (f"{found} of {total} scored (shown from {where}); the other {total - found} "
            "not scored: not shown (run prefjudge score on it to see checks and tests)")


def _sample_entry(uid: str, spath: str, number: int, data: dict[str, Any],
                  record: ScoredSample, categories: dict[str, str]) -> dict[str, Any]:
    data = dict(data)
    data["model"] = record.model  # NFC, as every other reader sees it
    func = data.get("func")
    status = func.get("status") if isinstance(func, dict) else None
    cats = sorted({categories.get(str(r.get("id")), "unknown")
                   for r in data.get("instruction_results") or [] if isinstance(r, dict)})
    return {"uid": uid, "file": spath, "line": number, "status": status or "no tests",
            "checks": _check_status(data), "categories": cats, "record": data}


NO_EVIDENCE_SIDE = "no evidence"
"""The verdict shown for one decided by no evidence: a tie that is not a battle."""


def _verdict_side(record: Verdict) -> str:
    """``A``, ``B``, ``tie``, ``error``, :data:`NO_EVIDENCE_SIDE` or ``absent``.

    A verdict that has a winner but is not a battle (:meth:`Verdict.battle`: decided by no
    evidence) is shown as :data:`NO_EVIDENCE_SIDE`, not as the tie ``rank`` does not count.
    """
    if record.status == "error":
        return "error"
    if record.winner is not None and not _is_battle(record):
        return NO_EVIDENCE_SIDE
    if record.preferred is not None:
        return record.preferred
    return {"model_a": "A", "model_b": "B", "tie": "tie"}.get(record.winner or "", "absent")


def _is_battle(record: Verdict) -> bool:
    """Whether ``rank`` counts the verdict (one naming the same model twice is shown as is)."""
    try:
        return record.battle() is not None
    except ValidationError:  # both sides the same model: no battle, but not for want of facts
        return True


def _task_prompts(tasks: Iterable[Any]) -> dict[str, str]:
    return {task.task_id: task.prompt for task in tasks if task.prompt}


def _load_task_file(path: Path) -> dict[str, str]:
    """Prompts by task id from a task file in any format ``prefjudge score`` reads."""
    return _task_prompts(load_tasks(path).values())


class _Loader:
    """One pass over a results folder (see :func:`load_results`)."""

    def __init__(self, root: Path):
        self.root = root
        self.results = Results(source=str(root))
        self.pair_index: dict[str, tuple[dict[str, Any], str]] = {}
        self.verdict_files: list[Path] = []
        self.score_files: list[Path] = []
        self.task_files: list[Path] = []
        self.unread_pair_files: list[str] = []
        self.generation_files: list[tuple[SourceFile, list[tuple[str, ...]]]] = []
        try:
            self.taxonomy: Any = load_taxonomy()
        except Exception:  # a broken data folder: categories become unknown
            self.taxonomy = None

    def run(self) -> Results:
        for path in find_files(self.root):
            self.read_file(path)
        self.read_tasks()
        self.join_pairs()
        self.say_scored_generations()
        return self.results

    def say_scored_generations(self) -> None:
        """Note on each generation file whether its generations show as scored samples.

        A generation is shown when a scored sample read here is the same answer (model,
        task, sample index and response): ``prefjudge run`` keeps the generations in
        ``generations/`` and their scores in ``scores/``, and the page shows the scored
        records.
        """
        scored: dict[tuple[str, ...], str] = {}
        for sample in self.results.samples:
            scored.setdefault(_answer_key(sample["record"]), sample["file"])
        for source, keys in self.generation_files:
            found = [scored[key] for key in keys if key in scored]
            source.note = _scored_note(len(found), len(keys), sorted(set(found)))

    def skip(self, spath: str, why: str) -> None:
        self.results.files.append(SourceFile(spath, "skipped", note=why))

    def read_file(self, path: Path) -> None:
        spath = shown_path(path, self.root)
        results = self.results
        if path.name == LEADERBOARD:
            if results.leaderboard is not None:
                self.skip(spath, f"a {LEADERBOARD} was read already")
                return
            try:
                results.leaderboard, left_out = read_leaderboard(path, spath)
            except InputError as exc:
                issue = exc.issues[0]
                self.skip(spath, f"cannot be read (line {issue.line}: {issue.message})")
                results.add_problem(issue)
                return
            except (*READ_ERRORS, UnicodeDecodeError, csv.Error) as exc:
                self.skip(spath, f"cannot be read ({exc})")
                results.add_problem(InputIssue(spath, 0, "", f"cannot be read ({exc})"))
                return
            for issue in left_out:
                results.add_problem(issue)
            rows = len(results.leaderboard["rows"]) + results.leaderboard["cut"]
            results.files.append(SourceFile(spath, "leaderboard", records=rows,
                                            problems=len(left_out)))
            return
        try:
            stream = read_objects(path, spath)
            head = list(itertools.islice(stream, SNIFF))
        except (InputError, *READ_ERRORS) as exc:
            self.skip(spath, f"cannot be read ({str(exc).splitlines()[-1].strip()})")
            return
        kind = sniff_kind(head)
        objects: Iterable[tuple[int, dict[str, Any] | InputIssue]] = itertools.chain(head, stream)
        if kind is None:
            objects = list(objects)
            if objects and all(isinstance(data, InputIssue) for _, data in objects):
                source = SourceFile(spath, "skipped", note="no line could be read")
                for _, issue in objects:
                    if isinstance(issue, InputIssue):
                        results.add_problem(issue)
                        source.problems += 1
                results.files.append(source)
            else:
                self.skip(spath, "no known records (empty, or not prefjudge output)")
            return
        source = SourceFile(spath, kind)
        results.files.append(source)
        if kind == "scored":
            self.read_samples(objects, spath, source)
            self.score_files.append(path)
        elif kind == "verdict":
            self.read_verdicts(objects, spath, source)
            self.verdict_files.append(path)
        elif kind == "pair":
            for _, data, _ in _validate(objects, "pair", spath, results, source):
                self.pair_index.setdefault(str(data["pair_id"]), (data, spath))
            source.note = "the judged pairs: responses beside their verdicts"
        elif kind == "task":
            self.task_files.append(path)
            source.records = sum(1 for _, data in objects if isinstance(data, dict))
            source.note = "tasks: prompts for the samples"
        elif kind == "generation":
            self.generation_files.append((source, _generation_keys(objects, source)))
        else:
            source.records = sum(1 for _, data in objects if isinstance(data, dict))
            source.note = "not shown by this page"

    def read_samples(self, objects: Iterable[Any], spath: str, source: SourceFile) -> None:
        results = self.results
        seen = self.__dict__.setdefault("_sample_keys", {})
        doubles = 0
        for number, data, record in _validate(objects, "scored", spath, results, source):
            assert isinstance(record, ScoredSample)
            if record.id is not None:  # the same record in a merged file and its part
                key = (record.model, record.id)
                if key in seen:
                    doubles += 1
                    continue
                seen[key] = f"{spath}:{number}"
            for check in record.instruction_results:
                if check.id not in results.categories:
                    results.categories[check.id] = _category_of(self.taxonomy, check.id)
            uid = f"s{len(results.samples) + 1}"
            results.samples.append(
                _sample_entry(uid, spath, number, data, record, results.categories)
            )
        if doubles:
            results.notes.append(f"{spath}: {doubles} scored records already read from another "
                                 "file (same model and id) are shown once")

    def read_verdicts(self, objects: Iterable[Any], spath: str, source: SourceFile) -> None:
        results = self.results
        seen = self.__dict__.setdefault("_verdict_keys", set())
        doubles = 0
        for number, data, record in _validate(objects, "verdict", spath, results, source):
            assert isinstance(record, Verdict)
            key = (record.pair_id, record.model_a, record.model_b, record.method,
                   record.judge_model)
            if key in seen:  # the same verdict in a merged battles file and its part
                doubles += 1
                continue
            seen.add(key)
            data = dict(data)
            data["model_a"], data["model_b"] = record.model_a, record.model_b
            results.pairs.append({
                "uid": f"v{len(results.pairs) + 1}", "file": spath, "line": number,
                "verdict": _verdict_side(record), "record": data, "pair": None,
                "pair_source": None,
            })
        if doubles:
            results.notes.append(f"{spath}: {doubles} verdicts already read from another file "
                                 "(same pair, models and judge) are shown once")

    def needed_tasks(self) -> set[str]:
        wanted = {str(s["record"].get("task_id")) for s in self.results.samples}
        return wanted | {str(p["record"].get("task_id")) for p in self.results.pairs}

    def read_tasks(self) -> None:
        """Task prompts: task files in the folder, then those the score bindings name."""
        results = self.results
        wanted = self.needed_tasks()
        candidates = [(path, None, shown_path(path, self.root)) for path in self.task_files]
        for scores in self.score_files:
            for path, sha in bound_inputs(scores, "tasks"):
                candidates.append((path, sha, f"{path} (named by {shown_path(scores, self.root)}"
                                   f"{BINDING_SUFFIX})"))
        seen: set[Path] = set()
        for path, sha, shown in candidates:
            missing = wanted - results.prompts.keys()
            if not missing:
                return
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            if not path.is_file():
                results.notes.append(f"task file {shown} is not there: prompts from it absent")
                continue
            if not same_content(path, sha):
                results.notes.append(f"task file {shown} changed since scoring: not used")
                continue
            try:
                prompts = _load_task_file(path)
            except InputError as exc:
                for issue in exc.issues:
                    results.add_problem(issue)
                results.notes.append(f"task file {shown}: {len(exc.issues)} problem(s); "
                                     "prompts from it absent")
                continue
            except (*READ_ERRORS, ValueError) as exc:
                results.notes.append(f"task file {shown} cannot be read ({exc})")
                continue
            used = {tid: prompt for tid, prompt in prompts.items() if tid in missing}
            if used:
                results.prompts.update(used)
                results.prompt_sources.append(f"{shown}: {len(used)} prompts")

    def bound_pairs(self) -> None:
        """Pairs from the pair files the verdict bindings name (prefjudge pair JSONL only)."""
        wanted = {str(p["record"].get("pair_id")) for p in self.results.pairs}
        for verdicts in self.verdict_files:
            for path, sha in bound_inputs(verdicts, "pairs"):
                if not wanted - self.pair_index.keys():
                    return
                shown = f"{path} (named by {shown_path(verdicts, self.root)}{BINDING_SUFFIX})"
                if not path.is_file() or not same_content(path, sha):
                    self.results.notes.append(
                        f"pair file {shown} is not there or changed since judging: not used")
                    continue
                try:
                    objects = list(read_objects(path, str(path)))
                except (InputError, *READ_ERRORS):
                    continue
                if sniff_kind(objects[:SNIFF]) != "pair":
                    self.unread_pair_files.append(shown)
                    continue
                added = 0
                for number, data in objects:
                    if isinstance(data, dict) and isinstance(data.get("pair_id"), str):
                        try:
                            Pair.model_validate(data)
                        except ValidationError:
                            continue
                        if data["pair_id"] not in self.pair_index:
                            self.pair_index[data["pair_id"]] = (data, f"{path}:{number}")
                            added += 1
                if added:
                    self.results.notes.append(f"{added} pairs read from {shown}")

    def say_unread_pair_files(self) -> None:
        """Name the bound pair files that are no pair JSONL, and whose responses show anyway.

        Such a file is not read; a verdict's responses may still come from another pair
        file or from the two models' scored samples, so the note says how many show.
        """
        if not self.unread_pair_files:
            return
        pairs = self.results.pairs
        shown = sum(1 for entry in pairs if entry.get("pair") is not None)
        where = (f"the responses of {shown} of the {len(pairs)} judged pairs are shown "
                 "from other files (each pair says which)" if shown
                 else "no judged pair's responses are shown")
        for name in self.unread_pair_files:
            self.results.notes.append(f"pair file {name} is not prefjudge pair JSONL: not "
                                      f"read; {where}")

    def join_pairs(self) -> None:
        """Give each verdict its pair: by pair id, else the two models' scored samples."""
        results = self.results
        if not results.pairs:
            return
        self.bound_pairs()
        by_model_task: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for sample in results.samples:
            rec = sample["record"]
            by_model_task.setdefault((rec["model"], str(rec.get("task_id"))), []).append(rec)
        judged: set[str] = set()
        for entry in results.pairs:
            rec = entry["record"]
            pair_id = str(rec.get("pair_id"))
            judged.add(pair_id)
            found = self.pair_index.get(pair_id)
            if found is not None:
                entry["pair"], entry["pair_source"] = dict(found[0]), found[1]
                continue
            task = str(rec.get("task_id"))
            side_a = by_model_task.get((rec["model_a"], task), [])
            side_b = by_model_task.get((rec["model_b"], task), [])
            suffix = f":{rec['model_a']}:{rec['model_b']}"
            if pair_id.endswith(suffix):  # judged from two generation files: gen id + models
                generation = pair_id[: -len(suffix)]
                side_a = [r for r in side_a if r.get("id") == generation] or side_a
                side_b = [r for r in side_b if r.get("id") == generation] or side_b
            if len(side_a) == 1 and len(side_b) == 1:
                a, b = side_a[0], side_b[0]
                entry["pair"] = {"pair_id": pair_id, "task_id": task,
                                 "response_a": a.get("response"),
                                 "response_b": b.get("response")}
                entry["pair_source"] = ("the scored samples of both models for this task "
                                        "(no pair file holds this pair id)")
            else:
                entry["pair_source"] = ("absent: no pair file with this pair id was found, "
                                        "and the scored samples do not name one response "
                                        "per model for this task")
        self.say_unread_pair_files()
        unjudged = len(self.pair_index.keys() - judged)
        if unjudged:
            results.notes.append(f"{unjudged} pairs have no verdict here (not shown)")


def load_results(root: str | Path) -> Results:
    """Read a results folder (or one file) for the viewer.

    Looks at the folder's files and those one level down: ``leaderboard.csv``, and JSONL
    (optionally gzipped) or JSON files, whose record kind is told from their fields.
    ``*.summary.*`` files, journal bindings and locks are skipped. Scored samples and
    verdicts are kept; pairs are joined to their verdicts by pair id (also from the pair
    file a verdict file's journal binding names); task files (in the folder, or named by a
    score binding) give prompts. A line that cannot be used is counted and kept as a
    problem; nothing stops the reading.

    Args:
        root: The results folder, or one results file.

    Returns:
        What was found (see :class:`Results`).
    """
    return _Loader(Path(root)).run()


__all__ = [
    "KIND_NAMES",
    "LEADERBOARD",
    "MAX_JSON_BYTES",
    "MAX_LEADERBOARD_ROWS",
    "RUN_SIDE_FILES",
    "Results",
    "SourceFile",
    "find_files",
    "load_results",
    "record_kind",
]
