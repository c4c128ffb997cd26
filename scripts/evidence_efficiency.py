"""Run the efficiency evidence judge on CodePrefBench's efficiency split; print its accuracy.

Two phases: every response is first run against its HumanEval+/MBPP+ tests (``--workers``
sandboxes at once), and a pair whose responses do not both pass is decided by the tests
alone, by the rule ``prefjudge judge-eval --method evidence`` applies too
(``prefjudge.judge.facts.time_limits``: a side that runs out of time where the other
finishes is the dearer one, any other failure is ``insufficient``); then the pairs whose
two responses both pass are measured (CPU time counted outside the code's process, see
``prefjudge.judge.facts.efficiency``) one pair at a time, since runs measured side by side
disturb each other's CPU time. Accuracy counts a tie as half right; ``insufficient`` and
``error`` pairs count as ties in it and are listed apart.

    python scripts/evidence_efficiency.py                       # all 352 pairs
    python scripts/evidence_efficiency.py --limit 40 --out eff.jsonl
    python scripts/evidence_efficiency.py --stride 7 --repeats 9
    python scripts/evidence_efficiency.py --scaled   # on performance-exercising inputs

By default the pairs are measured on the tasks' own heaviest inputs (the method before
issue 45, kept for comparison); ``--scaled`` measures them as the evidence judge now does,
on scaled inputs (``prefjudge.judge.facts.perf_inputs``). ``scripts/bench_efficiency.py``
adds EvalPerf's pairs and the CPU time per pair.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from prefjudge.judge.facts.correctness import correctness_facts, runnable_task
from prefjudge.judge.facts.efficiency import DEFAULT_REPEATS, MAX_INPUTS, compare_efficiency
from prefjudge.judge.facts.time_limits import efficiency_from_tests
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Fact
from prefjudge.sandbox import SandboxLimits, isolation_report, resolve_isolation
from prefjudge.sandbox.preload import modules_to_preload
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.tasks import load_tasks
from prefjudge.scoring.verify.extract import extract_code

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
PAIRS = DATA / "preferences" / "codeprefbench" / "efficiency-alignment.jsonl.gz"
TASK_FILES = ("HumanEvalPlus-v0.1.10.jsonl.gz", "MbppPlus-v0.2.0.jsonl.gz")
OUTCOMES = ("A", "B", "tie", "insufficient", "error")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--tasks", type=Path, default=DATA / "benchmarks" / "evalplus",
                        help="folder with the HumanEval+ and MBPP+ files")
    parser.add_argument("--limit", type=int, default=None, help="first N pairs only")
    parser.add_argument("--stride", type=int, default=1,
                        help="every Nth pair only (a quick sample of the whole split)")
    parser.add_argument("--workers", type=int, default=2, help="test runs at once")
    parser.add_argument("--measure-workers", type=int, default=1,
                        help="pairs measured at once (1: runs side by side add noise)")
    parser.add_argument("--preload", action="append", default=["numpy"],
                        help="modules the zygotes import besides the tasks' own (numpy: "
                        "its import would otherwise dwarf the code's cost)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--max-inputs", type=int, default=MAX_INPUTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="wall seconds per run")
    parser.add_argument("--out", type=Path, help="write every pair's decision to this JSONL")
    parser.add_argument("--scaled", action=argparse.BooleanOptionalAction, default=False,
                        help="measure on scaled inputs, as the evidence judge does")
    parser.add_argument("--zygote", action=argparse.BooleanOptionalAction, default=True,
                        help="fork runs from pre-imported zygotes (default)")
    return parser.parse_args()


def load_task_index(folder: Path) -> dict:
    tasks = {}
    for name in TASK_FILES:
        tasks.update(load_tasks(folder / name))
    return tasks


def record_of(pair, fact: Fact, seconds: float | None) -> dict:
    """One pair's line; ``seconds`` is None for a pair its tests decided (not measured)."""
    return {
        "pair_id": pair.pair_id, "task_id": pair.task_id, "label": pair.label,
        "outcome": fact.outcome, "correct": score(fact.outcome, pair.label),
        "fact": fact.fact, "measured": seconds is not None,
        "seconds": None if seconds is None else round(seconds, 3),
        **fact.detail,
    }


def score(outcome: str, label: str) -> float:
    """1 for the labelled side, 0 for the other, a half for anything undecided."""
    if outcome in ("A", "B"):
        return 1.0 if outcome == label else 0.0
    return 0.5


def summarise(records: list[dict], seconds: float, workers: int) -> None:
    total = len(records)
    counts = collections.Counter(r["outcome"] for r in records)
    decided = [r for r in records if r["outcome"] in ("A", "B")]
    accuracy = sum(r["correct"] for r in records) / total if total else float("nan")
    right = sum(r["correct"] for r in decided)
    print(f"\npairs {total}; " + ", ".join(f"{o} {counts[o]}" for o in OUTCOMES))
    print(f"accuracy (ties, insufficient and errors count half): {accuracy:.1%}")
    print(f"tie rate (tie + insufficient + error): {(total - len(decided)) / total:.1%}")
    if decided:
        print(f"decided accuracy: {right / len(decided):.1%} of {len(decided)}")
    per_pair = [r["seconds"] for r in records if r["measured"]]
    print(f"time: {seconds:.0f} s wall in all; {len(per_pair)} pairs measured, "
          f"{workers} at a time", end="")
    if per_pair:
        print(f", per pair median {statistics.median(per_pair):.1f} s, "
              f"max {max(per_pair):.1f} s", end="")
    print()
    for outcome in ("insufficient", "error"):
        listed = [r for r in records if r["outcome"] == outcome]
        for r in listed[:15]:
            print(f"  {outcome:<12} {r['task_id']:<14} {r['fact'][:150]}")


def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[tally]}"), TimeElapsedColumn(),
                    console=Console(stderr=True))


def test_all(pairs: list, tasks: dict, limits: SandboxLimits, pool, workers: int
             ) -> list[Fact | None]:
    """Phase 1: every response against its tests; per pair, what the tests alone decide.

    Returns:
        Per pair, in order, its efficiency fact when the tests decide it
        (:func:`efficiency_from_tests`), or None when both pass (to be measured).
    """
    runs = 2 * sum(runnable_task(pair, tasks) is not None for pair in pairs)
    with progress_bar() as bar:
        tests = bar.add_task("tests", total=runs, tally="")
        correct = correctness_facts(pairs, tasks, limits=limits, pool=pool, workers=workers,
                                    on_run=lambda: bar.update(tests, advance=1))
    return [efficiency_from_tests(fact) for fact in correct]


def main() -> None:
    args = parse_args()
    report = isolation_report()
    print(f"sandbox mode: {report['mode']} ({report['reason']})")
    pairs, issues = load_codeprefbench(args.pairs)
    if issues:
        sys.exit(f"{len(issues)} unusable rows in {args.pairs}")
    pairs = pairs[:: max(1, args.stride)]
    pairs = pairs[: args.limit] if args.limit else pairs
    tasks = load_task_index(args.tasks)
    limits = SandboxLimits(timeout_s=args.timeout, cpu_s=int(args.timeout))
    plan = resolve_isolation()
    needed = [tasks[p.task_id] for p in pairs if p.task_id in tasks]
    pool = ZygotePool(plan, modules_to_preload(needed, args.preload)) if args.zygote else None
    records: list[dict | None] = [None] * len(pairs)
    lock = threading.Lock()
    out = args.out.open("w", encoding="utf-8") if args.out else None
    started = time.monotonic()
    progress = progress_bar()

    def finish(index: int, fact: Fact, seconds: float | None, bar) -> None:
        record = record_of(pairs[index], fact, seconds)
        with lock:
            records[index] = record
            if out is not None:
                out.write(json.dumps(record) + "\n")
                out.flush()
            done = [r for r in records if r is not None]
            tally = collections.Counter(r["outcome"] for r in done)
            acc = sum(r["correct"] for r in done) / len(done)
            progress.update(bar, advance=1, tally=f"acc {acc:.1%} "
                            + " ".join(f"{o}:{tally[o]}" for o in OUTCOMES if tally[o]))

    def measure(index: int, bar) -> None:
        pair = pairs[index]
        began = time.monotonic()
        decision = compare_efficiency(
            tasks[pair.task_id], extract_code(pair.response_a), extract_code(pair.response_b),
            plan=plan, limits=limits, runner=None if pool is None else pool.run,
            repeats=args.repeats, seed=args.seed + index, check_correct=False,
            max_inputs=args.max_inputs, scaled=args.scaled)
        finish(index, decision.to_fact(), time.monotonic() - began, bar)

    try:
        blocked = test_all(pairs, tasks, limits, pool, args.workers)
        tested = time.monotonic() - started
        with progress, ThreadPoolExecutor(max_workers=max(1, args.measure_workers)) as threads:
            bar = progress.add_task("efficiency", total=len(pairs), tally="")
            todo = []
            for index, decided in enumerate(blocked):
                if decided is not None:
                    finish(index, decided, None, bar)
                else:
                    todo.append(index)
            for future in [threads.submit(measure, i, bar) for i in todo]:
                future.result()
    finally:
        if pool is not None:
            pool.close()
        if out is not None:
            out.close()
    print(f"tests: {tested:.0f} s with {args.workers} workers")
    summarise([r for r in records if r is not None], time.monotonic() - started,
              args.measure_workers)


if __name__ == "__main__":
    main()
