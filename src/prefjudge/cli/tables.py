"""Printing and plotting helpers shared by the CLI commands."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

stdout = Console()
if not stdout.is_terminal:  # logs and pipes: don't wrap tables at 80 columns
    stdout.width = 160


def print_frame(frame: pd.DataFrame, *, title: str = "") -> None:
    """Print a DataFrame as a rich table on stdout.

    Args:
        frame: Rows to show; floats are shown with three decimals.
        title: Table title.
    """
    table = Table(title=title, show_lines=False)
    for column in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[column])
        table.add_column(str(column), justify="right" if numeric else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    stdout.print(table)


def save_summary_plot(summary: pd.DataFrame, path: Path) -> None:
    """Bar chart of IF (instruction, task) and pass@1 per model with 95 % CIs.

    Args:
        summary: Output of :func:`prefjudge.metrics.model_summary`.
        path: PNG file to write.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metrics = [("if_instruction", "IF (instruction)"), ("if_task", "IF (task)"),
               ("pass1", "pass@1")]
    models = list(summary["model"])
    x = np.arange(len(models))
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(models) + 2), 4))
    for offset, (name, label) in enumerate(metrics):
        values = summary[name].to_numpy(dtype=float)
        lower = np.nan_to_num(values - summary[f"{name}_lower"].to_numpy(dtype=float))
        upper = np.nan_to_num(summary[f"{name}_upper"].to_numpy(dtype=float) - values)
        # yerr as plain lists: matplotlib 3.11 warns on a 2x1 numpy array (one model)
        ax.bar(x + (offset - 1) * width, np.nan_to_num(values), width, label=label,
               yerr=[lower.tolist(), upper.tolist()], capsize=3)
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
