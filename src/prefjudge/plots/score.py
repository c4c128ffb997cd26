"""Figures of the scoring stage."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from prefjudge.plots import ci_bars, plot_labels, pyplot


def save_summary_plot(summary: pd.DataFrame, path: Path) -> None:
    """Bar chart of IF (instruction, task) and pass@1 per model with 95 % CIs.

    EvalPlus's base and plus pass@1 get bars of their own when some model has them
    (HumanEval+/MBPP+ samples).

    Args:
        summary: Output of :func:`prefjudge.scoring.metrics.model_summary`.
        path: PNG file to write.
    """
    plt = pyplot()

    metrics = [
        ("if_instruction", "IF (instruction)"),
        ("if_task", "IF (task)"),
        ("pass1", "pass@1"),
    ]
    metrics += [(name, label) for name, label in (("base_pass1", "base pass@1"),
                                                  ("plus_pass1", "plus pass@1"))
                if name in summary.columns and summary[name].notna().any()]
    models = plot_labels(summary["model"])
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(models) + 2), 4))
    x = ci_bars(ax, summary, [(m, f"{m}_lower", f"{m}_upper", label) for m, label in metrics])
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
