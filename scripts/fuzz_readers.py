"""Fuzz prefjudge's readers in real subprocesses: hostile variants of valid inputs.

Every case runs ``python -m prefjudge ...`` on one mutated input (see tests/helpers/pj_fuzz.py
for the targets, the mutators and the rules) with a timeout, and is classified ok,
clean_error, traceback, hang or silent_accept. Findings (every case that is not ok or a clean
error) go to a JSONL file; the last line on stdout is the summary, e.g.

    fuzz_readers seed=1 cases=3000 ok=... clean_errors=... tracebacks=0 hangs=0 silent_accepts=0

    python scripts/fuzz_readers.py --seed 1 --cases 3000 --jobs 2

``--spawn fork`` (about 8 times faster: 3,200 cases in 17 minutes on 2 cores) forks each case
from this process after it imported every command once, instead of starting a new
interpreter; each case is still its own process, with its own exit status, killed at the
timeout. The progress bar goes to stderr; the folders of the findings are kept (--keep) with
a reproducer in the JSONL.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

import pj_fuzz
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)


def plan(seed: int, n: int, targets: list[str], mutations: list[str]) -> list[tuple[str, str, int]]:
    """The (target, mutation, case seed) triples to try, in a seeded order.

    Every (target, mutation) pair comes round once per block, shuffled within the block, so
    that any prefix covers them evenly; pairs whose mutator does not apply are dropped when
    the case is prepared (the script then tries the next triple).
    """
    rng = random.Random(seed)
    pairs = [(t, m) for t in targets for m in mutations]
    triples: list[tuple[str, str, int]] = []
    block = 0
    while len(triples) < n * 3:
        order = pairs[:]
        rng.shuffle(order)
        triples += [(t, m, seed * 1_000_003 + block) for t, m in order]
        block += 1
    return triples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=3000, help="cases to run")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case (a hang)")
    parser.add_argument("--jobs", type=int, default=2, help="cases at once")
    parser.add_argument(
        "--big", type=int, default=4 * 1024 * 1024, help="bytes of a huge name (default 4 MiB)"
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        help="only these targets (repeatable; default: all)",
    )
    parser.add_argument(
        "--mutation",
        action="append",
        default=[],
        help="only these mutations (repeatable; default: all)",
    )
    parser.add_argument(
        "--findings",
        type=Path,
        default=Path("fuzz_findings.jsonl"),
        help="JSONL of the cases that are not ok or a clean error",
    )
    parser.add_argument(
        "--spawn",
        choices=["python", "fork"],
        default="python",
        help="python: each case is `python -m prefjudge ...`; fork: forked "
        "from this process after importing every command once (faster)",
    )
    parser.add_argument(
        "--all", action="store_true", help="write every case to --findings, not only the findings"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="work in this folder (default: a temporary one); the folders of the findings "
        "stay there, to rerun them",
    )
    parser.add_argument(
        "--keep-all", action="store_true", help="keep every case's folder, not only the findings'"
    )
    args = parser.parse_args()
    targets = args.target or [t.name for t in pj_fuzz.TARGETS]
    mutations = args.mutation or list(pj_fuzz.MUTATORS)
    work = args.keep or Path(tempfile.mkdtemp(prefix="fuzz_readers."))
    work.mkdir(parents=True, exist_ok=True)
    print(f"making seeds in {work / 'seeds'}", file=sys.stderr)
    seeds = pj_fuzz.make_seeds(work / "seeds")

    counts: Counter[str] = Counter()
    findings = args.findings.open("w", encoding="utf-8")
    triples = iter(plan(args.seed, args.cases, targets, mutations))

    def next_case(index: int) -> pj_fuzz.Case | None:
        for target, mutation, case_seed in triples:
            folder = work / "cases" / f"{index:05d}"
            shutil.rmtree(folder, ignore_errors=True)
            case = pj_fuzz.prepare(
                pj_fuzz.TARGET_NAMES[target], mutation, case_seed, seeds, folder, args.big
            )
            if case is not None:
                return case
        return None

    cases = [c for c in (next_case(i) for i in range(args.cases)) if c is not None]

    if args.spawn == "fork":
        pj_fuzz.preload()
    columns = (
        TextColumn("fuzz"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[tally]}"),
    )
    pending = list(reversed(cases))
    running: list[pj_fuzz.Running] = []
    # one thread: the progress bar is refreshed by hand, so that fork() copies no other thread
    with Progress(*columns, console=Console(stderr=True), auto_refresh=False) as progress:
        bar = progress.add_task("cases", total=len(cases), tally="")
        while pending or running:
            while pending and len(running) < args.jobs:
                running.append(pj_fuzz.launch(pending.pop(), args.spawn == "fork"))
            finished: list[tuple[pj_fuzz.Case, pj_fuzz.Outcome]] = []
            for one in list(running):
                code = one.poll()
                if code is None and time.monotonic() - one.started > args.timeout:
                    finished.append((one.case, one.outcome(one.stop())))  # a hang, unless it
                elif code is not None:  # ended just now
                    finished.append((one.case, one.outcome(code)))
                else:
                    continue
                running.remove(one)
            if not finished:
                time.sleep(0.02)
                continue
            for case, outcome in finished:
                counts[outcome.status] += 1
                if args.all or outcome.status not in ("ok", "clean_error"):
                    findings.write(json.dumps(pj_fuzz.finding(case, outcome)) + "\n")
                    findings.flush()
                if outcome.status in ("ok", "clean_error") and not args.keep_all:
                    shutil.rmtree(case.folder, ignore_errors=True)
                bad = counts["traceback"] + counts["hang"] + counts["silent_accept"]
                progress.update(bar, advance=1, tally=f"findings {bad}")
                progress.refresh()
    findings.close()
    print(
        f"fuzz_readers seed={args.seed} cases={len(cases)} ok={counts['ok']} "
        f"clean_errors={counts['clean_error']} tracebacks={counts['traceback']} "
        f"hangs={counts['hang']} silent_accepts={counts['silent_accept']}"
    )
    return 0 if counts["traceback"] + counts["hang"] + counts["silent_accept"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
