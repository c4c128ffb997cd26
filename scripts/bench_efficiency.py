"""Benchmark the efficiency fact: accuracy on CodePrefBench and on EvalPerf pairs, CPU per pair.

Two sets of pairs, each labelled by which side is faster on performance-exercising inputs:

- ``codeprefbench``: CodePrefBench's 352 efficiency pairs;
- ``evalperf``: pairs of EvalPerf's released, correct model solutions to the same task
  whose speed clusters (EvalPerf's ``matching_cluster_idx``, higher is faster) lie at
  least ``--min-gap`` apart; up to ``--per-task`` pairs a task, drawn with a seed, the
  sides in a seeded order. EvalPerf's results are used here only as labels: the judge
  never sees them.

Every response is first run against its tests; a pair whose responses do not both pass is
decided by the tests alone (``prefjudge.judge.facts.time_limits``), the others are measured
one at a time (``prefjudge.judge.facts.efficiency``). Accuracy is given with a tie (or an
``insufficient``/``error`` pair) counted half and counted wrong. The CPU time of each
measured pair is split into making the task's scaled inputs (nothing when kept from an
earlier pair of the task) and measuring: the sandbox runs' CPU (counted by the kernel)
plus this process's own.

    python scripts/bench_efficiency.py --stride 20                  # a quick sample
    python scripts/bench_efficiency.py --set evalperf --limit 30
    python scripts/bench_efficiency.py --no-scaled --out before.json  # the task's own inputs
    python scripts/bench_efficiency.py --same-code --stride 4       # the null: A against A

``--same-code`` measures each pair's side A against itself (labelled ``tie``): every
decision it makes is a false one, so its rate bounds how often noise alone decides.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from evidence_efficiency import (  # noqa: E402 - scripts/ is on the path only now
    DATA,
    PAIRS,
    load_task_index,
    progress_bar,
    test_all,
)

from prefjudge.judge.facts.efficiency import DEFAULT_REPEATS, compare_efficiency  # noqa: E402
from prefjudge.judge.facts.perf_inputs.measure import perf_inputs_for  # noqa: E402
from prefjudge.judge.pairs.formats import load_codeprefbench  # noqa: E402
from prefjudge.records import Fact, Pair  # noqa: E402
from prefjudge.sandbox import SandboxLimits, resolve_isolation  # noqa: E402
from prefjudge.sandbox.compare import ReferenceOutputs  # noqa: E402
from prefjudge.sandbox.preload import modules_to_preload  # noqa: E402
from prefjudge.sandbox.references import reference_outputs  # noqa: E402
from prefjudge.sandbox.zygote import ZygotePool  # noqa: E402
from prefjudge.scoring.verify.extract import extract_code  # noqa: E402

EVALPERF = DATA / "generations" / "evalperf"
SETS = ("codeprefbench", "evalperf")
OUTCOMES = ("A", "B", "tie", "insufficient", "error")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=[*SETS, "both"], default="both")
    parser.add_argument("--limit", type=int, default=None, help="first N pairs of each set")
    parser.add_argument("--stride", type=int, default=1, help="every Nth pair of each set")
    parser.add_argument("--only", type=Path, default=None,
                        help="a file of pair ids (one a line, or `set pair_id`): only those")
    parser.add_argument("--min-gap", type=int, default=3, help="EvalPerf cluster gap")
    parser.add_argument("--per-task", type=int, default=2, help="EvalPerf pairs a task")
    parser.add_argument("--workers", type=int, default=2, help="test runs at once")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="wall seconds per run")
    parser.add_argument("--scaled", action=argparse.BooleanOptionalAction, default=True,
                        help="measure on scaled inputs (default); --no-scaled: the "
                        "task's own inputs, as before issue 45")
    parser.add_argument("--same-code", action="store_true",
                        help="the null check: side A against itself, every decision false")
    parser.add_argument("--out", type=Path, default=Path("bench_efficiency.json"))
    parser.add_argument("--resume", action="store_true",
                        help="keep the pairs already in OUT.pairs.jsonl (written as they are "
                        "decided) and measure only the rest")
    return parser.parse_args()


def pairs_log(out: Path) -> Path:
    """The file each decided pair is written to as it is decided: ``OUT.pairs.jsonl``."""
    return out.with_name(out.name.split(".")[0] + ".pairs.jsonl")


def kept_records(log: Path, resume: bool) -> dict[tuple[str, str], dict]:
    """Records of an earlier run of this command, by (set, pair id); none without --resume."""
    if not resume or not log.is_file():
        return {}
    kept = {}
    with log.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                kept[(record["set"], record["pair_id"])] = record
    return kept


def chosen_ids(path: Path, name: str) -> set[str]:
    """The pair ids ``--only`` names for set ``name`` (a bare id is any set's)."""
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) == 1 or (len(words) == 2 and words[0] == name):
            ids.add(words[-1])
    return ids


def evalperf_pairs(folder: Path, min_gap: int, per_task: int, seed: int) -> list[Pair]:
    """Pairs of EvalPerf's released solutions at least ``min_gap`` clusters apart."""
    solutions: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for path in sorted(folder.glob("*.brief.json")):
        for task_id, entry in json.loads(path.read_text())["eval"].items():
            for item in entry.get("profiled", []):
                code = item["solution"].strip() + "\n"
                solutions[task_id].setdefault(code, int(item["matching_cluster_idx"]))
    pairs = []
    for task_id in sorted(solutions, key=_task_order):
        rng = random.Random(f"{seed}|{task_id}")
        codes = sorted(solutions[task_id].items(), key=lambda item: (item[1], item[0]))
        options = [(slow, fast) for slow in codes for fast in codes
                   if fast[1] - slow[1] >= min_gap]
        rng.shuffle(options)
        combos = {(slow[1], fast[1]) for slow, fast in options}
        firsts = [next(o for o in options if (o[0][1], o[1][1]) == c) for c in sorted(combos)]
        rng.shuffle(firsts)  # distinct cluster pairs first, then any other
        picked = (firsts + [o for o in options if o not in firsts])[:per_task]
        for number, (slow, fast) in enumerate(picked, 1):
            fast_first = rng.random() < 0.5
            a, b = (fast, slow) if fast_first else (slow, fast)
            pairs.append(Pair(pair_id=f"{task_id}#evalperf{number}", task_id=task_id,
                              instruction="", response_a=a[0], response_b=b[0],
                              label="A" if fast_first else "B",
                              clusters={"A": a[1], "B": b[1]}))
    return pairs


def _task_order(task_id: str) -> tuple[str, int]:
    name, _, number = task_id.partition("/")
    return name, int(number) if number.isdigit() else 0


class CountingRunner:
    """Runs payloads through a pool and adds up the runs' CPU seconds (kernel-counted)."""

    def __init__(self, pool: ZygotePool) -> None:
        self.pool = pool
        self.cpu_s = 0.0

    def run(self, payload: dict, limits: SandboxLimits):
        outcome = self.pool.run(payload, limits)
        self.cpu_s += outcome.cpu_s or 0.0
        return outcome

    def __call__(self, payload: dict, limits: SandboxLimits):
        return self.run(payload, limits)


def measure_pair(pair: Pair, task, plan, limits: SandboxLimits, counter: CountingRunner,
                 args: argparse.Namespace, index: int) -> tuple[Fact, dict]:
    """One pair measured: its fact, and the CPU seconds of its inputs and its measurement."""
    own, runs = time.process_time(), counter.cpu_s
    if args.scaled:
        reference = reference_outputs(task, limits.time_doubled(), counter)
        if isinstance(reference, ReferenceOutputs):
            perf_inputs_for(task, reference, counter)
    inputs_s = counter.cpu_s - runs + time.process_time() - own
    own, runs = time.process_time(), counter.cpu_s
    decision = compare_efficiency(
        task, extract_code(pair.response_a), extract_code(pair.response_b), plan=plan,
        limits=limits, runner=counter, repeats=args.repeats, seed=args.seed + index,
        check_correct=False, scaled=args.scaled)
    measure_s = counter.cpu_s - runs + time.process_time() - own
    return decision.to_fact(), {"inputs_cpu_s": round(inputs_s, 3),
                                "measure_cpu_s": round(measure_s, 3)}


def score(outcome: str, label: str | None, tie: float) -> float:
    if outcome in ("A", "B"):
        return 1.0 if outcome == label else 0.0
    return tie


def run_set(name: str, pairs: list[Pair], tasks: dict, args: argparse.Namespace) -> dict:
    """Test, then measure, every pair of one set; its records and summary.

    Each decided pair is appended to :func:`pairs_log` at once, so that a run stopped
    half-way resumes (``--resume``) where it stopped.
    """
    pairs = [p for p in pairs if p.task_id in tasks][:: max(1, args.stride)]
    if args.only is not None:
        wanted = chosen_ids(args.only, name)
        pairs = [p for p in pairs if p.pair_id in wanted]
    pairs = pairs[: args.limit] if args.limit else pairs
    log = pairs_log(args.out)
    kept = kept_records(log, args.resume)
    done = [kept[(name, p.pair_id)] for p in pairs if (name, p.pair_id) in kept]
    pairs = [p for p in pairs if (name, p.pair_id) not in kept]
    if done:
        print(f"{name}: {len(done)} pairs kept from {log}", file=sys.stderr)
    limits = SandboxLimits(timeout_s=args.timeout, cpu_s=int(args.timeout))
    plan = resolve_isolation()
    started = time.monotonic()
    records = list(done)
    if pairs:
        with ZygotePool(plan, modules_to_preload([tasks[p.task_id] for p in pairs],
                                                 ["numpy"])) as pool:
            blocked = test_all(pairs, tasks, limits, pool, args.workers)
            records += measure_all(name, pairs, blocked, tasks, plan, limits, pool, args, log)
    return {"set": name, "seconds": round(time.monotonic() - started, 1),
            "summary": summarise(records), "records": records}


def measure_all(name: str, pairs: list[Pair], blocked: list[Fact | None], tasks: dict,
                plan, limits: SandboxLimits, pool: ZygotePool, args: argparse.Namespace,
                log: Path) -> list[dict]:
    """Phase 2: every pair the tests did not decide, measured one at a time (with a bar)."""
    counter = CountingRunner(pool)
    records = []
    tally: collections.Counter = collections.Counter()
    with progress_bar() as progress, log.open("a", encoding="utf-8") as handle:
        bar = progress.add_task(f"{name}: measuring", total=len(pairs), tally="")
        for index, (pair, decided) in enumerate(zip(pairs, blocked, strict=True)):
            costs: dict = {}
            fact = decided
            if fact is None:
                fact, costs = measure_pair(pair, tasks[pair.task_id], plan, limits, counter,
                                           args, index)
            record = {"set": name, "pair_id": pair.pair_id, "task_id": pair.task_id,
                      "label": pair.label, "outcome": fact.outcome,
                      "measured": decided is None, **costs, "fact": fact.fact,
                      "growth": fact.detail.get("growth"), "scales": fact.detail.get("scales")}
            records.append(record)
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            tally["right" if fact.outcome == pair.label else
                  "wrong" if fact.outcome in ("A", "B") else "undecided"] += 1
            progress.console.print(f"{pair.pair_id} label {pair.label} -> {fact.outcome}: "
                                   f"{fact.fact[:160]}", markup=False, highlight=False)
            progress.update(bar, advance=1, tally=" ".join(f"{k} {v}" for k, v in
                                                           sorted(tally.items())))
    return records


def summarise(records: list[dict]) -> dict:
    total = len(records) or 1
    counts = collections.Counter(r["outcome"] for r in records)
    decided = [r for r in records if r["outcome"] in ("A", "B")]
    right = sum(r["outcome"] == r["label"] for r in decided)
    measured = [r for r in records if r["measured"]]

    def cpu(key: str) -> dict:
        values = [r[key] for r in measured if key in r]
        return {"median": round(statistics.median(values), 3) if values else None,
                "mean": round(statistics.fmean(values), 3) if values else None}

    return {"pairs": len(records), "counts": {o: counts[o] for o in OUTCOMES},
            "right": right, "wrong": len(decided) - right,
            "accuracy_tie_half": sum(score(r["outcome"], r["label"], 0.5)
                                     for r in records) / total,
            "accuracy_tie_wrong": right / total,
            "decided_accuracy": right / len(decided) if decided else None,
            "measured": len(measured), "inputs_cpu_s": cpu("inputs_cpu_s"),
            "measure_cpu_s": cpu("measure_cpu_s")}


def print_table(results: list[dict], same_code: bool = False) -> None:
    head = (f"{'set':<14}{'pairs':>6}{'right':>6}{'wrong':>6}{'ties':>6}{'tie=1/2':>9}"
            f"{'tie=0':>8}{'decided':>9}{'inputs cpu':>12}{'measure cpu':>13}")
    print(head)
    for result in results:
        s = result["summary"]
        ties = s["pairs"] - s["right"] - s["wrong"]
        decided = "-" if s["decided_accuracy"] is None else f"{s['decided_accuracy']:.1%}"
        inputs = s["inputs_cpu_s"]["mean"]
        measure = s["measure_cpu_s"]["mean"]
        print(f"{result['set']:<14}{s['pairs']:>6}{s['right']:>6}{s['wrong']:>6}{ties:>6}"
              f"{s['accuracy_tie_half']:>9.1%}{s['accuracy_tie_wrong']:>8.1%}{decided:>9}"
              f"{_secs(inputs):>12}{_secs(measure):>13}")
    print("cpu: mean CPU seconds per measured pair (sandbox runs + this process); "
          "inputs: making the task's scaled inputs, once per task")
    for result in results if same_code else []:
        records = result["records"]
        if records:
            false = sum(r["outcome"] in ("A", "B") for r in records)
            print(f"{result['set']}: the same code on both sides, {false} of {len(records)} "
                  f"decided ({false / len(records):.1%} false decisions)")


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def main() -> None:
    args = parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)  # its pairs log is written as it goes
    tasks = load_task_index(DATA / "benchmarks" / "evalplus")
    chosen = SETS if args.set == "both" else (args.set,)
    results = []
    for name in chosen:
        if name == "codeprefbench":
            pairs, issues = load_codeprefbench(PAIRS)
            if issues:
                sys.exit(f"{len(issues)} unusable rows in {PAIRS}")
        else:
            pairs = evalperf_pairs(EVALPERF, args.min_gap, args.per_task, args.seed)
        if args.same_code:
            pairs = [pair.model_copy(update={"response_b": pair.response_a, "label": "tie"})
                     for pair in pairs]
        results.append(run_set(name, pairs, tasks, args))
    opener = gzip.open if args.out.suffix == ".gz" else open
    with opener(args.out, "wt", encoding="utf-8") as handle:
        json.dump({"args": {k: str(v) for k, v in vars(args).items()}, "results": results},
                  handle, indent=1)
    print_table(results, args.same_code)
    print(f"written: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
