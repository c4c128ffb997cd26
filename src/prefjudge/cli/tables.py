"""Printing and plotting helpers shared by the CLI commands."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from prefjudge.plots import ci_bars

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
        summary: Output of :func:`prefjudge.scoring.metrics.model_summary`.
        path: PNG file to write.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [("if_instruction", "IF (instruction)"), ("if_task", "IF (task)"),
               ("pass1", "pass@1")]
    models = list(summary["model"])
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(models) + 2), 4))
    x = ci_bars(ax, summary, [(m, f"{m}_lower", f"{m}_upper", label) for m, label in metrics])
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
