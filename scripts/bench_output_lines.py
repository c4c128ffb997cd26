"""Benchmark: what a measured call's output costs to check, a line made in full or reused.

A measured run (``sandbox/child/_pj_perf.py``) checks every call's output. Making an
output's line in full (a plain copy and a digest, in Python, element by element) costs
more than a simple function's own work on a large output, and the same for both sides of
a pair, which hid the difference the measurement is for. Since issue 45's second round a
run reuses the line of an output it has seen (same ``marshal`` bytes): this script times
both ways on outputs like the scaled inputs make, in this process, with the child's own
classes, and prints the ratio beside the cost of a simple function on the same data.

    python scripts/bench_output_lines.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

CHILD = Path(__file__).resolve().parents[1] / "src" / "prefjudge" / "sandbox" / "child"
sys.path.insert(0, str(CHILD))

import _pj_evalplus as evalplus  # noqa: E402 - the child's folder is on the path only now
import _pj_perf as perf  # noqa: E402
import _pj_plain as plain  # noqa: E402

OUTPUTS = {
    "1k ints": list(range(1_000)),
    "30k ints": list(range(30_000)),
    "10k strings": [f"w{i}" for i in range(10_000)],
    "100x100 matrix": [[i * 100 + j for j in range(100)] for i in range(100)],
    "5k tuples": [(i, i + 1) for i in range(5_000)],
}
PAYLOAD = {"dataset": "mbpp", "entry_point": "f"}


def per_call(make_line, out, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        make_line("plus", 0, out)
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    plain.capture_types()
    rows = []
    for name, out in OUTPUTS.items():
        full, reused, work = [], [], []
        for _ in range(args.repeats):
            full.append(per_call(evalplus.CandidateLines(PAYLOAD).line, out, args.calls))
            lines = perf.RepeatedLines(PAYLOAD)
            lines.line("plus", 0, out)  # the first call of a run makes it in full
            reused.append(per_call(lines.line, out, args.calls))
            start = time.process_time()
            for _ in range(args.calls):
                list(reversed(out))  # a simple function's own work on the same data
            work.append((time.process_time() - start) / args.calls)
        row = {"output": name, "full_us": statistics.median(full) * 1e6,
               "reused_us": statistics.median(reused) * 1e6,
               "work_us": statistics.median(work) * 1e6}
        row["ratio"] = row["full_us"] / max(row["reused_us"], 1e-3)
        rows.append(row)
    print(f"{'output':<16}{'full line':>12}{'reused':>10}{'ratio':>8}{'reverse()':>11}")
    for row in rows:
        print(f"{row['output']:<16}{row['full_us']:>10.0f}us{row['reused_us']:>8.0f}us"
              f"{row['ratio']:>7.1f}x{row['work_us']:>9.0f}us")
    print("per call, median of the repeats; reverse(): a simple function's own work on it",
          file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
