"""Benchmark the judge's HTTP client against a bare ``openai.AsyncOpenAI`` loop.

Both clients make the same chat completions against the same fast fake OpenAI-compatible
server on loopback (``tests/helpers/pj_fast_openai.py``: answers at once, in a process of
its own, whose CPU is not counted), at the same concurrency:

``prefjudge``
    ``prefjudge judge PAIRS --method monolithic --max-concurrency C`` as a user runs it (a
    subprocess: start-up, reading the pairs, rendering the prompts, the response cache in
    a fresh file, the verdict journal, progress bars), two calls per pair.
``sdk``
    A bare loop (a subprocess too): ``AsyncOpenAI(base_url=..., api_key=...)`` with the
    SDK's defaults and an ``asyncio.Semaphore(C)``, sending the very request bodies
    prefjudge sent (recorded by the server in a warm-up run: the same messages, sampling
    and ``response_format``) and parsing each reply's JSON.

Each repetition runs both in turn (alternating which goes first); figures are medians over
``--repeat`` repetitions. Wall time runs from starting the process to its exit; CPU is the
process's user + system time (its children included), read with ``os.wait4``. Retries are
what each client reports: prefjudge's usage table, and the SDK's own ``Retrying request``
log lines (its default ``max_retries=2`` retries silently otherwise). Connections are the
TCP connections the server was sent completions on.

Both clients run as an installed package runs: from compiled bytecode. Where the
environment says not to write it (``PYTHONDONTWRITEBYTECODE``, as in some sandboxes), an
editable install's ``src/`` would be compiled anew by every run, some 0.2 s of CPU charged
to prefjudge's start-up and to no installed package's; so both clients' processes write
and read their bytecode under one folder of the run's own (``PYTHONPYCACHEPREFIX``),
filled by a warm-up run of each before anything is measured. ``--no-bytecode-cache``
leaves the environment as it is.

Each backlog given runs on a server of its own: 2048 (uvicorn's default: what
``vllm serve`` listens with) and 5 (Python's ``http.server`` default, whose accept queue a
burst of new connections overflows).

    python scripts/bench_client.py                         # 600 pairs, C = 32 and 256
    python scripts/bench_client.py --pairs 200 --repeat 1 --out bench_client.json
    python scripts/bench_client.py --pairs 20 --repeat 3     # start-up: see "start-up CPU s"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from pj_fast_openai import PYTHON_BACKLOG, UVICORN_BACKLOG, FastServer

CLIENTS = ("prefjudge", "sdk")
WORDS = (
    "def return for while if else import class self value result items index count total "
    "list dict key sort filter map range len append raise None True False try except with"
).split()


def make_pairs(path: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` synthetic pairs in prefjudge's pair format (code-sized responses).

    Args:
        path: The JSONL file.
        n: How many pairs.
        seed: The random seed (the same pairs every run).
    """
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    def code(lines: int) -> str:
        indents = ("    " * rng.randint(0, 3) for _ in range(lines))
        return "\n".join(indent + words(rng.randint(3, 9)) for indent in indents)

    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "pair_id": f"p{i:05d}",
                "task_id": f"t{i:05d}",
                "instruction": "Write a Python function. " + words(60),
                "response_a": code(40),
                "response_b": code(40),
            }
            out.write(json.dumps(record) + "\n")


CLIENT_ENV: dict[str, str | None] = {}
"""Changes to the environment both clients run in (None: unset), set by :func:`main`."""


def client_env(**extra: str) -> dict[str, str]:
    """The environment a client's process runs in: this one, :data:`CLIENT_ENV` and ``extra``."""
    env = {**os.environ, **extra}
    for name, value in CLIENT_ENV.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _timed(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a process to its end: wall seconds, CPU seconds (user + sys, children too), output.

    The CPU time is the increase of ``RUSAGE_CHILDREN`` over the run: the child (and what
    it waited for) once reaped. The fake server, also a child, is reaped only at its end.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    out, err = process.communicate()  # both pipes read while waiting: none fills up
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "stdout": out, "stderr": err, "rc": process.returncode}


def chunk_size(concurrency: int) -> int:
    """``--chunk-size`` for a concurrency: the default 32, or enough pairs to fill it.

    Monolithic asks two calls per pair, and a chunk is one batch: with the default 32
    pairs, at most 64 calls are in flight whatever ``--max-concurrency`` says.
    """
    return max(32, -(-concurrency // 2))


def _prefjudge_argv(pairs: Path, out: Path, cache: Path, url: str, concurrency: int) -> list[str]:
    return [
        sys.executable, "-m", "prefjudge", "judge", str(pairs), "-o", str(out),
        "--method", "monolithic", "--backend", "openai", "--base-url", url, "--model", "fake",
        "--max-concurrency", str(concurrency), "--chunk-size", str(chunk_size(concurrency)),
        "--cache", str(cache),
    ]  # fmt: skip


def run_prefjudge(
    pairs: Path, work: Path, server: FastServer, concurrency: int, tag: str
) -> dict[str, Any]:
    """One ``prefjudge judge --method monolithic`` run into a fresh output and cache."""
    out, cache = work / f"verdicts-{tag}.jsonl", work / f"cache-{tag}.sqlite"
    env = client_env(COLUMNS="60", NO_COLOR="1")
    env.pop("OPENAI_API_KEY", None)
    server.stats(reset=True)
    result = _timed(_prefjudge_argv(pairs, out, cache, server.url, concurrency), env)
    if result["rc"] != 0:
        raise SystemExit(f"prefjudge judge failed (exit {result['rc']}):\n{result['stderr']}")
    found = re.search(r"retries\s*│\s*([\d,]+)", result["stderr"])
    if found is None:
        raise SystemExit(f"no retries count in prefjudge's usage table:\n{result['stderr']}")
    errors = re.search(r"errors\s*│\s*([\d,]+)", result["stderr"])
    stats = server.stats()
    for path in (out, cache, *work.glob(f"cache-{tag}.sqlite-*"), *work.glob(f"verdicts-{tag}.*")):
        path.unlink(missing_ok=True)
    return {
        "wall": result["wall"],
        "cpu": result["cpu"],
        "retries": int(found.group(1).replace(",", "")),
        "errors": int(errors.group(1).replace(",", "")) if errors else None,
        "connections": stats["connections"],
        "completions": stats["completions"],
        "body_bytes": stats["body_bytes"],
    }


def run_sdk(bodies: Path, server: FastServer, concurrency: int, limit: int = 0) -> dict[str, Any]:
    """One bare-SDK run over the recorded bodies (this script with ``--sdk-client``).

    ``limit``: only the first so many bodies (0: all).
    """
    server.stats(reset=True)
    argv = [sys.executable, __file__, "--sdk-client", str(bodies), "--url", server.url,
            "--concurrency", str(concurrency), "--limit", str(limit)]  # fmt: skip
    result = _timed(argv, client_env())
    if result["rc"] != 0:
        raise SystemExit(f"the SDK loop failed (exit {result['rc']}):\n{result['stderr']}")
    report = json.loads(result["stdout"])
    stats = server.stats()
    return {
        "wall": result["wall"],
        "cpu": result["cpu"],
        "retries": report["retries"],
        "errors": report["errors"],
        "connections": stats["connections"],
        "completions": stats["completions"],
        "body_bytes": stats["body_bytes"],
    }


def sdk_client(bodies_path: str, url: str, concurrency: int, limit: int) -> None:
    """The bare SDK loop: the recorded bodies, ``concurrency`` at a time; prints a JSON report."""
    import openai

    retries = 0

    class CountRetries(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            nonlocal retries
            if record.getMessage().startswith("Retrying request"):
                retries += 1

    logger = logging.getLogger("openai")
    logger.setLevel(logging.INFO)
    logger.addHandler(CountRetries())
    logger.propagate = False
    with open(bodies_path, encoding="utf-8") as lines:
        bodies = [json.loads(line) for line in lines]
    bodies = bodies[:limit] if limit else bodies

    async def main() -> int:
        client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY")
        limit = asyncio.Semaphore(concurrency)
        errors = 0

        async def one(body: dict[str, Any]) -> None:
            nonlocal errors
            async with limit:
                try:
                    response = await client.chat.completions.create(**body)
                    json.loads(response.choices[0].message.content or "")
                except (openai.OpenAIError, ValueError):
                    errors += 1

        await asyncio.gather(*(one(body) for body in bodies))
        await client.close()
        return errors

    errors = asyncio.run(main())
    print(json.dumps({"calls": len(bodies), "retries": retries, "errors": errors}))


def record_bodies(pairs: Path, work: Path, backlog: int) -> Path:
    """Run prefjudge once against a recording server: the bodies the SDK loop will send.

    Then the SDK loop once (two calls), so that both clients' bytecode is written before
    any run is measured (this run is prefjudge's warm-up).
    """
    bodies = work / "bodies.jsonl"
    with FastServer(backlog=backlog, record=bodies) as server:
        run_prefjudge(pairs, work, server, 32, "record")
    with FastServer(backlog=backlog) as server:
        run_sdk(bodies, server, 32, limit=2)
    return bodies


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(run[key]) for run in runs)


Results = dict[tuple[int, int, str], list[dict[str, Any]]]
"""Runs by (backlog, concurrency, client); concurrency 0 holds the start-up runs (1 pair)."""


def summarize(results: Results, calls: int) -> list[dict[str, Any]]:
    """Medians per backlog, concurrency and client, with prefjudge's ratios to the SDK.

    Per call figures leave the start-up out: the median of a run of one pair (two calls:
    imports, reading the input, opening the cache, the first connections) is taken off
    the run's and the rest divided by the other calls.
    """
    rows = []
    for (backlog, concurrency, client), runs in results.items():
        if concurrency == 0:
            continue
        start = results[(backlog, 0, client)]
        wall, cpu = _median(runs, "wall"), _median(runs, "cpu")
        start_wall, start_cpu = _median(start, "wall"), _median(start, "cpu")
        row = {
            "backlog": backlog,
            "concurrency": concurrency,
            "client": client,
            "chunk_size": chunk_size(concurrency) if client == "prefjudge" else None,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "startup_wall_s": round(start_wall, 3),
            "startup_cpu_s": round(start_cpu, 3),
            "wall_ms_per_call": round(1000 * (wall - start_wall) / (calls - 2), 3),
            "cpu_ms_per_call": round(1000 * (cpu - start_cpu) / (calls - 2), 3),
            "retries": max(int(run["retries"]) for run in runs),
            "errors": max(int(run["errors"] or 0) for run in runs),
            "connections": int(_median(runs, "connections")),
            "runs": runs,
            "startup_runs": start,
        }
        rows.append(row)
    by_key = {(r["backlog"], r["concurrency"], r["client"]): r for r in rows}
    for row in rows:
        sdk = by_key[(row["backlog"], row["concurrency"], "sdk")]
        for key in ("wall_s", "cpu_s", "wall_ms_per_call", "cpu_ms_per_call"):
            row[f"{key}_ratio"] = round(row[key] / sdk[key], 3)
    return rows


def show(rows: list[dict[str, Any]], calls: int, repeat: int) -> None:
    """Print the table of medians to stdout."""
    table = Table(
        title=f"{calls:,} calls: prefjudge judge --method monolithic vs a bare AsyncOpenAI loop "
        f"(median of {repeat}; per call: start-up taken off)"
    )
    columns = ("backlog", "C", "client", "wall s", "CPU s", "start-up CPU s", "wall ms/call",
               "CPU ms/call", "retries", "errors", "conns", "wall/sdk", "CPU/sdk",
               "wall/call /sdk", "CPU/call /sdk")  # fmt: skip
    for name in columns:
        table.add_column(name, justify="left" if name == "client" else "right")
    for row in rows:
        table.add_row(
            str(row["backlog"]), str(row["concurrency"]), row["client"],
            f"{row['wall_s']:.2f}", f"{row['cpu_s']:.2f}", f"{row['startup_cpu_s']:.2f}",
            f"{row['wall_ms_per_call']:.2f}", f"{row['cpu_ms_per_call']:.2f}",
            str(row["retries"]), str(row["errors"]), f"{row['connections']:,}",
            f"{row['wall_s_ratio']:.2f}x", f"{row['cpu_s_ratio']:.2f}x",
            f"{row['wall_ms_per_call_ratio']:.2f}x", f"{row['cpu_ms_per_call_ratio']:.2f}x",
        )  # fmt: skip
    Console(width=170).print(table)


def _one_run(
    client: str,
    files: dict[str, Path],
    work: Path,
    server: FastServer,
    concurrency: int,
    tag: str,
    calls: int,
) -> dict[str, Any]:
    """One run of one client; ``concurrency`` 0: the start-up run (one pair, at 32)."""  # fmt: skip
    start = concurrency == 0
    level = 32 if start else concurrency
    if client == "prefjudge":
        pairs = files["one"] if start else files["pairs"]
        run = run_prefjudge(pairs, work, server, level, tag)
    else:
        run = run_sdk(files["bodies"], server, level, limit=2 if start else 0)
    wanted = 2 if start else calls
    if run["completions"] != wanted:
        raise SystemExit(f"{client}: the server answered {run['completions']}, not {wanted}")
    what = "start-up (1 pair)" if start else f"C={concurrency}"
    print(
        f"backlog {server.backlog}, {what}, {client}: {run['wall']:.2f} s wall, "
        f"{run['cpu']:.2f} s CPU, {run['retries']} retries, {run['connections']} connections",
        file=sys.stderr,
    )
    return run


def main() -> int:
    """Run the benchmark, print the table, write ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=600, help="pairs (two calls each)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--backlog", type=int, nargs="+", default=[UVICORN_BACKLOG, PYTHON_BACKLOG])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true",
        help="run the clients in this environment as it is (PYTHONDONTWRITEBYTECODE kept)",
    )
    parser.add_argument("--sdk-client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdk_client:
        sdk_client(args.sdk_client, args.url, args.concurrency[0], args.limit)
        return 0
    calls = 2 * args.pairs
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="bench_client.") as tmp:
        work = Path(tmp)
        if not args.no_bytecode_cache:
            CLIENT_ENV["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
            CLIENT_ENV["PYTHONDONTWRITEBYTECODE"] = None
        files = {"pairs": work / "pairs.jsonl", "one": work / "one.jsonl"}
        make_pairs(files["pairs"], args.pairs)
        make_pairs(files["one"], 1)
        files["bodies"] = record_bodies(files["pairs"], work, UVICORN_BACKLOG)
        for backlog in args.backlog:
            with FastServer(backlog=backlog) as server:
                for rep in range(args.repeat):
                    for concurrency in (0, *args.concurrency):
                        order = CLIENTS if (rep + concurrency) % 2 == 0 else CLIENTS[::-1]
                        for client in order:
                            tag = f"{backlog}-{concurrency}-{rep}"
                            run = _one_run(client, files, work, server, concurrency, tag, calls)
                            results.setdefault((backlog, concurrency, client), []).append(run)
    rows = summarize(results, calls)
    show(rows, calls, args.repeat)
    if args.out:
        report = {"pairs": args.pairs, "calls": calls, "repeat": args.repeat,
                  "bytecode_cache": not args.no_bytecode_cache, "rows": rows}
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
