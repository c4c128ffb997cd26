"""Benchmark ``prefjudge rank``'s fit + bootstrap against a per-battle baseline.

Target (issue 4): 1,000,000 synthetic battles among 200 models with 1,000 bootstrap
resamples in under 60 s on 2 cores, and at least 10x faster than a per-battle baseline.

* prefjudge: aggregate the battles into pair x outcome counts, fit Bradley-Terry with
  choix I-LSR, then 1,000 multinomial resamples of the counts, each refitted warm-started
  (exactly what ``prefjudge rank`` does, minus file reading and printing).
* baseline: what older public leaderboards did: logistic regression on the unaggregated
  battles (one row per battle, +1/-1 design matrix, ties as two half-weight rows),
  fitted with scipy L-BFGS-B, bootstrap by resampling battles. Running 1,000 such
  resamples would take hours, so the script times --baseline-resamples of them
  (warm-started, like ours), takes the median, and extrapolates to 1,000 resamples
  (the printout says so).

Usage:
    python scripts/bench_rank.py [--battles 1000000] [--models 200] [--resamples 1000]
                                 [--baseline-resamples 5] [--repeats 1] [--cores 2]
                                 [--blas-threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys


def _limit_cores(cores: int, blas_threads: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(blas_threads)
    if hasattr(os, "sched_setaffinity"):
        available = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(available[:cores]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1,
                        help="Repeat the prefjudge timing; the median is reported.")
    parser.add_argument("--cores", type=int, default=2,
                        help="CPU cores the process may run on (sched_setaffinity).")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads. 1 by default: the 200x200 solves gain nothing "
                             "from threads, and busy-waiting BLAS threads slow down many-fold "
                             "when other processes compete for the cores.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _limit_cores(args.cores, args.blas_threads)  # before numpy loads its BLAS

    import time

    import numpy as np
    from scipy import optimize, sparse

    from prefjudge.ranking import bradley_terry as rank

    rng = np.random.default_rng(args.seed)
    n, size = args.models, args.battles
    true_theta = rng.normal(0.0, 1.0, n)
    a = rng.integers(0, n, size)
    b = rng.integers(0, n - 1, size)
    b = b + (b >= a)
    p_a = 1 / (1 + np.exp(-(true_theta[a] - true_theta[b])))
    u = rng.random(size)
    winner = np.where(u < 0.1, 2, np.where(rng.random(size) < p_a, 0, 1))
    names = np.array([f"model-{i:03d}" for i in range(n)], dtype=object)
    model_a, model_b = names[a], names[b]
    print(f"{size:,} battles among {n} models, {(winner == 2).mean():.1%} ties; "
          f"{args.cores} cores; bootstrap {args.resamples} resamples")

    # ---- prefjudge: aggregate + fit + multinomial bootstrap on counts ----
    ours, ours_cpu = [], []
    for _ in range(args.repeats):
        start, cpu = time.perf_counter(), time.process_time()
        counts = rank.aggregate(model_a, model_b, winner)
        board = rank.leaderboard(counts, n_resamples=args.resamples, seed=args.seed)
        ours.append(time.perf_counter() - start)
        ours_cpu.append(time.process_time() - cpu)
    ours_time = float(np.median(ours))
    print(f"prefjudge  (aggregated counts, {args.resamples} resamples): {ours_time:8.1f} s wall, "
          f"{np.median(ours_cpu):.1f} s CPU"
          + (f"  (median of {args.repeats}: {', '.join(f'{t:.1f}' for t in ours)})"
             if args.repeats > 1 else ""))

    # ---- baseline: logistic regression on unaggregated battles ----
    def design(ia: np.ndarray, ib: np.ndarray, outcome: np.ndarray):
        decisive = outcome < 2
        tie = ~decisive
        rows_a = np.concatenate([ia[decisive], ia[tie], ia[tie]])
        rows_b = np.concatenate([ib[decisive], ib[tie], ib[tie]])
        y = np.concatenate([(outcome[decisive] == 0).astype(float),
                            np.ones(tie.sum()), np.zeros(tie.sum())])
        w = np.concatenate([np.ones(decisive.sum()), np.full(2 * tie.sum(), 0.5)])
        m = len(y)
        r = np.arange(m)
        x = sparse.csr_matrix(
            (np.concatenate([np.ones(m), -np.ones(m)]),
             (np.concatenate([r, r]), np.concatenate([rows_a, rows_b]))),
            shape=(m, n),
        )
        return x, y, w

    def logistic_fit(x, y, w, start):
        xt = x.T.tocsr()

        def loss(theta):
            z = x @ theta
            value = w @ (np.logaddexp(0, z) - y * z) + 1e-8 * theta @ theta
            grad = xt @ (w * (1 / (1 + np.exp(-z)) - y)) + 2e-8 * theta
            return value, grad

        res = optimize.minimize(loss, start, jac=True, method="L-BFGS-B",
                                options={"maxiter": 10_000, "ftol": 1e-12, "gtol": 1e-6})
        return res.x - res.x.mean()

    start = time.perf_counter()
    x, y, w = design(a, b, winner)
    theta_lr = logistic_fit(x, y, w, np.zeros(n))
    point_time = time.perf_counter() - start
    per_resample, per_resample_cpu = [], []
    boot_rng = np.random.default_rng(args.seed)
    for _ in range(args.baseline_resamples):
        t0, c0 = time.perf_counter(), time.process_time()
        pick = boot_rng.integers(0, size, size)
        xb, yb, wb = design(a[pick], b[pick], winner[pick])
        logistic_fit(xb, yb, wb, theta_lr)
        per_resample.append(time.perf_counter() - t0)
        per_resample_cpu.append(time.process_time() - c0)
    median_resample = float(np.median(per_resample))
    baseline_time = point_time + args.resamples * median_resample
    baseline_cpu = args.resamples * float(np.median(per_resample_cpu))
    print(f"baseline   (per-battle logistic regression): point fit {point_time:.1f} s, "
          f"median {median_resample:.2f} s wall ({np.median(per_resample_cpu):.2f} s CPU) per "
          f"resample over {args.baseline_resamples} timed resamples")
    print(f"baseline   extrapolated to {args.resamples} resamples:        "
          f"{baseline_time:8.1f} s  (extrapolated, not run)")
    ratio = baseline_time / ours_time
    print(f"speed-up   baseline / prefjudge: {ratio:.0f}x wall "
          f"({baseline_cpu / float(np.median(ours_cpu)):.0f}x CPU)")

    # Same estimator: the two point fits agree (up to the baseline's tiny L2 term).
    order = np.argsort([int(m.split("-")[1]) for m in board.models])
    gap = np.abs(board.theta[order] - theta_lr).max() * rank.ELO_PER_LOGIT
    print(f"check      point estimates agree within {gap:.3f} Elo points; "
          f"degenerate resamples: {board.degenerate_resamples}")
    ok = ours_time < 60 and ratio >= 10
    print("PASS" if ok else "FAIL", "(target: < 60 s and >= 10x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
