"""Benchmark the batched verifier against the naive one-Ruff-process-per-check way.

Real code: BigCodeBench canonical solutions (complete_prompt + canonical_solution) and
model-written solutions from EvalPerf, wrapped as model responses (some in a fenced block
with prose around it, some bare). Each response gets a seeded random choice of 5
non-conflicting instructions with random valid parameters.

The batched way scores every response; the naive way scores the first --naive-n of them
(it is ~100x slower). Both run in the same process, their results on the overlapping
responses must be identical (asserted), and the script prints checks/s for both (medians
over --repeats), and their ratio.

    python scripts/bench_verify.py                      # 2,400 responses x 5 instructions
    python scripts/bench_verify.py --n 2000 --naive-n 200 --repeats 3 --workers 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prefjudge.records import InstructionRef
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.scoring.verify import ruff_version, runners, verify_batch, verify_naive

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BCB = DATA / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
EVALPERF = DATA / "generations" / "evalperf"


def load_code(n: int, rng: random.Random) -> list[str]:
    """``n`` real code snippets: all BigCodeBench solutions, then EvalPerf samples."""
    with gzip.open(BCB, "rt", encoding="utf-8") as handle:
        bcb = [json.loads(line) for line in handle]
    codes = [task["complete_prompt"] + task["canonical_solution"] for task in bcb]
    generated = []
    for path in sorted(EVALPERF.glob("*_evalperf_results.brief.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        for task in results.get("eval", {}).values():
            generated += [sample["solution"] for sample in task.get("profiled", [])]
    rng.shuffle(generated)
    codes += generated
    if len(codes) < n:
        raise SystemExit(f"only {len(codes)} snippets available, {n} asked")
    return codes[:n] if n <= len(bcb) else codes[: len(bcb)] + generated[: n - len(bcb)]


def as_response(code: str, rng: random.Random) -> str:
    """Wrap code the way models answer: fenced with prose, fenced alone, or bare."""
    shape = rng.random()
    if shape < 0.6:
        return f"Here is the solution:\n\n```python\n{code}\n```\n\nIt runs in linear time."
    if shape < 0.8:
        return f"```\n{code}\n```"
    return code


def random_instructions(taxonomy: Taxonomy, rng: random.Random, k: int = 5) -> list[InstructionRef]:
    """``k`` distinct, mutually non-conflicting instructions with random valid parameters."""
    chosen: list[str] = []
    ids = taxonomy.ids
    while len(chosen) < k:
        candidate = rng.choice(ids)
        conflicts = set(taxonomy.get(candidate).conflicts)
        if candidate not in chosen and not conflicts & set(chosen):
            chosen.append(candidate)
    refs = []
    for instruction_id in chosen:
        params = {}
        for param in taxonomy.get(instruction_id).params:
            if param.type == "int":
                params[param.name] = rng.randint(param.min, param.max)
            else:
                params[param.name] = rng.choice(param.choices)
        refs.append(InstructionRef(id=instruction_id, params=params))
    return refs


@dataclass
class Measurement:
    """Repeated timings of one way of verifying."""

    label: str
    checks: int
    wall: list[float]
    cpu: list[float]
    processes: int

    @property
    def rate(self) -> float:
        """Checks per second of wall-clock time (median run)."""
        return self.checks / statistics.median(self.wall)

    def line(self) -> str:
        """One line of the report."""
        runs = ", ".join(f"{t:.3f}" for t in self.wall)
        cpu, wall = statistics.median(self.cpu), statistics.median(self.wall)
        return (
            f"{self.label + ':':9}{self.checks} checks, median {wall:.3f} s "
            f"(runs: {runs}) -> {self.rate:,.0f} checks/s; "
            f"CPU {cpu:.2f} s (this process + Ruff) -> {self.checks / cpu:,.0f} checks per "
            f"CPU-second; {self.processes} Ruff processes per run"
        )


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(label, function, items, repeats: int, **kwargs):
    """Run ``function(items)`` ``repeats`` times, counting time and Ruff processes.

    Returns:
        The last result and the measurement.
    """
    wall, cpu, result, processes = [], [], None, [0]
    run_ruff = runners.run_ruff

    def counting(*args, **kw):
        processes[0] += 1
        return run_ruff(*args, **kw)

    runners.run_ruff = counting
    try:
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), _cpu_seconds()
            result = function(items, **kwargs)
            wall.append(time.perf_counter() - start)
            cpu.append(_cpu_seconds() - start_cpu)
    finally:
        runners.run_ruff = run_ruff
    checks = sum(len(refs) for _, refs in items)
    return result, Measurement(label, checks, wall, cpu, processes[0] // max(repeats, 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2400, help="responses (batched way)")
    parser.add_argument("--naive-n", type=int, default=200, help="responses (naive way)")
    parser.add_argument("--k", type=int, default=5, help="instructions per response")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of each way")
    parser.add_argument("--workers", type=int, default=2, help="parallel Ruff runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not BCB.exists():
        print(f"real data not found under {DATA}", file=sys.stderr)
        return 2

    rng = random.Random(args.seed)
    taxonomy = load_taxonomy()
    codes = load_code(args.n, rng)
    items = [(as_response(code, rng), random_instructions(taxonomy, rng, args.k)) for code in codes]
    naive_items = items[: args.naive_n]
    print(
        f"ruff {ruff_version()}; {len(items)} responses x {args.k} instructions; "
        f"workers={args.workers}; repeats={args.repeats}; {os.cpu_count()} CPUs; "
        f"load average before: {os.getloadavg()[0]:.2f}"
    )
    batched, fast = measure("batched", verify_batch, items, args.repeats, workers=args.workers)
    naive, slow = measure("naive", verify_naive, naive_items, args.repeats)
    subset, _ = measure("subset", verify_batch, naive_items, 1, workers=args.workers)
    assert batched[: len(naive)] == naive, "batched and naive results differ"
    assert subset == naive, "batched (run on the subset alone) and naive results differ"

    statuses = Counter(result.status for row in batched for result in row)
    print(f"statuses (batched, all): {dict(sorted(statuses.items()))}")
    print(
        f"identical results on the first {len(naive_items)} responses ({slow.checks} checks), "
        "scored both ways (the naive way scores only those)"
    )
    print(fast.line())
    print(slow.line())
    print(f"speed-up: {fast.rate / slow.rate:,.1f}x (checks/s, median runs)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
