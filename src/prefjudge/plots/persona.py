"""Figures of the persona stage: where the preferred model flips."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from prefjudge.plots import ci_bars, plot_label, plot_labels, pyplot


def plot_flips(frame: pd.DataFrame, path: Path | str, *, title: str = "") -> None:
    """Grouped bar chart of model_x's win rate per dimension, original vs persona.

    Each dimension gets two bars (original, persona) with their 95 % intervals, a dashed
    line marks 0.5, and flipped dimensions get a bold ``⇄`` label (in red when the flip is
    significant).

    Args:
        frame: Output of :func:`prefjudge.persona.flips.flip_table`.
        path: PNG file to write.
        title: Figure title (default: ``"<model_x> vs <model_y>"``).
    """
    plt = pyplot()

    labels = plot_labels(frame["dimension"])
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(labels) + 2), 4.2))
    x = ci_bars(
        ax,
        frame,
        [
            (f"{p}_win_rate", f"{p}_lo", f"{p}_hi", label)
            for p, label in (("orig", "original"), ("persona", "persona"))
        ],
    )
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    flips = [bool(v) for v in frame["flip"]]
    significant = [bool(v) for v in frame["significant_flip"]]
    ticks = [f"⇄ {name}" if flip else name for name, flip in zip(labels, flips, strict=True)]
    ax.set_xticks(x, ticks, rotation=20, ha="right")
    for tick, flip, sig in zip(ax.get_xticklabels(), flips, significant, strict=True):
        if flip:
            tick.set_fontweight("bold")
            tick.set_color("tab:red" if sig else "black")
    model_x = plot_label(frame["model_x"].iloc[0]) if len(frame) else None
    model_y = plot_label(frame["model_y"].iloc[0]) if len(frame) else None
    ax.set_ylim(0, 1.18)  # headroom above 1.0 for the legend
    ax.set_yticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel(f"win rate of {model_x} (95 % CI)" if model_x else "win rate (95 % CI)")
    default = f"{model_x} vs {model_y}" if model_x else ""
    ax.set_title(plot_label(title, 120) if title else default)
    ax.legend(loc="upper center", ncols=2, fontsize="small", frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
