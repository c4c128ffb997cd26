"""Generation + task -> ScoredSample: instruction verifiers and sandboxed unit tests."""

from __future__ import annotations

import bisect
import gc
import hashlib
import json
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from prefjudge import __version__
from prefjudge.io import InputError, InputIssue
from prefjudge.lazy import long_lived
from prefjudge.records import (
    CheckResult,
    Generation,
    InstructionRef,
    ScoredSample,
    Task,
    generation_failed,
    journal_key,
)
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.formats import read_generations
from prefjudge.scoring.profiles import Profile, get_profile
from prefjudge.scoring.rows import PackedCheck, Scored, checks_statuses, summarise_statuses
from prefjudge.scoring.rows import summarise_checks as summarise_checks  # its home until now
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy

# has_tests and job_preload lived here until now (the run, the Ray engine and its shards
# import them from here):
from prefjudge.scoring.unit_test_runs import ProgressCallback, unit_test_results, zygote_pool
from prefjudge.scoring.unit_test_runs import has_tests as has_tests
from prefjudge.scoring.unit_test_runs import job_preload as job_preload
from prefjudge.scoring.verify import ruff_version, verify_batch
from prefjudge.scoring.verify.process import PendingResults, VerifyProcess
from prefjudge.scoring.verify.refs import ReferenceCheck

if TYPE_CHECKING:  # the sandbox's runner and zygotes are imported where tests run
    from prefjudge.sandbox.zygote import ZygotePool


@dataclass
class ScoreJob:
    """What ``score`` works on: validated generations, their keys, and the tasks.

    Attributes:
        generations: Valid generations in file order, with their line numbers.
        keys: Stable key of each generation (``id`` when given, else a content hash).
        tasks: Tasks by id (empty when none were given).
        skipped: Issues of the lines left out (only with ``skip_invalid``).
    """

    generations: list[tuple[int, Generation]]
    keys: list[str]
    tasks: dict[str, Task]
    skipped: list[InputIssue] = field(default_factory=list)


def generation_keys(generations: Sequence[Generation]) -> list[str]:
    """A stable key per generation, used to resume a scoring run.

    The key is ``model::id`` when the generation has an ``id`` (ids are unique per model,
    so two models' generations of one task never collide); otherwise a hash of what is
    scored (task, model, response, instructions) plus its occurrence number, so
    identical duplicates stay distinct.

    Args:
        generations: Generations in file order.

    Returns:
        One key per generation.
    """
    seen: Counter[str] = Counter()
    keys = []
    for gen in generations:
        if gen.id is not None:
            keys.append(journal_key(gen.model, gen.id))
            continue
        payload = json.dumps(
            [gen.task_id, gen.model, gen.response,
             [ref.model_dump(mode="json") for ref in gen.instructions]],
            sort_keys=True,
        )
        digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
        seen[digest] += 1
        keys.append(f"{digest}-{seen[digest]}")
    return keys


def prepare_job(
    path: str | Path,
    tasks: dict[str, Task],
    *,
    taxonomy: Taxonomy | None = None,
    skip_invalid: bool = False,
    model: str | None = None,
) -> ScoreJob:
    """Read and validate a generations file before anything is scored.

    Checks every line: valid JSON and record shape, known instruction ids, parameters
    within their allowed values, task ids present in ``tasks`` (when tasks are given),
    and ``id`` values unique per model.

    Args:
        path: Generations JSONL.
        tasks: Tasks by id; empty means no functional tests.
        taxonomy: Instruction taxonomy (the bundled one by default).
        skip_invalid: Leave invalid lines out (listed in ``skipped``) instead of failing.
        model: Model name for sample files that carry none (EvalPlus, BigCodeBench and
            SWE-IF formats; see :mod:`prefjudge.scoring.formats`).

    Returns:
        The job to score.

    Raises:
        InputError: When a line is invalid and ``skip_invalid`` is False.
    """
    # Reading and checking make ~100 long-lived objects per generation and no cycles worth
    # finding: full collections would walk all of them again and again (1 s per 10,000).
    with long_lived():
        job = _read_and_check(path, tasks, taxonomy, skip_invalid, model)
    return job


def _read_and_check(
    path: str | Path, tasks: dict[str, Task], taxonomy: Taxonomy | None, skip_invalid: bool,
    model: str | None,
) -> ScoreJob:
    records, issues = read_generations(path, model=model, tasks=tasks)
    if taxonomy is None and any(gen.instructions for _, gen in records):
        taxonomy = load_taxonomy()  # only when an instruction is to be checked (0.3 s)
    spath = str(path)
    # Each reference is checked once: its problems, or its parameters with the defaults
    # filled in, so that outputs always carry the parameters that were checked.
    valid: list[tuple[int, Generation]] = []
    bad_lines = {issue.line for issue in issues}
    check = ReferenceCheck(taxonomy)
    for line, gen in records:
        line_issues, refs = check.instructions(spath, line, gen)
        if tasks and gen.task_id not in tasks:
            line_issues.append(InputIssue(spath, line, "task_id",
                                          f"task {gen.task_id!r} is not in the tasks file"))
        if line_issues:
            issues.extend(line_issues)
            bad_lines.add(line)
            continue
        if all(new is old for new, old in zip(refs, gen.instructions, strict=True)):
            valid.append((line, gen))  # every reference complete as given: nothing to copy
        else:
            valid.append((line, gen.model_copy(update={"instructions": refs})))
    ids = Counter((gen.model, gen.id) for _, gen in valid if gen.id is not None)
    for line, gen in valid:
        if gen.id is not None and ids[(gen.model, gen.id)] > 1:
            message = f"duplicate id {gen.id!r} for model {gen.model!r}"
            issues.append(InputIssue(spath, line, "id", message))
            bad_lines.add(line)
    resolved = [(line, gen) for line, gen in valid if line not in bad_lines]
    if issues and not skip_invalid:
        raise InputError(sorted(issues, key=lambda issue: issue.line))
    keys = generation_keys([gen for _, gen in resolved])
    skipped = sorted(issues, key=lambda issue: issue.line)
    return ScoreJob(generations=resolved, keys=keys, tasks=tasks, skipped=skipped)


def record_meta(isolation: str, profile: str | Profile | None = None) -> dict[str, str]:
    """The provenance stored in every scored record (tools, sandbox, verification profile)."""
    return {"ruff_version": ruff_version(), "prefjudge_version": __version__,
            "sandbox": isolation, "profile": get_profile(profile).name}


def score_stream(job: ScoreJob, **options: Any) -> Iterator[ScoredSample]:
    """Score a job, yielding each sample as soon as it and all before it are finished.

    The samples of :func:`score_batches`, one at a time; it takes the same arguments.

    Args:
        job: Validated generations and tasks.
        **options: The fields of :class:`ScoreOptions`.

    Yields:
        Scored samples in input order.
    """
    for batch in score_batches(job, **options):
        yield from batch


@dataclass(frozen=True)
class ScoreOptions:
    """How :func:`score_batches` scores a job (its keyword arguments).

    Instructions are verified a chunk at a time (batched Ruff runs); the chunk's unit
    tests run in parallel sandboxes in a background thread while finished samples are
    yielded in input order, so the caller can write them at once and a killed run loses
    at most the samples still in flight. Without unit tests, verification is what takes
    the time: chunks grow from :data:`CHUNK` to :data:`VERIFY_CHUNK` generations (fewer,
    larger Ruff runs; the first samples still come quickly), and later chunks are
    verified in the background while this one's samples are yielded: in a thread (one
    chunk ahead), or in a verification process (:data:`PROCESS_AHEAD` ahead; see
    ``separate_process``).

    Attributes:
        done: Keys already scored (resume); they are not scored again.
        chunk_size: Generations verified per batch (default: as described above).
        workers: Parallel Ruff groups and sandbox processes (default: CPU count).
        limits: Sandbox limits.
        run_tests: Run functional tests when the task has any.
        isolation: One-line description of the sandbox isolation, stored in ``meta``.
        on_progress: Called with ``(phase, n)`` as ``n`` items of a phase finish
            (phases: ``verify``, ``tests``).
        profile: Verification profile (``reference`` by default, or ``strict``): how
            instructions are checked and which code the unit tests run; stored in
            ``meta.profile``.
        separate_process: Verify in a process of its own (:class:`VerifyProcess`), so
            that records are built here meanwhile, on another core; without unit tests
            only. None (default): when there is more than one chunk (one is started here,
            the first chunk verified here while it starts); a started ``VerifyProcess``
            (same profile) is used for every chunk and left open.
        zygote: Fork unit-test runs from per-worker zygotes that imported the tests'
            libraries once (default: yes, unless ``PREFJUDGE_SANDBOX_ZYGOTE=0``); False:
            a fresh process per run; a :class:`ZygotePool`: fork from that pool, which
            the caller keeps open (a Ray worker's, kept across shards).
        preload: Modules the zygotes import besides those the job's tasks import (not
            used with a given pool).
        prepare_lines: Without unit tests, make each scored generation's line and row
            (:meth:`~prefjudge.scoring.rows.Scored.line`, ``row``) in the thread that
            verified its chunk, as soon as it is verified (for a caller that writes lines:
            the last chunk's are then ready when their turn comes).
    """

    done: set[str] | frozenset[str] = frozenset()
    chunk_size: int | None = None
    workers: int | None = None
    limits: SandboxLimits | None = None
    run_tests: bool = True
    isolation: str = ""
    on_progress: ProgressCallback | None = None
    profile: str | Profile | None = None
    separate_process: bool | VerifyProcess | None = None
    zygote: bool | ZygotePool | None = None
    preload: Sequence[str] = ()
    prepare_lines: bool = False


def score_batches(job: ScoreJob, **options: Any) -> Iterator[list[ScoredSample]]:
    """Score a job, yielding samples as soon as they and all before them are finished.

    With unit tests, each sample comes alone, as soon as its tests end; without, the
    samples of a verified chunk come together (a caller writes them in one go). How the
    work is split and overlapped: :class:`ScoreOptions`.

    Args:
        job: Validated generations and tasks.
        **options: The fields of :class:`ScoreOptions`.

    Yields:
        Lists of scored samples, in input order.
    """
    for batch in scored_batches(job, **options):
        yield [item.sample() for item in batch]


def scored_batches(job: ScoreJob, **options: Any) -> Iterator[list[Scored]]:
    """:func:`score_batches`'s batches before they are records (the same arguments).

    Each :class:`~prefjudge.scoring.rows.Scored` gives its record, its JSONL line or its
    summary row; a caller that writes lines needs no record built.

    Args:
        job: Validated generations and tasks.
        **options: The fields of :class:`ScoreOptions`.

    Yields:
        Lists of scored generations, in input order.
    """
    yield from _Scoring(job, ScoreOptions(**options)).batches()


class _Scoring:
    """One job being scored: its chunks, their verification and tests, its records."""

    def __init__(self, job: ScoreJob, options: ScoreOptions) -> None:
        self.job, self.options = job, options
        self.profile = get_profile(options.profile)
        self.meta = record_meta(options.isolation, self.profile)
        self.tasks = job.tasks if options.run_tests else {}
        given = options.separate_process
        self.given = given if isinstance(given, VerifyProcess) else None
        self.process: VerifyProcess | None = None
        self.ahead: ThreadPoolExecutor | None = None
        self._ready: dict[str, Scored] = {}  # made in the thread, taken by _built

    def _plan(self) -> None:
        """What to score (the keys not done), in which chunks; refuse a mismatched process."""
        pairs = zip(self.job.keys, self.job.generations, strict=True)
        lines_todo = [(line, (key, gen)) for key, (line, gen) in pairs
                      if key not in self.options.done]
        self.todo = [item for _, item in lines_todo]
        self.lines = [line for line, _ in lines_todo]  # each one's line in the file
        self.tested = any(has_tests(gen, self.tasks) for _, gen in self.todo)
        self.chunks = _chunks(self.todo, self.options.chunk_size, self.tested)
        if self.given is not None and self.given.profile != self.profile.name:
            raise ValueError(f"the verification process checks profile {self.given.profile!r}, "
                             f"not {self.profile.name!r}")

    def batches(self) -> Iterator[list[Scored]]:
        """Verify (and test) chunk by chunk, yielding what is finished in input order."""
        # What exists now (the job: about 100 objects per generation, the modules) lives until
        # the end; each full garbage collection during scoring would walk all of it again
        # (a third of the CPU of scoring 10,000 generations). Frozen for the run, then thawed;
        # left alone when someone else froze objects already.
        freeze = gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
        pending: deque[_Pending] = deque()
        pool = None
        try:
            self._plan()
            options, tested = self.options, self.tested
            # Verifying the next chunk while this one is written keeps Ruff busy; not beside
            # unit tests, whose wall-clock timeouts should not compete with it. In this
            # process: one chunk ahead in a thread; in the verification process: several,
            # so that it never waits (PROCESS_AHEAD).
            separate = options.separate_process
            if separate is None:
                separate = len(self.chunks) > 1
            if separate and not tested:
                self.process = self.given or VerifyProcess(workers=options.workers,
                                                           profile=self.profile)
            self.ahead = None if tested else ThreadPoolExecutor(
                1, thread_name_prefix="prefjudge-verify")
            pool = zygote_pool(self.todo, self.tasks, options.zygote, options.preload) \
                if tested else None
            depth = 0 if tested else PROCESS_AHEAD if self.process else 1
            submitted = _top_up(pending, depth, len(self.chunks), 0, self._begin)
            for chunk in self.chunks:
                checks, turn_results, turn_items = (
                    pending.popleft().result() if pending else self._verify(chunk)
                )
                submitted = _top_up(pending, depth, len(self.chunks), submitted, self._begin)
                if options.on_progress:
                    options.on_progress("verify", len(chunk))
                funcs = unit_test_results(chunk, self.tasks, options.workers,
                                               options.limits, options.on_progress,
                                               self.profile, pool)
                yield from self._built(chunk, checks, funcs, turn_results, turn_items)
        finally:
            for waiting in pending:  # a consumer that stops early does not wait for them
                waiting.cancel()
            self._close(pool, freeze)

    def _close(self, pool: ZygotePool | None, freeze: bool) -> None:
        """Let the run's helpers go: the thread, a process or pool started here, the freeze."""
        if self.ahead is not None:
            self.ahead.shutdown(wait=False, cancel_futures=True)
        if self.process is not None and self.process is not self.given:
            self.process.close()
        if pool is not None and pool is not self.options.zygote:
            pool.close()
        if freeze:
            gc.unfreeze()

    def _split(self, chunk: list[tuple[str, Generation]]) -> tuple[list, list, list]:
        """A chunk's items to verify: each response, then each turn of multi-turn ones."""
        # A failed model request has no answer: nothing of it is checked (generation_failed)
        items = [(gen.response, [] if generation_failed(gen) else gen.instructions,
                  gen.response_is_code) for _, gen in chunk]
        turn_items = [multi_turn_items(gen) for _, gen in chunk]
        return items, turn_items, items + [item for turns in turn_items for item in turns]

    def _verify(self, chunk: list[tuple[str, Generation]]) -> _Verified:
        """Verify a chunk in this process (and make its lines, with ``prepare_lines``)."""
        items, turn_items, everything = self._split(chunk)
        checked = verify_batch(everything, workers=self.options.workers, profile=self.profile)
        verified = checked[:len(items)], checked[len(items):], turn_items
        if self.options.prepare_lines and not self.tested:
            for batch in self._built(chunk, verified[0], iter([None] * len(chunk)),
                                     verified[1], turn_items):
                for item in batch:
                    item.prepare()
                    self._ready[item.key] = item
        return verified

    def _begin(self, index: int) -> _Pending:
        """Start verifying chunk ``index``: in the thread, or in the verification process.

        With the process, the thread still verifies the first chunk when the process was
        started here (while it starts) and the last one of a long run: this process mostly
        waits on the other, and the last chunk verified beside the ones before it ends the
        run a chunk's verification sooner. What of the last chunk the process verified
        ahead (:attr:`VerifyProcess.read_ahead_reach`) is asked of it rather than
        verified here again.
        """
        chunk = self.chunks[index]
        if self.process is None or (index == 0 and self.given is None):
            assert self.ahead is not None
            return self.ahead.submit(self._verify, chunk)
        if index < len(self.chunks) - 1 or index < SHARED_FROM:
            return self._in_process(chunk)
        assert self.ahead is not None
        start = len(self.todo) - len(chunk)  # the last chunk ends the work
        # Its first generations up to the last line read ahead (lines rise in file order).
        held = bisect.bisect_right(self.lines, self.process.read_ahead_reach or 0, start) - start
        if held == 0:
            return self.ahead.submit(self._verify, chunk)
        if held == len(chunk):
            return self._in_process(chunk)
        return _Joined(self._in_process(chunk[:held]), self.ahead.submit(self._verify,
                                                                          chunk[held:]))

    def _in_process(self, chunk: list[tuple[str, Generation]]) -> _InProcess:
        """Send a chunk to the verification process."""
        assert self.process is not None
        items, turn_items, everything = self._split(chunk)
        return _InProcess(self.process.submit(everything), len(items), turn_items)

    def _built(self, chunk: list[tuple[str, Generation]], checks: list, funcs: Iterator,
               turn_results: list, turn_items: list) -> Iterator[list[Scored]]:
        """The chunk's scored generations: each alone with unit tests, else all at once."""
        meta, tested, ready = self.meta, self.tested, self._ready
        turn_checks = iter(turn_results)
        batch: list[Scored] = []
        for (key, gen), results, func, turns in zip(chunk, checks, funcs, turn_items,
                                                    strict=True):
            failed = generation_failed(gen)  # an error of its own: no checks, no tests, no rate
            item = ready.pop(key, None) if ready else None  # made ahead: as made
            if item is not None:
                if turns and not failed:  # its turns' checks are passed over all the same
                    for _ in turns:
                        next(turn_checks)
            elif failed:
                item = Scored(key, gen, [], None, None, None, None, meta)
            else:
                if_instruction, if_task = summarise_statuses(checks_statuses(results))
                item = Scored(key, gen, results, if_instruction, if_task, func,
                              [next(turn_checks) for _ in turns] if turns else None, meta)
            batch.append(item)
            if tested:  # each sample as soon as its tests end
                yield batch
                batch = []
        if batch:
            yield batch


CHUNK = 256
"""Generations verified per batch beside unit tests, and in the first batch without."""
VERIFY_CHUNK = 4096
"""Largest batch without unit tests. Each batch pays its own Ruff runs (about 20 to 30, one
per set of settings, each with a few milliseconds of start-up): with batches of 2,048,
50,000 generations took three times the Ruff runs of one batch, and 4,096 is 4 % faster
end to end. A killed run still loses at most the batches in flight (seconds of work)."""
SHARED_FROM = 3
"""With a verification process, the last chunk of a run of at least this many more is
verified in this process, beside it, but for the part the process verified ahead
(:meth:`_Scoring._begin`)."""
PROCESS_AHEAD = 4
"""Chunks asked of the verification process before the first comes back. The first few
are small and come back at once when it verified them ahead
(:mod:`prefjudge.scoring.verify.prefetch`): with fewer asked, it would wait for this
process to write them before it is asked for more. Asking costs only the requests'
memory (the chunks' texts, a few MiB)."""

_Checks = list[list[CheckResult]] | list[list[PackedCheck]]
_Verified = tuple[_Checks, _Checks, list[list[tuple[str, list[InstructionRef]]]]]


class _Pending(Protocol):
    def result(self) -> _Verified: ...

    def cancel(self) -> bool: ...


class _InProcess:
    """A chunk being verified in the verification process."""

    def __init__(self, results: PendingResults, n_items: int,
                 turn_items: list[list[tuple[str, list[InstructionRef]]]]):
        self._results, self._n_items, self._turn_items = results, n_items, turn_items

    def result(self) -> _Verified:
        checked = self._results.packed()  # no models: the records' lines need none
        return checked[:self._n_items], checked[self._n_items:], self._turn_items

    def cancel(self) -> bool:
        return self._results.cancel()


class _Joined:
    """A chunk verified in two parts at once: its head in the process, the rest here."""

    def __init__(self, head: _Pending, rest: _Pending):
        self._parts = (head, rest)

    def result(self) -> _Verified:
        checks: list = []
        turn_results: list = []
        turn_items: list = []
        for part in self._parts:
            part_checks, part_turns, part_items = part.result()
            checks += part_checks
            turn_results += part_turns
            turn_items += part_items
        return checks, turn_results, turn_items

    def cancel(self) -> bool:
        return all([part.cancel() for part in self._parts])


def _top_up(pending: deque[_Pending], depth: int, n_chunks: int, submitted: int,
            begin: Callable[[int], _Pending]) -> int:
    """Start chunks until ``depth`` are in flight; returns how many were started in all."""
    while submitted < n_chunks and len(pending) < depth:
        pending.append(begin(submitted))
        submitted += 1
    return submitted


def _chunks(
    todo: list[tuple[str, Generation]], chunk_size: int | None, tested: bool
) -> list[list[tuple[str, Generation]]]:
    """Split the work into verification batches (see :func:`score_stream`)."""
    if chunk_size is not None or tested:
        size = chunk_size or CHUNK
        return [todo[start:start + size] for start in range(0, len(todo), size)]
    chunks, start, size = [], 0, CHUNK
    while start < len(todo):
        if len(todo) - start - size < CHUNK:  # no small last batch: its Ruff runs cost as much
            size = len(todo) - start
        chunks.append(todo[start:start + size])
        start, size = start + size, min(2 * size, VERIFY_CHUNK)
    return chunks


def multi_turn_items(gen: Generation) -> list[tuple[str, list[InstructionRef]]]:
    """What to verify at each turn of a multi-turn generation, for retention analysis.

    In the multi-turn protocol turn 1 is the plain prompt and turn t adds instruction
    t-1, so turn t's response is checked against the first t-1 instructions (with the
    generation's resolved parameters).

    Args:
        gen: A generation; only ``protocol == "multi"`` records with one more turn than
            instructions get turn checks.

    Returns:
        One ``(response, instructions so far)`` item per turn, or ``[]``.
    """
    turns = gen.turns
    if generation_failed(gen) or gen.protocol != "multi" or turns is None:
        return []
    if len(turns) != len(gen.instructions) + 1:
        return []
    return [(turn.response, gen.instructions[:index]) for index, turn in enumerate(turns)]
