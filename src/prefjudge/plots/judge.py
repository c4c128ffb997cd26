"""Figures of the judge stage: agreement of each method with human labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from prefjudge.plots import ci_bars, pyplot


def plot_methods(frame: pd.DataFrame, path: Path | str) -> None:
    """Bar chart of accuracy and macro-F1 per method with their 95 % CIs.

    Args:
        frame: Output of :func:`compare_methods`.
        path: PNG file to write.
    """
    plt = pyplot()

    metrics = [
        ("accuracy", "acc_lo", "acc_hi", "accuracy"),
        ("macro_f1", "f1_lo", "f1_hi", "macro-F1"),
    ]
    methods = [str(m) for m in frame.index]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(methods) + 2), 4))
    x = ci_bars(ax, frame, metrics)
    ax.set_xticks(x, methods, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("agreement with humans (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
