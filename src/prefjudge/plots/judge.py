"""Figures of the judge stage: agreement of each method with human labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from prefjudge.plots import ci_bars, plot_labels, pyplot


def plot_methods(frame: pd.DataFrame, path: Path | str) -> None:
    """Bar chart of accuracy, strict accuracy and macro-F1 per method with their 95 % CIs.

    *accuracy* counts every pair (a tie or an error is half right), *strict accuracy* the
    pairs judged (a tie is wrong): the same two figures, under the same names, as the
    ``judge-eval`` tables.

    Args:
        frame: Output of :func:`compare_methods`.
        path: PNG file to write.
    """
    plt = pyplot()

    metrics = [  # the tables' two accuracies, under the tables' names
        ("accuracy_all_half", "all_lo", "all_hi", "accuracy"),
        ("accuracy", "acc_lo", "acc_hi", "strict accuracy"),
        ("macro_f1", "f1_lo", "f1_hi", "macro-F1"),
    ]
    methods = plot_labels(frame.index)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(methods) + 2), 4))
    x = ci_bars(ax, frame, metrics)
    ax.set_xticks(x, methods, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("agreement with humans (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
