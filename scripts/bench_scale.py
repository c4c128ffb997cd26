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

From the measured figures the script models the time of a study on ``N`` nodes of ``c``
cores each: ``T(N) = s + R * (r + o / k) / (N * c)``, bounded below by the driver's own
work ``R * d``, where ``R`` is the number of runs, ``r`` the core-seconds of one run (local
wall x cores / runs), ``o`` the extra core-seconds of one shard on Ray, ``k`` the shard
size, ``s`` the driver's start (a Ray run of 4 generations: connect, probe, one shard) and
``d`` the driver's CPU seconds per record (parsing and writing). The speed-up is ``T_local / T(N)``.

    python scripts/bench_scale.py                    # 2,000 runs, 3 repetitions
    python scripts/bench_scale.py --runs 400 --repeat 1 --out bench_scale.json
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
DEFAULT_TASKS = (ROOT.parent / "shared" / "data" / "benchmarks" / "bigcodebench"
                 / "BigCodeBench_v0.1.0_hf.jsonl.gz")
TARGET_OVERHEAD = 0.15


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS,
                        help="BigCodeBench tasks (JSONL, optionally gzipped)")
    parser.add_argument("--runs", type=int, default=2000, help="generations (unit-test runs)")
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


def main() -> int:
    """Run both paths, compare their records, print the overhead and the speed-up model."""
    args = parse_args()
    console = Console()
    if args.replay:
        saved = json.loads(args.replay.read_text())
        for name in ("runs", "cores", "shard_size", "repeat"):
            setattr(args, name, saved[name])
        args.out = None
        return report(args, {"local": saved["local_wall_s"], "ray": saved["ray_wall_s"],
                             "start": saved.get("start_s", [[0.0, 0.0]])}, console)
    if not args.tasks.exists():
        console.print(f"[red]{args.tasks} not found: give --tasks (BigCodeBench JSONL)[/]")
        return 2
    from ray.cluster_utils import Cluster

    work = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    distinct = write_inputs(work, args.tasks, args.runs)
    console.print(f"{args.runs} runs of {distinct} BigCodeBench tasks; {args.cores} cores; "
                  f"shards of {args.shard_size}; {args.repeat} repetition(s)")
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 200 * 2**20})
    cluster.add_node(num_cpus=args.cores, resources={"prefjudge_sandbox": args.cores},
                     object_store_memory=200 * 2**20)
    cluster.wait_for_nodes()
    base = [sys.executable, "-m", "prefjudge", "score", str(work / "gens.jsonl"), "--tasks",
            str(work / "tasks.jsonl"), "--bootstrap", "100"]
    figures: dict[str, list[tuple[float, float]]] = {"local": [], "ray": [], "start": []}
    small = work / "small.jsonl"
    small.write_text("".join((work / "gens.jsonl").read_text().splitlines(True)[:4]))
    try:
        # The driver's fixed cost: connect, probe the nodes, one small shard.
        figures["start"].append(timed([*base[:4], str(small), *base[5:], "-o",
                                       str(work / "start.jsonl"), "--engine", "ray",
                                       "--address", cluster.address]))
        for repetition in range(args.repeat):
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
    finally:
        cluster.shutdown()
    return report(args, figures, console)


def report(args: argparse.Namespace, figures: dict[str, list[tuple[float, float]]],
           console: Console) -> int:
    """Print the overhead table and the speed-up model; write ``--out``."""
    local = statistics.median(wall for wall, _ in figures["local"])
    ray = statistics.median(wall for wall, _ in figures["ray"])
    overhead = ray / local - 1
    driver_cpu = statistics.median(cpu for _, cpu in figures["ray"])
    measured_run = local * args.cores / args.runs
    per_run = args.run_core_s or measured_run
    shards = -(-args.runs // args.shard_size)
    per_shard = max(0.0, (ray - local) * args.cores / shards)
    start = figures["start"][0][0]
    # The driver's CPU per record, its start (imports, connecting, probing) left out.
    per_record = max(0.0, driver_cpu - figures["start"][0][1]) / args.runs
    table = Table(title=f"score: local vs Ray on {args.cores} cores, {args.runs} runs "
                        f"(median of {args.repeat})")
    for column in ("path", "wall s", "runs/s", "vs local"):
        table.add_column(column, justify="right")
    table.add_row("local", f"{local:.1f}", f"{args.runs / local:.1f}", "1.00")
    table.add_row("ray", f"{ray:.1f}", f"{args.runs / ray:.1f}", f"{ray / local:.2f}")
    console.print(table)
    verdict = "meets" if overhead <= TARGET_OVERHEAD else "MISSES"
    console.print(f"Ray overhead {overhead:+.1%} ({verdict} the ≤ {TARGET_OVERHEAD:.0%} target); "
                  f"one run {measured_run:.3f} core-s; one shard's extra {per_shard:.2f} core-s; "
                  f"driver {per_record * 1000:.2f} ms CPU per record")
    model = Table(title=f"modelled study: 340,000 runs of {per_run:.2f} core-s on N nodes x "
                        f"{args.node_cores} cores (shards of {args.shard_size}; start "
                        f"{start:.1f} s; driver {per_record * 1000:.2f} ms per record)")
    for column in ("N", "cores", "runs/hour", "hours for 340,000 runs", "speed-up vs 1 node"):
        model.add_column(column, justify="right")
    study = 340_000
    one = None
    rows = []
    for nodes in (int(n) for n in args.nodes.split(",")):
        cores = nodes * args.node_cores
        seconds = max(start + study * (per_run + per_shard / args.shard_size) / cores,
                      study * per_record)
        one = one or seconds
        rows.append({"nodes": nodes, "cores": cores, "hours": seconds / 3600,
                     "speedup": one / seconds})
        model.add_row(str(nodes), str(cores), f"{study / seconds * 3600:,.0f}",
                      f"{seconds / 3600:.2f}", f"{one / seconds:.1f}x")
    console.print(model)
    if args.out:
        args.out.write_text(json.dumps({
            "runs": args.runs, "cores": args.cores, "shard_size": args.shard_size,
            "repeat": args.repeat, "local_wall_s": figures["local"],
            "ray_wall_s": figures["ray"], "start_s": figures["start"],
            "median_local_s": local, "median_ray_s": ray,
            "overhead": overhead, "per_run_core_s": measured_run,
            "modelled_run_core_s": per_run, "per_shard_core_s": per_shard,
            "driver_cpu_per_record_s": per_record, "model": rows}, indent=2))
    return 0 if overhead <= TARGET_OVERHEAD else 1


if __name__ == "__main__":
    sys.exit(main())
