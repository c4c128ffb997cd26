"""Run every canonical solution of the benchmarks through the sandbox; print pass rates.

Covers HumanEval, HumanEval+, MBPP+ and the BigCodeBench tasks whose libraries (its
``libs`` plus what its reference and tests import) are installed here. A canonical
solution that does not pass is either a benchmark/library-version problem or a sandbox
problem; the listing of non-passing tasks (with details) is there to tell them apart.

    python scripts/canonical_passrate.py                 # all four benchmarks
    python scripts/canonical_passrate.py --only mbppplus --details out.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from prefjudge.sandbox import SandboxLimits, isolation_report, run_functional
from prefjudge.scoring.tasks import load_tasks, missing_libraries

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "benchmarks"
BENCHMARKS = {
    "humaneval": "humaneval/HumanEval.jsonl.gz",
    "humanevalplus": "evalplus/HumanEvalPlus-v0.1.10.jsonl.gz",
    "mbppplus": "evalplus/MbppPlus-v0.2.0.jsonl.gz",
    "bigcodebench": "bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz",
}
STATUSES = ("pass", "fail", "timeout", "error")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="benchmarks folder")
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=60.0, help="wall seconds per run")
    parser.add_argument("--details", type=Path, help="write every result to this JSONL")
    parser.add_argument("--show", type=int, default=40, help="non-passing tasks to list")
    return parser.parse_args()


def progress(total: int, started: float):
    done = collections.Counter()

    def report(index: int, result) -> None:
        done[result.status] += 1
        count = sum(done.values())
        if count % 25 == 0 or count == total:
            rate = count / max(time.monotonic() - started, 1e-9)
            print(f"\r  {count}/{total} ({rate:.1f}/s) {dict(done)}", end="", file=sys.stderr)

    return report


def run_benchmark(name: str, path: Path, args: argparse.Namespace, details) -> dict:
    tasks = list(load_tasks(path).values())
    skipped = {}
    if name == "bigcodebench":
        runnable = []
        for task in tasks:
            missing = missing_libraries(task)
            if missing:
                skipped[task.task_id] = missing
            else:
                runnable.append(task)
        tasks = runnable
    limits = SandboxLimits(timeout_s=args.timeout, cpu_s=int(args.timeout))
    started = time.monotonic()
    print(f"{name}: {len(tasks)} tasks", file=sys.stderr)
    results = run_functional(
        [(task, task.canonical_solution or "") for task in tasks],
        limits=limits,
        workers=args.workers,
        on_result=progress(len(tasks), started),
    )
    print(file=sys.stderr)
    counts = collections.Counter(result.status for result in results)
    for task, result in zip(tasks, results, strict=True):
        if details is not None:
            details.write(
                json.dumps({"benchmark": name, "task_id": task.task_id, **result.model_dump()})
                + "\n"
            )
    failing = [(t.task_id, r) for t, r in zip(tasks, results, strict=True) if r.status != "pass"]
    return {
        "name": name,
        "tasks": len(tasks),
        "counts": counts,
        "failing": failing,
        "skipped": skipped,
        "seconds": time.monotonic() - started,
    }


def print_summary(summaries: list[dict], show: int) -> None:
    print("\nbenchmark        tasks   pass   fail  timeout  error  pass-rate   seconds")
    for s in summaries:
        c = s["counts"]
        rate = c["pass"] / s["tasks"] if s["tasks"] else float("nan")
        print(
            f"{s['name']:<15} {s['tasks']:>6} {c['pass']:>6} {c['fail']:>6} {c['timeout']:>8} "
            f"{c['error']:>6} {rate:>9.1%} {s['seconds']:>9.0f}"
        )
    for s in summaries:
        if s["skipped"]:
            libs = collections.Counter(lib for missing in s["skipped"].values() for lib in missing)
            print(
                f"\n{s['name']}: {len(s['skipped'])} tasks skipped, libraries not installed: "
                + ", ".join(f"{lib} ({n})" for lib, n in libs.most_common())
            )
        if s["failing"]:
            print(f"\n{s['name']}: not passing ({len(s['failing'])}):")
            for task_id, result in s["failing"][:show]:
                first = result.detail.strip().splitlines()[-1:] or [""]
                print(f"  {task_id:<20} {result.status:<8} {first[0][:110]}")


def main() -> None:
    args = parse_args()
    report = isolation_report()
    print(f"sandbox mode: {report['mode']} ({report['reason']})")
    if report["warning"]:
        print(report["warning"])
    details = args.details.open("w", encoding="utf-8") if args.details else None
    summaries = []
    try:
        for name in args.only or BENCHMARKS:
            summaries.append(run_benchmark(name, args.data / BENCHMARKS[name], args, details))
    finally:
        if details is not None:
            details.close()
    print_summary(summaries, args.show)


if __name__ == "__main__":
    main()
