"""Start-up cost of ``prefjudge --help`` and of every ``prefjudge CMD --help``.

Runs each help (and ``python -c pass``, the floor) several times in a fresh process and
prints, per command, the median CPU seconds of the process and its children, the median wall
time, and the ratio of the CPU time to the floor's. The goal (issue 44) is every help under
0.3 CPU-s: no numeric library, no model client, only the command's own options.

    python scripts/bench_startup.py                 # every command, 3 runs each
    python scripts/bench_startup.py --repeat 5 judge rank
    python scripts/bench_startup.py --json startup.json

The table goes to stdout; ``--json`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (
    "augment", "cache", "correlate", "generate", "guidance", "instructions", "judge",
    "judge-eval", "models", "pair", "persona", "rank", "report", "run", "score", "view",
)
GOAL_CPU_S = 0.3


def measure(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median CPU seconds (process and children) and median wall seconds of ``argv``.

    Args:
        argv: The command line to run (its output is discarded; it must exit 0).
        repeat: Runs to take the median of.
    """
    cpu, wall = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(cpu), statistics.median(wall)


def main() -> int:
    """Measure and print the table (exit 1 when a help is over the goal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commands", nargs="*", help="commands to measure [default: all]")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (median)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    exe = os.path.join(os.path.dirname(sys.executable), "prefjudge")
    floor_cpu, floor_wall = measure([sys.executable, "-c", "pass"], args.repeat)
    rows = [{"command": "python -c pass", "cpu_s": floor_cpu, "wall_s": floor_wall}]
    for command in ["", *(args.commands or COMMANDS)]:
        cpu, wall = measure([exe, *([command] if command else []), "--help"], args.repeat)
        rows.append({"command": f"prefjudge {command} --help".replace("  ", " "),
                     "cpu_s": cpu, "wall_s": wall})
    print(f"{'command':32s} {'CPU s':>7s} {'wall s':>7s} {'CPU / python':>13s}")
    for row in rows:
        row["ratio"] = row["cpu_s"] / floor_cpu if floor_cpu else float("nan")
        print(f"{row['command']:32s} {row['cpu_s']:7.3f} {row['wall_s']:7.3f} "
              f"{row['ratio']:12.1f}x")
    over = [row["command"] for row in rows[1:] if row["cpu_s"] >= GOAL_CPU_S]
    if over:
        print(f"over {GOAL_CPU_S} CPU-s: {', '.join(over)}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
