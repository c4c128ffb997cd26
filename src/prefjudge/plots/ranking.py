"""PNG plots for ``prefjudge rank`` (forest plot) and ``prefjudge correlate`` (curves)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.plots import plot_label, plot_labels, pyplot


def forest_plot(tables: Mapping[str, pd.DataFrame], path: Path, *, xlabel: str) -> None:
    """Ratings with their intervals, best model on top, one panel per leaderboard.

    Args:
        tables: Panel title → leaderboard table (``model, rating, lower, upper``).
        path: PNG file to write.
        xlabel: Axis label (the scale).
    """
    plt = pyplot()
    heights = [max(2.0, 0.28 * len(t) + 1.0) for t in tables.values()]
    fig, axes = plt.subplots(
        len(tables),
        1,
        figsize=(7.5, sum(heights)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, (title, table) in zip(axes[:, 0], tables.items(), strict=True):
        ordered = table.sort_values("rating").reset_index(drop=True)
        y = np.arange(len(ordered))
        rating = ordered["rating"].to_numpy(dtype=float)
        # a bootstrap interval need not hold the point estimate (a regularised fit): the
        # bar then stops at the point instead of pointing backwards
        lower = np.clip(np.nan_to_num(rating - ordered["lower"].to_numpy(dtype=float)), 0, None)
        upper = np.clip(np.nan_to_num(ordered["upper"].to_numpy(dtype=float) - rating), 0, None)
        ax.errorbar(
            rating,
            y,
            xerr=[lower, upper],
            fmt="o",
            color="tab:blue",
            ecolor="tab:gray",
            capsize=3,
            markersize=4,
        )
        ax.set_yticks(y, plot_labels(ordered["model"]))
        ax.set_title(plot_label(title, 120), fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(xlabel)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def correlation_plot(results: Mapping[str, Any], path: Path) -> None:
    """Correlation with Elo against α, one panel per correlation type.

    Each IF column is one curve with its bootstrap band; the best α is starred.

    Args:
        results: IF column → sweep result (a :class:`prefjudge.ranking.correlate.
            CorrelationResult`: its ``curve`` frame and its ``best`` per correlation type,
            whose keys give the panels).
        path: PNG file to write.
    """
    plt = pyplot()
    kinds = list(next(iter(results.values())).best)
    fig, axes = plt.subplots(1, len(kinds), figsize=(13, 4), sharex=True)
    for ax, kind in zip(axes, kinds, strict=True):
        for label, result in results.items():
            curve = result.curve
            line = ax.plot(
                curve["alpha"], curve[kind], marker="o", markersize=3, label=plot_label(label)
            )
            color = line[0].get_color()
            if curve[f"{kind}_lower"].notna().any():
                ax.fill_between(
                    curve["alpha"],
                    curve[f"{kind}_lower"],
                    curve[f"{kind}_upper"],
                    color=color,
                    alpha=0.15,
                )
            best = result.best[kind]
            if best["alpha"] is not None:
                ax.plot(
                    [best["alpha"]],
                    [best["r"]],
                    marker="*",
                    markersize=14,
                    color=color,
                    markeredgecolor="black",
                )
        ax.set_title(kind.capitalize())
        ax.set_xlabel("α (weight on IF)   composite = α·IF + (1−α)·Func")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("correlation with Elo (95 % bootstrap band)")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
