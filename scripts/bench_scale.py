"""Benchmark ``score --engine ray`` against the local engine on the same cores.

Both paths score the same generations: BigCodeBench reference solutions with two
instructions each (tasks whose libraries are the standard library's or among those
prefjudge's install brings -- numpy, pandas, matplotlib, scipy...; none that waits rather
than computes: see ``WAITING_TASKS`` in ``bench_zygote.py``), repeated under distinct ids
until there are ``--runs`` of them (2,000 by default), each a real sandboxed unit-test run.

``local``
    ``prefjudge score GENS --workers C``: this machine's engine.
``ray``
    ``prefjudge score GENS --engine ray --address ADDR --shard-cpus 1``: a Ray cluster
    started by this script beforehand (a head node without CPUs and one worker node with
    ``C`` CPUs marked able to sandbox, as ``ray start`` would make them), so ``C`` shards
    run at once. Its wall time includes connecting, probing the nodes and every shard's
    start (worker processes, zygotes, Ruff); Ray's own daemons run on the same cores.

Each repetition runs both paths in turn (alternating which goes first) into fresh outputs;
figures are medians over ``--repeat`` repetitions. The records of both paths are compared
(``meta.node`` aside) and must be equal.

Evidence judging (``--judge-pairs``, per split) is measured the same way on the same cluster:
``prefjudge judge-eval`` of the first pairs of CodePrefBench's correctness and efficiency
splits with ``--method evidence`` and the HumanEval+/MBPP+ tests, locally (correctness
in parallel sandboxes, efficiency one pair at a time, as a local run measures) and with
``--engine ray --shard-cpus 1 --shard-size --judge-shard-size`` (shards of whole pairs, one
per core). The verdicts of both are compared: every verdict but the efficiency facts'
measurements must be equal, and the efficiency decisions are counted (equal, and differing
only between a decision and a tie: a pair near the threshold can fall either way from run
to run, locally too).

From the measured figures the script models the time of a study on ``N`` nodes of ``c``
cores each: ``T(N) = s + R * (r + o / k) / (N * c)``, bounded below by the driver's own
work ``R * d``, where ``R`` is the number of runs, ``r`` the core-seconds of one run (local
wall x cores / runs), ``o`` the extra core-seconds of one shard on Ray, ``k`` the shard
size, ``s`` the driver's start (a Ray run of 4 generations: connect, probe, one shard) and
``d`` the driver's CPU seconds per record (parsing and writing). With evidence judging, each
of ``P`` pairs adds ``j`` core-seconds (the Ray path's wall, less its start -- a run of one
pair per split --, x cores / pairs; shard overhead included) to the work spread over the
nodes. The speed-up is ``T(1) / T(N)``.

    python scripts/bench_scale.py                    # 2,000 runs, 3 repetitions
    python scripts/bench_scale.py --runs 400 --repeat 1 --out bench_scale.json
    python scripts/bench_scale.py --runs 0 --judge-pairs 24    # evidence judging only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path[:0] = [str(Path(__file__).resolve().parent),
                str(Path(__file__).resolve().parents[1] / "tests" / "helpers")]
from bench_zygote import WAITING_TASKS  # noqa: E402  (tasks that wait rather than compute)
from pj_samples import SAMPLE_LIBRARIES  # noqa: E402  (libraries prefjudge's install brings)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_TASKS = SHARED / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
DEFAULT_PAIRS = SHARED / "preferences" / "codeprefbench"
DEFAULT_TESTS = SHARED / "benchmarks" / "evalplus"
JUDGE_SPLITS = ("correctness-alignment.jsonl.gz", "efficiency-alignment.jsonl.gz")
JUDGE_TESTS = ("HumanEvalPlus-v0.1.10.jsonl.gz", "MbppPlus-v0.2.0.jsonl.gz")
TARGET_OVERHEAD = 0.05


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS,
                        help="BigCodeBench tasks (JSONL, optionally gzipped)")
    parser.add_argument("--runs", type=int, default=2000,
                        help="generations (unit-test runs); 0 skips scoring")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                        help="cores both paths use (local --workers; the Ray node's CPUs)")
    parser.add_argument("--shard-size", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", default="1,2,4,8,16,32,64",
                        help="node counts for the speed-up model")
    parser.add_argument("--node-cores", type=int, default=32,
                        help="cores per node in the speed-up model")
    parser.add_argument("--run-core-s", type=float, default=None,
                        help="core-seconds per run in the speed-up model [default: measured]; "
                             "e.g. 2.2 for tasks with heavy libraries and no zygotes")
    parser.add_argument("--judge-pairs", type=int, default=24,
                        help="evidence judging: first pairs of each CodePrefBench split "
                             "(correctness, efficiency); 0 skips it")
    parser.add_argument("--judge-shard-size", type=int, default=4, help="pairs per Ray shard")
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS,
                        help="CodePrefBench folder (its correctness and efficiency splits)")
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS,
                        help="EvalPlus folder (HumanEval+ and MBPP+ tasks)")
    parser.add_argument("--study-pairs", type=int, default=20_000,
                        help="pairs judged with evidence in the modelled study")
    parser.add_argument("--out", type=Path, default=None, help="figures as JSON")
    parser.add_argument("--replay", type=Path, default=None,
                        help="print the tables again from an --out file (runs nothing)")
    return parser.parse_args()


def write_inputs(folder: Path, tasks_file: Path, runs: int) -> int:
    """Write ``tasks.jsonl`` and ``gens.jsonl``; returns how many distinct tasks."""
    from prefjudge.scoring.tasks import load_tasks, missing_libraries

    tasks = [task for _, task in sorted(load_tasks(tasks_file).items())
             if all(lib.split(".")[0] in sys.stdlib_module_names
                    or lib.split(".")[0] in SAMPLE_LIBRARIES for lib in task.libs)
             and task.task_id not in WAITING_TASKS
             and "sleep(" not in (task.canonical_solution or "") and not missing_libraries(task)]
    with (folder / "tasks.jsonl").open("w") as out:
        out.writelines(task.model_dump_json() + "\n" for task in tasks)
    with (folder / "gens.jsonl").open("w") as out:
        for index in range(runs):
            task = tasks[index % len(tasks)]
            out.write(json.dumps({
                "id": f"g{index}", "task_id": task.task_id, "model": "reference",
                "response": f"```python\n{task.canonical_solution}\n```",
                "instructions": [{"id": "style_1"}, {"id": "doc_1"}]}) + "\n")
    return len(tasks)


def timed(argv: list[str]) -> tuple[float, float]:
    """Run a command; its wall seconds and its own CPU seconds (the driver's, not its pool's)."""
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def records(path: Path) -> dict[str, dict[str, Any]]:
    """Records by key, ``meta.node`` left out (the only field a Ray run adds)."""
    found = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record["meta"].pop("node", None)
        found[record["meta"]["key"]] = record
    return found


def verdicts(path: Path) -> dict[str, dict[str, Any]]:
    """Verdicts by pair id."""
    return {v["pair_id"]: v for v in map(json.loads, path.read_text().splitlines())}


def efficiency_free(verdict: dict[str, Any]) -> dict[str, Any]:
    """A verdict less everything the efficiency facts measured (which differs run to run)."""
    if not any(fact["kind"] == "efficiency" for fact in verdict.get("facts") or []):
        return verdict
    kept = {"pair_id", "task_id", "model_a", "model_b", "method", "label", "category"}
    return {key: value for key, value in verdict.items() if key in kept}


def compare_verdicts(local: Path, ray: Path) -> dict[str, Any]:
    """How the Ray path's verdicts compare with the local path's.

    Returns:
        ``pairs``; ``other_equal``/``other``: verdicts without an efficiency fact, equal
        whole; ``efficiency``: pairs with one; ``efficiency_same``: the same decision;
        ``efficiency_flips``: A on one path and B on the other (ties on one side aside).
    """
    mine, theirs = verdicts(local), verdicts(ray)
    if set(mine) != set(theirs):
        raise SystemExit(f"the two judging paths judged different pairs: {len(mine)} vs "
                         f"{len(theirs)}")
    measured = [k for k, v in mine.items()
                if any(f["kind"] == "efficiency" for f in v.get("facts") or [])]
    others = [k for k in mine if k not in measured]
    return {
        "pairs": len(mine),
        "other": len(others),
        "other_equal": sum(efficiency_free(mine[k]) == efficiency_free(theirs[k]) for k in others),
        "efficiency": len(measured),
        "efficiency_same": sum(mine[k]["preferred"] == theirs[k]["preferred"] for k in measured),
        "efficiency_flips": sorted(k for k in measured
                                   if {mine[k]["preferred"], theirs[k]["preferred"]} == {"A", "B"}),
    }


def judge_argv(args: argparse.Namespace, folder: Path, address: str | None,
               limit: int) -> list[str]:
    """``judge-eval --method evidence`` of the first ``limit`` pairs of each split."""
    sources = [str(args.pairs / name) for name in JUDGE_SPLITS]
    tests = [arg for name in JUDGE_TESTS for arg in ("--tests", str(args.tests / name))]
    extra = ([] if address is None else
             ["--engine", "ray", "--address", address, "--shard-cpus", "1",
              "--shard-size", str(args.judge_shard_size)])
    return [sys.executable, "-m", "prefjudge", "judge-eval", *sources, "--method", "evidence",
            *tests, "--limit", str(limit), "--bootstrap", "100", "-o", str(folder), *extra]


def judge_paths(args: argparse.Namespace, work: Path, address: str, repetition: int,
                console: Console) -> tuple[dict[str, tuple[float, float]], dict[str, Any]]:
    """One repetition of evidence judging, both paths in turn; their times and comparison."""
    order = ["local", "ray"] if repetition % 2 == 0 else ["ray", "local"]
    times = {}
    for path in order:
        folder = work / f"judge-{path}-{repetition}"
        times[path] = timed(judge_argv(args, folder, None if path == "local" else address,
                                       args.judge_pairs))
        console.print(f"  repetition {repetition + 1}: judge {path:5} {times[path][0]:7.1f} s "
                      f"wall")
    compared = compare_verdicts(work / f"judge-local-{repetition}" / "verdicts-evidence.jsonl",
                                work / f"judge-ray-{repetition}" / "verdicts-evidence.jsonl")
    return times, compared


def main() -> int:
    """Run both paths, compare their records, print the overhead and the speed-up model."""
    args = parse_args()
    console = Console()
    if args.replay:
        saved = json.loads(args.replay.read_text())
        for name in ("runs", "cores", "shard_size", "repeat", "judge_pairs",
                     "judge_shard_size"):
            setattr(args, name, saved.get(name, 0))
        args.out = None
        return report(args, {"local": saved.get("local_wall_s", []),
                             "ray": saved.get("ray_wall_s", []),
                             "start": saved.get("start_s", [[0.0, 0.0]]),
                             "judge_local": saved.get("judge_local_s", []),
                             "judge_ray": saved.get("judge_ray_s", []),
                             "judge_start": saved.get("judge_start_s", [[0.0, 0.0]])},
                      saved.get("judge_compared", []), console)
    if args.runs and not args.tasks.exists():
        console.print(f"[red]{args.tasks} not found: give --tasks (BigCodeBench JSONL)[/]")
        return 2
    if args.judge_pairs and not all((args.pairs / name).exists() for name in JUDGE_SPLITS):
        console.print(f"[red]{args.pairs}: no CodePrefBench splits; give --pairs, or "
                      "--judge-pairs 0[/]")
        return 2
    from ray.cluster_utils import Cluster

    work = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    distinct = write_inputs(work, args.tasks, args.runs) if args.runs else 0
    console.print(f"{args.runs} runs of {distinct} BigCodeBench tasks; "
                  f"{args.judge_pairs} pairs per CodePrefBench split judged; {args.cores} cores; "
                  f"shards of {args.shard_size} (judging: {args.judge_shard_size}); "
                  f"{args.repeat} repetition(s)")
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 200 * 2**20})
    cluster.add_node(num_cpus=args.cores, resources={"prefjudge_sandbox": args.cores},
                     object_store_memory=200 * 2**20)
    cluster.wait_for_nodes()
    base = [sys.executable, "-m", "prefjudge", "score", str(work / "gens.jsonl"), "--tasks",
            str(work / "tasks.jsonl"), "--bootstrap", "100"]
    figures: dict[str, list[tuple[float, float]]] = {
        "local": [], "ray": [], "start": [], "judge_local": [], "judge_ray": [],
        "judge_start": []}
    compared: list[dict[str, Any]] = []
    try:
        if args.runs:
            small = work / "small.jsonl"
            small.write_text("".join((work / "gens.jsonl").read_text().splitlines(True)[:4]))
            # The driver's fixed cost: connect, probe the nodes, one small shard.
            figures["start"].append(timed([*base[:4], str(small), *base[5:], "-o",
                                           str(work / "start.jsonl"), "--engine", "ray",
                                           "--address", cluster.address]))
        for repetition in range(args.repeat if args.runs else 0):
            order = ["local", "ray"] if repetition % 2 == 0 else ["ray", "local"]
            for path in order:
                output = work / f"{path}-{repetition}.jsonl"
                extra = (["--workers", str(args.cores)] if path == "local" else
                         ["--engine", "ray", "--address", cluster.address, "--shard-cpus", "1",
                          "--shard-size", str(args.shard_size)])
                wall, cpu = timed([*base, "-o", str(output), *extra])
                figures[path].append((wall, cpu))
                console.print(f"  repetition {repetition + 1}: {path:5} {wall:7.1f} s wall, "
                              f"driver {cpu:6.1f} CPU s")
            if records(work / f"local-{repetition}.jsonl") != records(
                    work / f"ray-{repetition}.jsonl"):
                console.print("[red]the Ray run's records differ from the local run's[/]")
                return 1
        if args.judge_pairs:  # the Ray path's fixed cost: connect, probe, one pair per split
            figures["judge_start"] = [timed(judge_argv(args, work / "judge-start",
                                                       cluster.address, 1))]
        for repetition in range(args.repeat if args.judge_pairs else 0):
            times, same = judge_paths(args, work, cluster.address, repetition, console)
            figures["judge_local"].append(times["local"])
            figures["judge_ray"].append(times["ray"])
            compared.append(same)
            if same["other_equal"] != same["other"] or same["efficiency_flips"]:
                console.print(f"[red]the Ray path's verdicts differ from the local path's: "
                              f"{same}[/]")
                return 1
    finally:
        cluster.shutdown()
    return report(args, figures, compared, console)


def report(args: argparse.Namespace, figures: dict[str, list[tuple[float, float]]],
           compared: list[dict[str, Any]], console: Console) -> int:
    """Print the overhead tables and the speed-up model; write ``--out``."""
    out: dict[str, Any] = {"runs": args.runs, "cores": args.cores, "shard_size": args.shard_size,
                           "repeat": args.repeat, "judge_pairs": args.judge_pairs,
                           "judge_shard_size": args.judge_shard_size}
    ok = True
    per_run = per_shard = per_record = start = 0.0
    if figures["local"]:
        ok, scored = report_scoring(args, figures, console)
        out.update(scored)
        per_run, per_shard = scored["modelled_run_core_s"], scored["per_shard_core_s"]
        per_record, start = scored["driver_cpu_per_record_s"], figures["start"][0][0]
    per_pair = 0.0
    if figures["judge_local"]:
        judged = report_judging(args, figures, compared, console)
        out.update(judged)
        per_pair = judged["per_pair_core_s"]
    rows = model(args, console, per_run=per_run, per_shard=per_shard, per_record=per_record,
                 start=start, per_pair=per_pair)
    if args.out:
        args.out.write_text(json.dumps({**out, "model": rows}, indent=2))
    return 0 if ok else 1


def report_scoring(args: argparse.Namespace, figures: dict[str, list[tuple[float, float]]],
                   console: Console) -> tuple[bool, dict[str, Any]]:
    """The scoring table and its figures; whether the overhead meets the target."""
    local = statistics.median(wall for wall, _ in figures["local"])
    ray = statistics.median(wall for wall, _ in figures["ray"])
    overhead = ray / local - 1
    driver_cpu = statistics.median(cpu for _, cpu in figures["ray"])
    measured_run = local * args.cores / args.runs
    shards = -(-args.runs // args.shard_size)
    per_shard = max(0.0, (ray - local) * args.cores / shards)
    # The driver's CPU per record, its start (imports, connecting, probing) left out.
    per_record = max(0.0, driver_cpu - figures["start"][0][1]) / args.runs
    table = Table(title=f"score: local vs Ray on {args.cores} cores, {args.runs} runs "
                        f"(median of {len(figures['local'])})")
    for column in ("path", "wall s", "runs/s", "vs local", "each repetition"):
        table.add_column(column, justify="right")
    table.add_row("local", f"{local:.1f}", f"{args.runs / local:.1f}", "1.00",
                  " ".join(f"{wall:.1f}" for wall, _ in figures["local"]))
    table.add_row("ray", f"{ray:.1f}", f"{args.runs / ray:.1f}", f"{ray / local:.2f}",
                  " ".join(f"{wall:.1f}" for wall, _ in figures["ray"]))
    console.print(table)
    verdict = "meets" if overhead <= TARGET_OVERHEAD else "MISSES"
    console.print(f"Ray overhead {overhead:+.1%} ({verdict} the ≤ {TARGET_OVERHEAD:.0%} target); "
                  f"one run {measured_run:.3f} core-s; one shard's extra {per_shard:.2f} core-s; "
                  f"driver {per_record * 1000:.2f} ms CPU per record")
    return overhead <= TARGET_OVERHEAD, {
        "local_wall_s": figures["local"], "ray_wall_s": figures["ray"],
        "start_s": figures["start"], "median_local_s": local, "median_ray_s": ray,
        "overhead": overhead, "per_run_core_s": measured_run,
        "modelled_run_core_s": args.run_core_s or measured_run, "per_shard_core_s": per_shard,
        "driver_cpu_per_record_s": per_record}


def report_judging(args: argparse.Namespace, figures: dict[str, list[tuple[float, float]]],
                   compared: list[dict[str, Any]], console: Console) -> dict[str, Any]:
    """The evidence-judging table and its figures."""
    local = statistics.median(wall for wall, _ in figures["judge_local"])
    ray = statistics.median(wall for wall, _ in figures["judge_ray"])
    pairs = compared[0]["pairs"] if compared else 2 * args.judge_pairs
    table = Table(title=f"judge --method evidence: local vs Ray on {args.cores} cores, {pairs} "
                        f"CodePrefBench pairs (correctness + efficiency; median of "
                        f"{len(figures['judge_local'])})")
    for column in ("path", "wall s", "pairs/min", "vs local", "each repetition"):
        table.add_column(column, justify="right")
    table.add_row("local", f"{local:.1f}", f"{pairs / local * 60:.1f}", "1.00",
                  " ".join(f"{wall:.1f}" for wall, _ in figures["judge_local"]))
    table.add_row("ray", f"{ray:.1f}", f"{pairs / ray * 60:.1f}", f"{ray / local:.2f}",
                  " ".join(f"{wall:.1f}" for wall, _ in figures["judge_ray"]))
    console.print(table)
    for index, same in enumerate(compared, start=1):
        console.print(f"  repetition {index}: {same['other_equal']} of {same['other']} verdicts "
                      f"without efficiency facts equal; efficiency decisions equal on "
                      f"{same['efficiency_same']} of {same['efficiency']} (A on one path and B "
                      f"on the other: {len(same['efficiency_flips'])})")
    start = figures["judge_start"][0][0] if figures["judge_start"] else 0.0
    per_pair = max(0.0, ray - start) * args.cores / pairs
    console.print(f"Ray judging speed-up {local / ray:.2f}x on the same cores; one pair judged "
                  f"on Ray: {per_pair:.2f} core-s ((wall - start {start:.1f} s) x cores / "
                  "pairs)")
    return {"judge_local_s": figures["judge_local"], "judge_ray_s": figures["judge_ray"],
            "judge_start_s": figures["judge_start"],
            "median_judge_local_s": local, "median_judge_ray_s": ray,
            "judge_speedup": local / ray, "per_pair_core_s": per_pair,
            "judge_compared": compared}


def model(args: argparse.Namespace, console: Console, *, per_run: float, per_shard: float,
          per_record: float, start: float, per_pair: float) -> list[dict[str, Any]]:
    """The modelled study on N nodes: scoring and evidence judging spread over the cores."""
    study, pairs = (340_000 if per_run else 0), (args.study_pairs if per_pair else 0)
    work = study * (per_run + per_shard / args.shard_size) + pairs * per_pair
    title = (f"modelled study: {study:,} runs of {per_run:.2f} core-s and {pairs:,} pairs "
             f"judged with evidence at {per_pair:.2f} core-s on N nodes x {args.node_cores} "
             f"cores (start {start:.1f} s; driver {per_record * 1000:.2f} ms per record)")
    table = Table(title=title)
    for column in ("N", "cores", "hours", "speed-up vs 1 node"):
        table.add_column(column, justify="right")
    one, rows = None, []
    for nodes in (int(n) for n in args.nodes.split(",")):
        cores = nodes * args.node_cores
        seconds = max(start + work / cores, study * per_record)
        one = one or seconds
        rows.append({"nodes": nodes, "cores": cores, "hours": seconds / 3600,
                     "speedup": one / seconds})
        table.add_row(str(nodes), str(cores), f"{seconds / 3600:.2f}", f"{one / seconds:.1f}x")
    console.print(table)
    return rows


if __name__ == "__main__":
    sys.exit(main())
