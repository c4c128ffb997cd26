"""Benchmark judging the suggested pairs in rounds against judging all pairs uniformly.

Target (issue 16): on a simulation with known strengths, ``prefjudge``'s suggested pairs
(:mod:`prefjudge.ranking.suggest`) reach the rank accuracy of all-pairs judging with
fewer judgments. How many fewer is bounded: one judgment carries at most the Fisher
information p (1 − p) = 1/4 (an even pair), and all-pairs' average at Elo sd 200 is
already 0.17 (0.68 of that), so no allocation reaches all-pairs' precision with much
less than about two thirds of its judgments; with a wider spread (Elo sd 400: 0.43)
the bound, and the savings, grow.

Simulation: 200 models with true Elo ratings drawn from Normal(0, 200) (seeded); a
judgment of models i and j is won by i with the Bradley–Terry probability
``1 / (1 + 10^((R_j − R_i) / 400))`` (no ties). Strategies, each judged model pair
drawn and its outcome simulated one judgment at a time:

* all-pairs: round robin over all 19,900 pairs in a random order, repeated (after
  ``--robins`` robins every pair was judged that many times);
* random: pairs drawn uniformly at random, with replacement;
* suggest: a seed ring (every model judged against two random others: 200 judgments),
  then rounds, each growing the judgments by ``--growth`` (10 %): fit Bradley–Terry on
  the battles so far (choix I-LSR, as ``prefjudge rank``), take the Laplace uncertainty
  (inverse Fisher information of the fit with a weak N(0, 2²) prior on each
  log-strength: one 200 x 200 inverse, no bootstrap), and spend the round's judgments
  with :func:`prefjudge.ranking.suggest.plan_round`.

Accuracy: Kendall τ between the fitted ratings and the true ratings, median over
``--seeds`` simulations. The fit is maximum likelihood (``prefjudge rank``'s), regularised
with alpha = 0.01 only while some model never won or never lost
(:func:`prefjudge.ranking.suggest.point_fit`): a regulariser such as I-LSR's alpha acts
like a few even results between *every* two models, which pulls together models that
the suggested rounds never compared — it would judge the design, not the data.

The script prints τ per budget for the three strategies, and the judgments each needs
to reach the τ that all-pairs reaches at each budget (interpolated linearly between
measured budgets), as a ratio of all-pairs' judgments; the last line is the headline:
all-pairs after ``--robins`` robins.

Usage:
    python scripts/bench_suggest.py [--models 200] [--elo-sd 200] [--seeds 5]
        [--robins 1] [--growth 0.1] [--seed 0] [--quick] [--cores 2]

About 80 s on 2 cores with the defaults; ``--quick`` (2 simulations) about 30 s.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass, field

ELO_PER_LOGIT = 400.0 / math.log(10.0)


def _limit_cores(cores: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if hasattr(os, "sched_setaffinity"):
        available = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(available[:cores]))


@dataclass
class Curve:
    """Kendall τ after a number of judgments (one simulation of one strategy)."""

    budgets: list[int] = field(default_factory=list)
    taus: list[float] = field(default_factory=list)


class Simulation:
    """Models with known strengths; judged pairs accumulate as battles."""

    def __init__(self, n_models: int, elo_sd: float, seed: int):
        import numpy as np

        self.rng = np.random.default_rng(seed)
        self.theta = self.rng.normal(0.0, elo_sd / ELO_PER_LOGIT, n_models)
        self.names = [f"m{k:04d}" for k in range(n_models)]
        self.first: list[int] = []
        self.second: list[int] = []
        self.won: list[int] = []  # 0: first won, 1: second won

    def judge(self, first, second) -> None:
        """Simulate one judgment per (first, second) pair (arrays of model indices)."""
        import numpy as np

        first, second = np.asarray(first), np.asarray(second)
        p_first = 1.0 / (1.0 + np.exp(self.theta[second] - self.theta[first]))
        self.first += first.tolist()
        self.second += second.tolist()
        self.won += (self.rng.random(len(first)) >= p_first).astype(int).tolist()

    @property
    def judged(self) -> int:
        """Judgments so far."""
        return len(self.won)

    def counts(self):
        """The battles so far, aggregated over every model."""
        from prefjudge.ranking import bradley_terry as bt
        from prefjudge.ranking import suggest

        names = [self.names[k] for k in self.first], [self.names[k] for k in self.second]
        return suggest.with_models(bt.aggregate(*names, self.won), self.names)

    def tau(self) -> float:
        """Kendall τ of the fitted strengths against the true ones."""
        from scipy.stats import kendalltau

        from prefjudge.ranking import suggest

        fit = suggest.point_fit(self.counts(), "half", 0.0)
        return float(kendalltau(fit.theta, self.theta).statistic)


def all_pairs(sim: Simulation, budgets: list[int]) -> Curve:
    """Round robins over every pair (each in a fresh random order)."""
    import numpy as np

    n = len(sim.theta)
    first, second = np.triu_indices(n, k=1)
    curve = Curve()
    order = np.empty(0, dtype=np.int64)
    for budget in budgets:
        need = budget - sim.judged
        while len(order) < need:
            order = np.concatenate([order, sim.rng.permutation(len(first))])
        take, order = order[:need], order[need:]
        sim.judge(first[take], second[take])
        curve.budgets.append(budget)
        curve.taus.append(sim.tau())
    return curve


def random_pairs(sim: Simulation, budgets: list[int]) -> Curve:
    """Pairs drawn uniformly at random, with replacement."""

    n = len(sim.theta)
    curve = Curve()
    for budget in budgets:
        need = budget - sim.judged
        a = sim.rng.integers(0, n, need)
        b = (a + sim.rng.integers(1, n, need)) % n  # any other model, uniformly
        sim.judge(a, b)
        curve.budgets.append(budget)
        curve.taus.append(sim.tau())
    return curve


def schedule(budgets: list[int], start: int, growth: float) -> list[int]:
    """Round ends of the suggest strategy: +growth per round, landing on every budget."""
    ends, total = [], start
    for budget in budgets:
        while total < budget:
            total = min(budget, max(total + 50, math.ceil(total * (1 + growth))))
            ends.append(total)
    return ends


def suggested(sim: Simulation, ends: list[int]) -> tuple[Curve, float]:
    """A seed ring, then rounds of suggested pairs; τ at every round end.

    Returns:
        The curve and the seconds spent choosing pairs (fit + uncertainty + plan).
    """
    import numpy as np

    from prefjudge.ranking import suggest

    n = len(sim.theta)
    ring = sim.rng.permutation(n)
    sim.judge(ring, np.roll(ring, 1))
    index = {name: k for k, name in enumerate(sim.names)}
    curve, planning = Curve(), 0.0
    for end in ends:
        started = time.perf_counter()
        counts = sim.counts()
        fit = suggest.point_fit(counts, "half", 0.0)
        belief = suggest.laplace_belief(counts, fit.theta)
        plan = suggest.plan_round(counts, belief, end - sim.judged)
        planning += time.perf_counter() - started
        pairs = [(index[a], index[b]) for (a, b), k in plan.items() for _ in range(k)]
        sim.judge([a for a, _ in pairs], [b for _, b in pairs])
        curve.budgets.append(end)
        curve.taus.append(sim.tau())
    return curve, planning


def budget_to_reach(curve_budgets: list[int], taus: list[float], target: float) -> float | None:
    """Judgments at which a (median) curve first reaches ``target``, interpolated."""
    previous = None
    for budget, tau in zip(curve_budgets, taus, strict=True):
        if tau >= target:
            if previous is None or previous[1] >= tau:
                return float(budget)
            b0, t0 = previous
            return b0 + (target - t0) / (tau - t0) * (budget - b0)
        previous = (budget, tau)
    return None


def main() -> int:
    """Run the simulations and print the curve and the savings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--elo-sd", type=float, default=200.0)
    parser.add_argument("--seeds", type=int, default=5, help="Simulations (median τ).")
    parser.add_argument("--robins", type=int, default=1,
                        help="All-pairs budget in full round robins (the τ to match).")
    parser.add_argument("--growth", type=float, default=0.1,
                        help="Judgments each suggest round adds, as a share of those so far.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="2 simulations (about half a minute on 2 cores).")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if args.quick:
        args.seeds = 2
    _limit_cores(args.cores)

    import numpy as np
    from rich.console import Console
    from rich.table import Table

    console = Console()
    started = time.perf_counter()
    n_pairs = args.models * (args.models - 1) // 2
    full = args.robins * n_pairs
    budgets = sorted({b for b in (500, 1000, 2000, 3000, 5000, 7500, 10000, 15000)
                      if b < full} | {n_pairs * r for r in range(1, args.robins + 1)})
    ends = schedule(budgets, args.models, args.growth)
    curves: dict[str, list[Curve]] = {"all-pairs": [], "random": [], "suggest": []}
    planning = []
    for k in range(args.seeds):
        seed = args.seed + k
        curves["all-pairs"].append(all_pairs(Simulation(args.models, args.elo_sd, seed), budgets))
        curves["random"].append(random_pairs(Simulation(args.models, args.elo_sd, seed), budgets))
        curve, spent = suggested(Simulation(args.models, args.elo_sd, seed), ends)
        curves["suggest"].append(curve)
        planning.append(spent)
        console.print(f"simulation {k + 1}/{args.seeds} done "
                      f"({time.perf_counter() - started:.0f} s)")

    median = {name: np.median([c.taus for c in runs], axis=0).tolist()
              for name, runs in curves.items()}
    at_budget = dict(zip(ends, median["suggest"], strict=True))
    table = Table(title=f"Kendall τ to the true order — {args.models} models, Elo sd "
                        f"{args.elo_sd:g}, median of {args.seeds} simulations")
    for column in ("judgments", "per pair", "all-pairs", "random", "suggest"):
        table.add_column(column, justify="right")
    for i, budget in enumerate(budgets):
        table.add_row(f"{budget:,}", f"{budget / n_pairs:.2f}",
                      f"{median['all-pairs'][i]:.4f}", f"{median['random'][i]:.4f}",
                      f"{at_budget[budget]:.4f}")
    console.print(table)

    saved = Table(title="Judgments needed to reach all-pairs' τ (ratio to all-pairs)")
    for column in ("all-pairs judgments", "τ reached", "suggest needs", "suggest saves",
                   "random needs"):
        saved.add_column(column, justify="right")
    for i, budget in enumerate(budgets):
        if budget < 5000:
            continue
        target = median["all-pairs"][i]
        cells = []
        for name, grid in (("suggest", ends), ("random", budgets)):
            needed = budget_to_reach(grid, median[name], target)
            cells.append(None if needed is None else needed)
        suggest_needs, random_needs = cells
        saved.add_row(
            f"{budget:,}", f"{target:.4f}",
            "not reached" if suggest_needs is None
            else f"{suggest_needs:,.0f} ({suggest_needs / budget:.2f}x)",
            "–" if suggest_needs is None else f"{budget - suggest_needs:,.0f} "
            f"({1 - suggest_needs / budget:.0%})",
            "not reached" if random_needs is None
            else f"{random_needs:,.0f} ({random_needs / budget:.2f}x)")
    console.print(saved)
    target = median["all-pairs"][-1]
    needed = budget_to_reach(ends, median["suggest"], target)
    headline = (f"does not reach it within {ends[-1]:,} judgments" if needed is None else
                f"reaches it after {needed:,.0f} judgments: {needed / full:.2f}x all-pairs' "
                f"judgments, {full - needed:,.0f} saved ({1 - needed / full:.0%})")
    console.print(f"\nall-pairs after {args.robins} robin(s) ({full:,} judgments): "
                  f"τ = {target:.4f}; suggest {headline}")
    console.print(f"suggest's choosing (fit + Laplace + plan) took {np.median(planning):.1f} s "
                  f"per simulation ({len(ends)} rounds); total "
                  f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
