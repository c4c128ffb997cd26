"""Benchmark prefjudge's scorer against EvalPlus and BigCodeBench on the same samples.

What it does, in order:

1. Peers: ``evalplus==0.3.1`` and ``bigcodebench==0.2.5`` are pip-installed from PyPI, each
   into a venv of its own under ``--peers-dir`` (default ``.peers/`` in the repository,
   git-ignored; never prefjudge's venv), and reused when already there. The libraries
   BigCodeBench tasks need are aligned: what prefjudge's venv imports and the BigCodeBench
   venv lacks (or has at another version) is installed there at prefjudge's version.
2. Sample (``--seed``, ``--samples N`` per benchmark), written as ``{"task_id", "solution"}``:
   HumanEval+ and MBPP+: real model-written solutions from EvalPerf
   (``generations/evalperf``) plus seeded broken copies (wrong return, raise, infinite loop,
   off-by-one), and ``--include`` (default: grok-beta's HumanEval/87 solution 7, whose
   docstring holds a ```python example); BigCodeBench: canonical solutions plus broken
   copies, of tasks whose libraries import in both venvs. ``bigcodebench`` leaves out the
   tasks that mostly wait (canonical solution's wall >= 3x its CPU and >= 2 s, measured
   once and cached, see ``peers/waiting.py``); ``bigcodebench-waiting`` holds the canonical
   solutions of ``--waiting`` of them (BigCodeBench/461 and others of at most
   ``--waiting-max-wall`` s), and the row ``bigcodebench+waiting`` adds the two (counts and
   median times): BigCodeBench with its waiting tasks.
3. Data: the local release files under ``--data`` (``benchmarks/evalplus``: HumanEval+
   v0.1.10, MBPP+ v0.2.0; ``benchmarks/bigcodebench``: v0.1.0). Both peers insist on a
   sample for every task of the file they read, so each reads a subset file holding the
   sampled tasks' lines of the release file unchanged, through its own override variable
   (``HUMANEVAL_OVERRIDE_PATH``, ``MBPP_OVERRIDE_PATH``, ``BIGCODEBENCH_OVERRIDE_PATH``);
   prefjudge reads the same subset file (``--tasks``), so both tools parse the same tasks
   (the release's others would cost prefjudge alone 0.1-0.3 CPU-s a run). Peer caches
   (EvalPlus's expected outputs, BigCodeBench's ground-truth times) live in
   ``<peers-dir>/cache`` (``XDG_CACHE_HOME``); prefjudge's reference-output cache in
   ``<peers-dir>/prefjudge-reference-cache`` (``PREFJUDGE_REFERENCE_CACHE``).
4. Runs: per benchmark, the peer (``evalplus.evaluate --parallel W``, ``bigcodebench.evaluate
   --execution local --parallel W``) and ``prefjudge score --workers W`` (W = ``--workers``,
   default 2) alternately, one at a time, first one untimed warm-up run of each (both build
   their caches on it), then ``--reps`` timed repetitions (default 3; ``--waiting-reps``,
   default 1, for ``bigcodebench-waiting``, whose runs measure the clock: 461 alone takes
   about 150 s in either tool), the order of the two tools swapped every repetition. Wall
   time around each tool's process; CPU time of its whole process tree from
   ``resource.getrusage(RUSAGE_CHILDREN)`` deltas around a ``subprocess`` that waits for it
   (see ``peers/runs.py``). Before the runs, prefjudge's modules are compiled to bytecode
   (``compileall``), as the peers' are by their ``pip install``.
5. Verdicts: EvalPlus's ``*_eval_results.json`` (``base_status``/``plus_status``),
   BigCodeBench's ``*_eval_results.json`` (``status``), prefjudge's scored JSONL
   (``func.status``, and ``func.sets.base/plus.status`` when present), compared per sample
   (majority over a tool's runs); every disagreement is listed and classified
   (``peer-wallclock``, ``prefjudge-no-network``, ``prefjudge-timeout``, ``prefjudge-error``,
   ``prefjudge-flaky``, ``prefjudge-bug``; see ``peers/compare.py``).
6. ``--check-export``: when ``prefjudge score --help`` lists ``--export``, prefjudge scores
   the sample once more, against the release file itself (EvalPlus's ``hash`` is the
   release's), with ``--export evalplus=DIR`` / ``bigcodebench=DIR``, and the files are read
   back by the peer's own code in its venv, pointed at the release file
   (``peers/export_check.py``); otherwise it says so and skips.

7. HumanEval+/MBPP+: the samples' own CPU (``peers/code_cpu.py``: each sample's function
   called on every input, EvalPlus's time limits, no harness at all), which any faithful
   harness spends; each tool's CPU beyond it is its overhead, and the table gives the ratio
   of the two overheads beside the ratio of the totals. ``floor /peer`` is the samples' own
   CPU over the peer's total: the ratio of a harness that cost nothing, below which no
   faithful harness can go (a sample whose solutions compute a lot raises it).

Output: progress on stderr; on stdout a summary table (per benchmark: samples, agreement,
disagreements by class, median wall and CPU seconds of each tool and prefjudge/peer ratios
(of the medians, and ``paired``: the median of each repetition's own CPU ratio),
the samples' own CPU, the floor it sets and the overhead ratio)
and a table of every disagreement (sample, origin, class, both tools' verdict per run, both
details); everything (settings, versions, samples, every run, verdicts, timings, library
alignment, waiting-task timings, export check) in ``--out`` as JSON. On EvalPlus's wall
time: ``evalplus.evaluate`` starts a non-daemon watchdog thread (``stucking_checker``) that
sleeps 20 s at a time, so its process never ends sooner than about 20 s after testing starts,
whatever the sample size; its users wait for that too, and it is counted.

Measured on a quiet 2-core machine with the venvs and waiting-task timings already there
(``--check-export``, default sizes): 18.6 min in all; 243 samples, all agreeing.

    python scripts/bench_peers.py                                 # all four, default sizes
    python scripts/bench_peers.py --samples 40 --reps 1           # a quick run
    python scripts/bench_peers.py --bench humaneval --bench mbpp --check-export

A benchmark, not a test: the test suite never runs it. The first run installs the peers
(bigcodebench 0.2.5 pulls in its generation backends: several GB) and measures the waiting
candidates (a few minutes); later runs reuse both.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import compare, export_check, samples, waiting
from peers.runs import READERS, Run, Verdict, log_tail, result_file, timed
from peers.venvs import PeerEnv, PeerSetupError, align_libraries, ensure_peer

from prefjudge.scoring.tasks import imported_modules

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
BENCHES = {
    # name: (peer, release file under --data, EvalPlus dataset / None)
    "humaneval": ("evalplus", "benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "humaneval"),
    "mbpp": ("evalplus", "benchmarks/evalplus/MbppPlus-v0.2.0.jsonl.gz", "mbpp"),
    "bigcodebench": ("bigcodebench", "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz",
                     None),
    "bigcodebench-waiting": ("bigcodebench",
                             "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz", None),
}
OVERRIDE = {"humaneval": "HUMANEVAL_OVERRIDE_PATH", "mbpp": "MBPP_OVERRIDE_PATH",
            "bigcodebench": "BIGCODEBENCH_OVERRIDE_PATH"}
FORCED_WAITING = "BigCodeBench/461"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", choices=sorted(BENCHES), action="append",
                        help="benchmarks to run (repeatable) [default: all four]")
    parser.add_argument("--samples", type=int, default=60, help="samples per benchmark")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per tool")
    parser.add_argument("--workers", type=int, default=2, help="parallel runs of each tool")
    parser.add_argument("--broken-share", type=float, default=0.3,
                        help="share of broken copies in each sample")
    parser.add_argument("--waiting", type=int, default=3,
                        help="waiting BigCodeBench tasks in bigcodebench-waiting "
                             f"({FORCED_WAITING} and others drawn)")
    parser.add_argument("--waiting-max-wall", type=float, default=30.0,
                        help="draw the others among waiting tasks whose canonical solution "
                             "took at most this many wall seconds")
    parser.add_argument("--waiting-reps", type=int, default=1,
                        help="timed repetitions for bigcodebench-waiting (its runs measure "
                             "the clock; BigCodeBench/461 alone takes about 150 s a run)")
    parser.add_argument("--include", action="append",
                        help="EvalPerf solution MODEL:TASK:INDEX to include (repeatable; "
                             f"'none' for none) [default: {samples.DEFAULT_INCLUDE}]")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the shared data folder (benchmarks/, generations/evalperf/)")
    parser.add_argument("--peers-dir", type=Path, default=ROOT / ".peers",
                        help="the peers' venvs, caches and run folders")
    parser.add_argument("--out", type=Path,
                        help="JSON report [default: PEERS_DIR/bench_peers.json]")
    parser.add_argument("--no-install", action="store_true",
                        help="fail instead of creating a missing peer venv or installing "
                             "libraries")
    parser.add_argument("--check-export", action="store_true",
                        help="also check prefjudge score --export with the peers' own readers")
    args = parser.parse_args()
    args.bench = args.bench or list(BENCHES)
    if args.include is None:
        args.include = [samples.DEFAULT_INCLUDE]
    args.include = [i for i in args.include if i.lower() != "none"]
    if args.samples < 1 or args.reps < 1 or args.workers < 1:
        parser.error("--samples, --reps and --workers must be at least 1")
    if not 0 <= args.broken_share <= 1:
        parser.error("--broken-share must be between 0 and 1")
    args.out = args.out or args.peers_dir / "bench_peers.json"
    return args


def prefjudge_command() -> list[str]:
    """How to start this venv's prefjudge."""
    script = Path(sys.executable).with_name("prefjudge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "prefjudge"]


def prefjudge_score(samples_file: Path, release: Path, workers: int, output: Path) -> list[str]:
    """The ``prefjudge score`` command the benchmark runs (``--export`` goes after it)."""
    return [*prefjudge_command(), "score", str(samples_file), "--tasks", str(release),
            "--workers", str(workers), "--model", "bench", "-o", str(output)]


def compile_prefjudge(err: Console) -> None:
    """Compile prefjudge's modules to bytecode, as ``pip install`` does for the peers.

    A peer's modules come with their bytecode from its install; prefjudge's, in a
    checkout (an editable install), get theirs when first imported, unless
    ``PYTHONDONTWRITEBYTECODE`` is set, and then every run compiles them again (about
    0.2 CPU-s a run here). Both tools then start as installed packages do.
    """
    import prefjudge

    package = Path(prefjudge.__file__).resolve().parent
    proc = subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        err.log(f"compileall {package} failed; prefjudge may compile its modules in every "
                f"run: {proc.stdout.strip()[-300:]}")


def prefjudge_env(peers_dir: Path) -> dict[str, str]:
    """prefjudge's environment: this one, its reference-output cache under the peers folder."""
    return dict(os.environ, PREFJUDGE_REFERENCE_CACHE=str(peers_dir / "prefjudge-reference-cache"))


class Bench:
    """One benchmark's sample, files and runs."""

    def __init__(self, name: str, work: Path, release: Path, sample: list[samples.Sample],
                 lines: dict[str, str]) -> None:
        self.name = name
        self.peer, _, self.dataset = BENCHES[name]
        self.release = release
        self.sample = sample
        self.folder = work / name
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.samples_file = samples.write_samples(sample, self.folder / "samples.jsonl")
        self.subset = samples.write_subset(lines, {s.task_id for s in sample},
                                           self.folder / "tasks-subset.jsonl")
        self.keys = samples.sample_keys(sample)
        self.origins = {key: {"origin": s.origin, "kind": s.kind}
                        for key, s in zip(self.keys, sample, strict=True)}
        self.runs: list[Run] = []


def peer_env(peer: PeerEnv, bench: Bench, peers_dir: Path) -> dict[str, str]:
    variable = OVERRIDE[bench.dataset or "bigcodebench"]
    return peer.environ({variable: str(bench.subset), "XDG_CACHE_HOME": str(peers_dir / "cache")})


def run_tool(tool: str, bench: Bench, rep: int, peers: dict[str, PeerEnv], peers_dir: Path,
             workers: int) -> Run:
    folder = bench.folder / tool / f"rep{rep}"
    folder.mkdir(parents=True)
    samples_file = folder / f"{bench.name}.jsonl"
    shutil.copyfile(bench.samples_file, samples_file)
    log = folder / "log.txt"
    if tool == "prefjudge":
        output = folder / "scores.jsonl"
        cmd = prefjudge_score(samples_file, bench.subset, workers, output)
        env = prefjudge_env(peers_dir)
    else:
        output = result_file(samples_file)
        peer = peers[tool]
        if tool == "evalplus":
            cmd = [str(peer.python), "-m", "evalplus.evaluate", "--dataset", bench.dataset,
                   "--samples", str(samples_file), "--parallel", str(workers)]
        else:
            cmd = [str(peer.python), "-m", "bigcodebench.evaluate", "--split", "complete",
                   "--subset", "full", "--samples", str(samples_file), "--execution", "local",
                   "--parallel", str(workers)]
        env = peer_env(peer, bench, peers_dir)
    rc, wall, cpu = timed(cmd, env, folder, log)
    verdicts: dict = {}
    problem = ""
    try:
        verdicts = READERS[tool](output)
    except (OSError, ValueError, KeyError) as exc:
        problem = f"could not read {output}: {exc}"
    if rc != 0:
        problem = f"exit {rc}; {problem} log: {log_tail(log, 4)}".strip()
    return Run(tool, bench.name, rep, wall, cpu, rc, str(log), verdicts, problem)


# --- building the sample -----------------------------------------------------------------


def needed_modules(task: dict) -> set[str]:
    """Top-level modules a BigCodeBench task needs: its ``libs`` and what its code imports."""
    try:
        libs = ast.literal_eval(task.get("libs") or "[]")
    except (ValueError, SyntaxError):
        libs = []
    names = {str(lib).split(".", 1)[0] for lib in libs}
    return names | imported_modules(task["canonical_solution"]) | imported_modules(task["test"])


def build_bigcodebench(args: argparse.Namespace, peer: PeerEnv, tasks: dict[str, dict],
                       err: Console, report: dict) -> tuple[list[samples.Sample],
                                                             list[samples.Sample]]:
    needs = {tid: needed_modules(task) for tid, task in tasks.items()}
    modules = sorted(set().union(*needs.values()))
    both, alignment = align_libraries(peer, modules, err, install=not args.no_install)
    report["library_alignment"] = alignment
    eligible = [tid for tid, need in needs.items() if need <= both]
    err.log(f"bigcodebench: {len(eligible)} of {len(tasks)} tasks import in both venvs")
    env = peer.environ({"XDG_CACHE_HOME": str(args.peers_dir / "cache")})
    cache = args.peers_dir / "bigcodebench_timing.json"
    todo = waiting.to_measure(tasks, eligible, cache)
    if todo:
        err.log(f"bigcodebench: measuring {len(todo)} waiting candidates once (cached in "
                f"{cache})")
    with Progress(TextColumn("waiting candidates"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as progress:
        bar = progress.add_task("measure", total=len(todo))
        timings = waiting.classify(tasks, eligible, peer.python, env, cache,
                                   lambda tid, t: progress.advance(bar))
    waits = sorted((t for t, timing in timings.items() if timing["waits"]),
                   key=samples.task_number)
    report["waiting_timings"] = timings
    err.log(f"bigcodebench: {len(waits)} eligible tasks mostly wait: {', '.join(waits)}")
    computing = [t for t in eligible if t not in set(waits)]
    base = samples.bigcodebench_sample(tasks, computing, args.samples, args.seed,
                                       args.broken_share)
    rng = random.Random(f"{args.seed}:waiting")
    chosen = [FORCED_WAITING] if FORCED_WAITING in waits and args.waiting else []
    rest = [t for t in waits if t not in chosen and timings[t]["wall"] <= args.waiting_max_wall]
    chosen += rng.sample(rest, min(len(rest), max(0, args.waiting - len(chosen))))
    return base, [samples.canonical(tasks[t]) for t in sorted(chosen, key=samples.task_number)]


def build(args: argparse.Namespace, peers: dict[str, PeerEnv], err: Console,
          report: dict) -> list[Bench]:
    work = args.peers_dir / "work"
    benches: list[Bench] = []
    releases = {name: args.data / BENCHES[name][1] for name in args.bench}
    for path in set(releases.values()):
        if not path.exists():
            raise FileNotFoundError(f"{path}: release file not found (--data {args.data})")
    evalplus_names = [n for n in args.bench if BENCHES[n][0] == "evalplus"]
    if evalplus_names:
        pool = samples.evalperf_pool(args.data / "generations" / "evalperf")
        for name in evalplus_names:
            tasks, lines = samples.read_release(releases[name])
            sample = samples.evalplus_sample(pool, tasks, BENCHES[name][2], args.samples,
                                             args.seed, args.broken_share, args.include)
            benches.append(Bench(name, work, releases[name], sample, lines))
    bcb_names = [n for n in args.bench if BENCHES[n][0] == "bigcodebench"]
    if bcb_names:
        tasks, lines = samples.read_release(releases[bcb_names[0]])
        base, waiting_only = build_bigcodebench(args, peers["bigcodebench"], tasks, err, report)
        for name in bcb_names:
            sample = base if name == "bigcodebench" else waiting_only
            if not sample:
                err.log(f"{name}: no sample (--waiting 0, or no waiting task eligible); skipped")
                continue
            benches.append(Bench(name, work, releases[name], sample, lines))
    for bench in benches:
        kinds: dict[str, int] = {}
        for s in bench.sample:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        err.log(f"{bench.name}: {len(bench.sample)} samples over "
                f"{len({s.task_id for s in bench.sample})} tasks ({kinds})")
    return benches


# --- main --------------------------------------------------------------------------------


def run_all(args: argparse.Namespace, benches: list[Bench], peers: dict[str, PeerEnv],
            err: Console) -> None:
    reps = {b.name: args.waiting_reps if b.name == "bigcodebench-waiting" else args.reps
            for b in benches}
    total = sum(r + 1 for r in reps.values()) * 2
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=err) as progress:
        bar = progress.add_task("runs", total=total)
        for rep in range(max(reps.values()) + 1):
            for bench in benches:
                if rep > reps[bench.name]:
                    continue
                tools = [bench.peer, "prefjudge"]
                if rep % 2:
                    tools.reverse()
                for tool in tools:
                    label = "warm-up" if rep == 0 else f"rep {rep}/{reps[bench.name]}"
                    progress.update(bar, description=f"{label}: {bench.name} {tool}")
                    run = run_tool(tool, bench, rep, peers, args.peers_dir, args.workers)
                    bench.runs.append(run)
                    counts = run.summary()["statuses"]
                    progress.console.log(
                        f"{label} {bench.name:<20} {tool:<12} wall {run.wall:7.1f} s  "
                        f"CPU {run.cpu:7.1f} s  {counts}"
                        + (f"  [red]{run.problem}[/red]" if run.problem else ""))
                    progress.advance(bar)


def check_exports(args: argparse.Namespace, benches: list[Bench], peers: dict[str, PeerEnv],
                  err: Console) -> dict:
    command = prefjudge_command()
    if not export_check.export_supported(command):
        err.log("--check-export: prefjudge score --help lists no --export yet; skipped")
        return {"skipped": "prefjudge score --help lists no --export"}
    results = {}
    for bench in benches:
        # Scored against the release file itself (the timed runs read the subset), so the
        # export carries the release's hash, as a user's would.
        folder = bench.folder / "export"
        run_dir = folder / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        samples_file = run_dir / f"{bench.name}.jsonl"
        shutil.copyfile(bench.samples_file, samples_file)
        export_dir = folder / "exported"
        output = run_dir / "scores.jsonl"
        cmd = [*prefjudge_score(samples_file, bench.release, args.workers, output),
               "--export", f"{bench.peer}={export_dir}"]
        rc, _, _ = timed(cmd, prefjudge_env(args.peers_dir), run_dir, folder / "log.txt")
        if rc != 0 or not export_dir.exists():
            results[bench.name] = {"ok": False, "problems": [
                f"prefjudge score --export {bench.peer} failed (exit {rc}): "
                f"{log_tail(folder / 'log.txt', 6)}"]}
        else:
            ours = READERS["prefjudge"](output)
            env = peers[bench.peer].environ({
                OVERRIDE[bench.dataset or "bigcodebench"]: str(bench.release),
                "XDG_CACHE_HOME": str(args.peers_dir / "cache")})
            results[bench.name] = export_check.check(
                peers[bench.peer], bench.peer, bench.dataset or "", export_dir, ours, env,
                folder / "reader.log")
        status = "[green]pass[/green]" if results[bench.name]["ok"] else "[red]FAIL[/red]"
        err.log(f"--check-export {bench.name}: {status} "
                + "; ".join(results[bench.name]["problems"][:5]))
    return results


def measure_code_cpu(bench: Bench, err: Console) -> dict:
    """The samples' own CPU on HumanEval+/MBPP+ (``peers.code_cpu``, in a process of its own)."""
    err.log(f"{bench.name}: measuring the samples' own CPU (plain calls, no harness)")
    done = subprocess.run(
        [sys.executable, "-m", "peers.code_cpu", str(bench.subset), str(bench.samples_file)],
        cwd=Path(__file__).resolve().parent, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    args = parse_args()
    err = Console(stderr=True)
    out = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 220)
    started = time.time()
    report: dict = {"settings": {k: str(v) if isinstance(v, Path) else v
                                 for k, v in vars(args).items()},
                    "python": sys.version.split()[0], "prefjudge": prefjudge_command()}
    try:
        needed = {BENCHES[name][0] for name in args.bench}
        peers = {name: ensure_peer(args.peers_dir, name, err, install=not args.no_install)
                 for name in sorted(needed)}
        report["peers"] = {name: peer.version for name, peer in peers.items()}
        benches = build(args, peers, err, report)
    except (PeerSetupError, FileNotFoundError, ValueError, subprocess.SubprocessError) as exc:
        err.print(f"[red]bench_peers: {exc}[/red]")
        return 2
    report["samples"] = {b.name: samples.describe(b.sample) for b in benches}
    compile_prefjudge(err)
    run_all(args, benches, peers, err)
    results = {}
    for bench in benches:
        code = measure_code_cpu(bench, err) if bench.peer == "evalplus" else None
        results[bench.name] = {"peer": bench.peer, **compare.compare(
            bench.keys, bench.origins, bench.peer, bench.runs,
            frozenset(code["tight"]) if code else frozenset())}
        if code:
            compare.add_overhead(results[bench.name], code["samples_cpu_s"], bench.runs,
                                 code["tight"])
            results[bench.name]["tight"] = code["tight"]
    if "bigcodebench" in results and "bigcodebench-waiting" in results:
        results["bigcodebench+waiting"] = compare.combine(results["bigcodebench"],
                                                          results["bigcodebench-waiting"])
    report["runs"] = [run.summary() for b in benches for run in b.runs]
    report["verdicts"] = {
        b.name: {f"{k[0]}#{k[1]}": {f"{r.tool}/rep{r.rep}": _verdict(r.verdicts.get(k))
                                    for r in b.runs} for k in b.keys} for b in benches}
    report["results"] = results
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    if args.check_export:
        try:
            report["export_check"] = check_exports(args, benches, peers, err)
        except Exception as exc:  # the results above still print and stay in the report
            report["export_check"] = {"skipped": f"the check itself failed: "
                                                 f"{type(exc).__name__}: {exc}"}
            err.print_exception()
    report["elapsed_s"] = round(time.time() - started, 1)
    args.out.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")

    out.print(compare.summary_table(results))
    for name, result in results.items():
        if "+" in name:  # a sum of rows listed on their own
            continue
        if result["disagreements"]:
            out.print(compare.disagreement_table(name, result))
        flipped = {tool: names for tool, names in result["flips"].items() if names}
        if flipped:
            out.print(f"{name}: verdicts that flip between runs: {flipped}")
    problems = [f"{r.tool} {r.bench} rep{r.rep}: {r.problem}" for b in benches for r in b.runs
                if r.problem]
    for problem in problems:
        out.print(f"run problem: {problem}")
    if "export_check" in report:
        out.print(f"export check: {json.dumps(_export_summary(report['export_check']))}")
    err.log(f"done in {report['elapsed_s']:.0f} s; report: {args.out}")
    return 0


def _verdict(verdict: Verdict | None) -> dict | None:
    if verdict is None:
        return None
    return {"status": verdict.status, "detail": verdict.detail, **(
        {"sets": verdict.sets} if verdict.sets else {})}


def _export_summary(checks: dict) -> dict:
    if "skipped" in checks:
        return checks
    return {name: "pass" if c["ok"] else f"FAIL ({len(c['problems'])} problems: "
            f"{'; '.join(c['problems'][:3])})" for name, c in checks.items()}


if __name__ == "__main__":
    sys.exit(main())
