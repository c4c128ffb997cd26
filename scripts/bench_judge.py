"""Benchmark the judge's stage-batched execution against judging one pair at a time.

``prefjudge judge`` runs every stage as one backend batch over a chunk of pairs
(``--chunk-size``, default 32), so vLLM schedules many sequences together and an HTTP
backend keeps ``--max-concurrency`` requests in flight. The baseline is the obvious loop:
one pair at a time, its stages one after another (``chunk_size=1``) — what a per-pair
script does.

Both runs use the same real model (the embedded SmolLM2-135M on CPU by default, or any
backend given by flags), the same pairs (CodePrefBench's developer-labelled pairs) and
no response cache, greedy decoding; the script prints wall-clock seconds per pair, the
ratio, and how many verdicts differ between the two runs (batched matrix products on CPU
are not bit-identical to unbatched ones, so a tiny model's near-tied choices can differ).
The engine is started once before timing.

Usage:
    python scripts/bench_judge.py [--pairs 16] [--method criteralign] [--repeats 1]
        [--data ../shared/data/preferences/codeprefbench/human-preference-alignment.jsonl.gz]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from prefjudge.backends import Sampling, chat, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.judge.pairs import load_pairs

DEFAULT_DATA = "../shared/data/preferences/codeprefbench/human-preference-alignment.jsonl.gz"


def main() -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--method", default="criteralign")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--backend", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    args = parser.parse_args()
    if not Path(args.data).exists():
        raise SystemExit(f"{args.data} not found (needs ../shared/data beside the project)")
    pairs, _ = load_pairs(args.data)
    pairs = pairs[: args.pairs]
    config = BackendConfig(kind=args.backend, model=args.model, base_url=args.base_url,
                           no_cache=True)
    backend = create_backend(config)
    settings = JudgeSettings(method=args.method, min_criteria=4, max_criteria=8,
                             sampling=Sampling(max_tokens=1024, seed=0))
    backend.generate([chat("warm-up", "Say ok.", sampling=Sampling(max_tokens=4))])
    times: dict[str, list[float]] = {"batched": [], "one pair at a time": []}
    outputs: dict[str, list[str]] = {}
    for _ in range(args.repeats):
        for name, chunk in (("batched", 32), ("one pair at a time", 1)):
            started = time.perf_counter()
            verdicts = list(judge_pairs(pairs, backend, settings, chunk_size=chunk))
            times[name].append(time.perf_counter() - started)
            outputs[name] = [
                v.model_dump_json(exclude={"cost", "judge_model"}) for v in verdicts
            ]
    backend.close()
    differ = sum(a != b for a, b in zip(outputs["batched"], outputs["one pair at a time"],
                                        strict=True))
    base = statistics.median(times["one pair at a time"])
    print(f"{args.method}, {len(pairs)} pairs, {backend.kind} · {backend.model_id}")
    print(f"{'run':<22}{'median s':>10}{'s/pair':>10}{'speed-up':>10}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<22}{median:>10.1f}{median / len(pairs):>10.2f}{base / median:>9.1f}x")
    print(f"verdicts that differ between the two runs: {differ} of {len(pairs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
