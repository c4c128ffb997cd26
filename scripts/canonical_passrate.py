"""Run every canonical solution of the benchmarks through the sandbox; print pass rates.

Covers HumanEval, HumanEval+, MBPP+ and the BigCodeBench tasks whose libraries (its
``libs`` plus what its reference and tests import) are installed here. A canonical
solution that does not pass is either a benchmark/library-version problem or a sandbox
problem; the listing of non-passing tasks (with details) is there to tell them apart.

    python scripts/canonical_passrate.py                 # all four benchmarks
    python scripts/canonical_passrate.py --only mbppplus --details out.jsonl
    python scripts/canonical_passrate.py --no-zygote      # a fresh process per run
    python scripts/canonical_passrate.py --only humaneval --compare

Runs fork from per-worker zygotes by default (``--zygote``); ``--compare`` runs every
benchmark both ways, lists each task whose status or detail differs between the two, and
exits with status 1 if any does.
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
    parser.add_argument(
        "--zygote",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fork runs from pre-imported zygotes (default) or start a fresh process per run",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run each benchmark with and without zygotes; list tasks whose results differ",
    )
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


def runnable_tasks(name: str, path: Path) -> tuple[list, dict]:
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
    return tasks, skipped


def run_benchmark(
    name: str, tasks: list, skipped: dict, args: argparse.Namespace, details, zygote: bool
) -> dict:
    limits = SandboxLimits(timeout_s=args.timeout, cpu_s=int(args.timeout))
    started = time.monotonic()
    how = "zygote" if zygote else "fresh processes"
    print(f"{name}: {len(tasks)} tasks ({how})", file=sys.stderr)
    stats: dict = {}
    results = run_functional(
        [(task, task.canonical_solution or "") for task in tasks],
        limits=limits,
        workers=args.workers,
        on_result=progress(len(tasks), started),
        zygote=zygote,
        zygote_stats=stats,
    )
    print(file=sys.stderr)
    if zygote and stats.get("fallback"):
        print(f"WARNING: {name}: zygote runs used fresh processes: {stats['fallback']}")
    counts = collections.Counter(result.status for result in results)
    for task, result in zip(tasks, results, strict=True):
        if details is not None:
            record = {"benchmark": name, "task_id": task.task_id, "zygote": zygote}
            details.write(json.dumps({**record, **result.model_dump()}) + "\n")
    failing = [(t.task_id, r) for t, r in zip(tasks, results, strict=True) if r.status != "pass"]
    return {
        "name": name,
        "tasks": len(tasks),
        "counts": counts,
        "failing": failing,
        "skipped": skipped,
        "seconds": time.monotonic() - started,
        "results": {t.task_id: r for t, r in zip(tasks, results, strict=True)},
        "zygote": zygote,
        "zygote_stats": stats,
    }


def shorten(text: str, size: int = 200) -> str:
    flat = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= size else flat[: size - 3] + "..."


def print_comparison(pairs: list[tuple[dict, dict]]) -> int:
    """Print, per benchmark, where zygote and fresh-process runs differ; return how many."""
    total = identical = 0
    print("\ncomparison: zygote vs fresh processes")
    for with_zygote, fresh in pairs:
        name = with_zygote["name"]
        ids = list(with_zygote["results"])
        differing = []
        for task_id in ids:
            a, b = with_zygote["results"][task_id], fresh["results"][task_id]
            if (a.status, a.detail) != (b.status, b.detail):
                differing.append((task_id, a, b))
        total += len(ids)
        identical += len(ids) - len(differing)
        print(
            f"\n{name}: pass {with_zygote['counts']['pass']} (zygote) vs "
            f"{fresh['counts']['pass']} (fresh) of {len(ids)}; "
            f"{len(ids) - len(differing)} of {len(ids)} identical"
        )
        fallback = with_zygote["zygote_stats"].get("fallback")
        if fallback:
            print(f"  WARNING: the zygote runs used fresh processes ({fallback})")
        for task_id, a, b in differing:
            print(f"  {task_id}")
            print(f"    zygote {a.status:<8} {shorten(a.detail)}")
            print(f"    fresh  {b.status:<8} {shorten(b.detail)}")
    print(f"\n{identical} of {total} identical (status and detail)")
    return total - identical


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
    modes = [True, False] if args.compare else [args.zygote]
    print("runs: " + " and ".join("zygote" if z else "fresh processes" for z in modes))
    details = args.details.open("w", encoding="utf-8") if args.details else None
    summaries: dict[bool, list[dict]] = {zygote: [] for zygote in modes}
    try:
        for name in args.only or BENCHMARKS:
            tasks, skipped = runnable_tasks(name, args.data / BENCHMARKS[name])
            for zygote in modes:
                summary = run_benchmark(name, tasks, skipped, args, details, zygote)
                summaries[zygote].append(summary)
    finally:
        if details is not None:
            details.close()
    for zygote in modes:
        if args.compare:
            print("\n== " + ("zygote" if zygote else "fresh processes") + " ==")
        print_summary(summaries[zygote], args.show)
    if args.compare:
        pairs = list(zip(summaries[True], summaries[False], strict=True))
        if print_comparison(pairs):
            sys.exit(1)


if __name__ == "__main__":
    main()
